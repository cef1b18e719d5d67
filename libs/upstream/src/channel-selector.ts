/** The fields channel choice needs (a ChannelEntity fits). */
export interface ChannelCandidate {
  id: string;
  priority: number;
  weight: number;
}

/** Circuit state as the selector sees it (CircuitBreaker implements it). */
export interface ChannelGate {
  /** False while the channel's circuit is open (or its half-open trial is taken). Does not change state. */
  isAvailable(channelId: string): boolean;
  /** Claims the channel for one call: in half-open state only the first caller gets it. */
  tryAcquire(channelId: string): boolean;
}

export interface SelectOptions {
  /** Channels already tried for this task. */
  exclude?: Iterable<string>;
  /** True when the channel's circuit is open: skipped. */
  isOpen?: (channelId: string) => boolean;
  /** Injectable for tests; returns [0, 1). */
  random?: () => number;
}

/**
 * Picks one channel, or undefined when none is eligible.
 * - Excluded ids and open circuits are skipped.
 * - Highest priority first; among equal priorities, weighted random by `weight`.
 * - Weight 0 means standby: such a channel is used only when no channel with a positive weight is eligible at
 *   any priority (then the highest-priority standby channels share traffic evenly). Negative weights count as 0.
 * Pure: same inputs and random values, same choice.
 */
export function selectChannel<T extends ChannelCandidate>(candidates: readonly T[], opts: SelectOptions = {}): T | undefined {
  const excluded = new Set(opts.exclude ?? []);
  const random = opts.random ?? Math.random;
  const eligible = candidates.filter((c) => !excluded.has(c.id) && !(opts.isOpen?.(c.id) ?? false));
  if (eligible.length === 0) return undefined;
  const active = eligible.filter((c) => weightOf(c) > 0);
  const pool = active.length > 0 ? active : eligible;
  const top = Math.max(...pool.map((c) => c.priority));
  const tier = pool.filter((c) => c.priority === top);
  if (active.length === 0) return tier[Math.min(tier.length - 1, Math.floor(random() * tier.length))];
  const total = tier.reduce((sum, c) => sum + weightOf(c), 0);
  let point = random() * total;
  for (const c of tier) {
    point -= weightOf(c);
    if (point < 0) return c;
  }
  return tier[tier.length - 1];
}

const weightOf = (c: ChannelCandidate): number => (Number.isFinite(c.weight) && c.weight > 0 ? c.weight : 0);

/**
 * selectChannel plus the circuit breaker's half-open rule: a channel whose single trial call is taken by another
 * task is skipped and the choice made again, so at most one call probes a recovering channel.
 */
export function pickChannel<T extends ChannelCandidate>(candidates: readonly T[], gate: ChannelGate, opts: Omit<SelectOptions, 'isOpen'> = {}): T | undefined {
  const exclude = new Set(opts.exclude ?? []);
  for (let i = 0; i < candidates.length; i++) {
    const c = selectChannel(candidates, { exclude, random: opts.random, isOpen: (id) => !gate.isAvailable(id) });
    if (!c) return undefined;
    if (gate.tryAcquire(c.id)) return c;
    exclude.add(c.id);
  }
  return undefined;
}
