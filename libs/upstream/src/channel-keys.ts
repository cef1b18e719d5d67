import type { ChannelRow, ChannelTarget } from './adapter';
import { channelTarget } from './adapter';
import { selectChannel } from './channel-selector';

/** A channel's or a key's health as channel choice reads it (structurally @gmg/db's HealthRecord). */
export interface HealthView {
  status: string;
  coolingUntil: Date | null;
}

/** One key of a channel with its secret (structurally @gmg/db's ChannelKeySecret). */
export interface KeyCandidate extends HealthView {
  id: string;
  weight: number;
  secret: string;
  /** The secret's last characters, for answers (never the secret). */
  hint?: string;
}

/** A channel with its keys and health, as read for a call (structurally @gmg/db's ChannelWithSecret). */
export interface KeyedChannel extends ChannelRow {
  health?: HealthView;
  /** Empty: the channel's own `apiKey` is its one key. */
  keys: readonly KeyCandidate[];
}

/**
 * A key takes traffic when `active`, or `cooling` past its time (a vendor's rate limit said when: no trial is needed,
 * the next call is one; its success marks the key active again). `disabled` keys come back through the probe only.
 */
export const keyUsable = (k: HealthView, now = Date.now()): boolean =>
  k.status === 'active' || (k.status === 'cooling' && k.coolingUntil !== null && k.coolingUntil.getTime() <= now);

/**
 * A channel takes traffic when its own health is `active` (a `cooling` or `disabled` channel comes back through the
 * probe's single trial) and it has a usable key (or no key list: its one `apiKey`).
 */
export const channelUsable = (c: Pick<KeyedChannel, 'health' | 'keys'>, now = Date.now()): boolean =>
  (c.health?.status ?? 'active') === 'active' && (c.keys.length === 0 || c.keys.some((k) => keyUsable(k, now)));

/**
 * The key of one call among the channel's usable ones, by weight (weight 0: standby, used only when no positive-weight
 * key is usable; selectChannel's rule). Undefined when the channel has keys and none is usable; null when it has no
 * key list (its one `apiKey` is used).
 */
export function pickKey<K extends KeyCandidate>(
  keys: readonly K[],
  opts: { exclude?: Iterable<string>; random?: () => number; now?: number } = {},
): K | null | undefined {
  if (keys.length === 0) return null;
  const now = opts.now ?? Date.now();
  const usable = keys.filter((k) => keyUsable(k, now)).map((k) => ({ ...k, priority: 0 }));
  const picked = selectChannel(usable, { exclude: opts.exclude, random: opts.random });
  return picked ? keys.find((k) => k.id === picked.id) : undefined;
}

/** What adapters use for a call with this key (null: the channel's own `apiKey`). */
export const keyedTarget = (c: ChannelRow, key: Pick<KeyCandidate, 'id' | 'secret'> | null): ChannelTarget =>
  key ? { ...channelTarget({ ...c, apiKey: key.secret }), keyId: key.id } : channelTarget(c);

/**
 * The key a task's later calls (polls, cancel, downloads) use: the one that submitted it, while the channel still
 * has it and it is not disabled; else another usable key of the channel (a vendor's tasks belong to the account, and
 * a channel's keys are one account's), else the channel's own `apiKey`.
 */
export function taskKey<K extends KeyCandidate>(keys: readonly K[], keyId: string | null | undefined): K | null {
  const own = keyId ? keys.find((k) => k.id === keyId) : undefined;
  if (own && own.status !== 'disabled') return own;
  return pickKey(keys) ?? own ?? keys[0] ?? null;
}
