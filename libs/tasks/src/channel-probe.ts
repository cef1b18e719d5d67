import type { ChannelHealthRepository, ChannelRepository, ProbeClaim } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { keyUsable, keyedTarget, trialCall, type TrialDeps, type TrialResult } from '@gmg/upstream';

export interface ChannelProbeDeps {
  health: Pick<ChannelHealthRepository, 'claimDue' | 'trialDone' | 'keyRefused'>;
  channels: Pick<ChannelRepository, 'getWithSecret'>;
  trial: TrialDeps;
  logger: Pick<Logger, 'info' | 'warn'>;
}

export interface ChannelProbeOptions {
  /** A claimed trial is the claimer's for this long (a crashed prober's claim frees itself after it). Default 60 s. */
  leaseMs?: number;
  /** Trials one tick runs at most. Default 20. */
  maxPerTick?: number;
}

/**
 * The background probe (issue 37 item 2): brings set-aside keys and channels back without an operator. Each tick
 * claims due trials one by one from Postgres (ChannelHealthRepository.claimDue: one trial per key or channel at a
 * time across the fleet, however many workers run this) and makes one real, minimal call (trialCall) — a disabled
 * key with that key (the last key of a channel whose every key was refused included), a cooling or disabled channel
 * with its best key. Its success makes the row active again; its failure pushes the next trial one back-off step out.
 */
export class ChannelProbe {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private readonly leaseMs: number;
  private readonly maxPerTick: number;

  constructor(
    private readonly d: ChannelProbeDeps,
    opts: ChannelProbeOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.maxPerTick = opts.maxPerTick ?? 20;
  }

  /** Runs due trials; answers how many ran. */
  async tick(): Promise<number> {
    let n = 0;
    for (; n < this.maxPerTick; n++) {
      const claim = await this.d.health.claimDue(this.leaseMs);
      if (!claim) break;
      await this.tryOne(claim);
    }
    return n;
  }

  private async tryOne(claim: ProbeClaim): Promise<void> {
    const ch = await this.d.channels.getWithSecret(claim.channelId);
    if (!ch) return;
    const key = claim.scope === 'key' ? ch.keys.find((k) => k.id === claim.id) : (ch.keys.find((k) => keyUsable(k)) ?? ch.keys[0] ?? null);
    if (key === undefined) return;
    const r: TrialResult = await trialCall(this.d.trial, keyedTarget(ch, key), { model: ch.models?.[0], versionHeader: ch.versionHeader });
    const ok = r.status === 'ok';
    // a channel's trial refused for its key: that key is set aside (the channel's next trial takes another)
    if (claim.scope === 'channel' && r.status === 'refused' && key) await this.d.health.keyRefused(key.id, r.message ?? 'refused');
    await this.d.health.trialDone(claim, ok, r.message);
    const what = { channel: ch.name, scope: claim.scope, key: key?.id, status: r.status, latencyMs: r.latencyMs, err: r.message };
    if (ok) this.d.logger.info(what, 'channel probe: back in use');
    else this.d.logger.warn(what, 'channel probe: still failing');
  }

  /** Ticks every `intervalMs` (one tick at a time) until `stop`. A failed tick is logged and the next one runs. */
  start(intervalMs: number): void {
    const loop = () => {
      this.running = this.tick()
        .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message }, 'channel probe tick failed'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(loop, intervalMs);
        });
    };
    this.timer = setTimeout(loop, intervalMs);
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t) clearTimeout(t);
    await this.running;
  }
}
