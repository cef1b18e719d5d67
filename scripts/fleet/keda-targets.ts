/**
 * The KEDA targets of the pools' poll path (issue 38 item 1), derived rather than measured on a simulator that
 * answers at once: one worker replica runs WORKER_CONCURRENCY poll steps at a time, each holding its slot for one
 * upstream round trip L, so it makes C ÷ L polls a second; a task on the poll path asks for one poll per cadence T
 * (the mean of its model's poll interval, times POLL_INTERVAL_SCALE). A replica therefore keeps C × T ÷ L polling
 * tasks on time at full use; the target is that at TARGET_POLL_UTILISATION, so lateness stays flat below it.
 * docs/operations.md ("Scaling a pool") quotes the numbers; test/infra/deploy-agreement.test.ts keeps every
 * ScaledObject's poll-path threshold equal to pollPathTarget() of the values its Deployment sets.
 */
import { listModels, type ModelContract, type Pool } from '@gmg/contracts';
import { DEFAULT_POLL_INTERVAL_MS } from '@gmg/tasks';

/**
 * The upstream poll round trip the targets assume, per pool, in seconds: the p95 of
 * `gmg_upstream_request_duration_seconds{operation="poll"}` a production vendor answers in (about 300 ms,
 * docs/operations.md). Re-derive the targets when the measured p95 moves: a slower upstream means fewer tasks per
 * replica. The lateness trigger scales a pool out meanwhile.
 */
export const POLL_RTT_SECONDS: Readonly<Record<Pool, number>> = Object.freeze({ image: 0.3, video: 0.3, artgen: 0.3, avatar: 0.3 });

/** Share of a replica's poll slots the target fills: the rest absorbs bursts and the RTT's tail. */
export const TARGET_POLL_UTILISATION = 0.7;

/**
 * The shortest mean poll cadence among a pool's models, in seconds (libs/tasks step-timing.ts draws each delay
 * uniformly in the contract's [min, max]): the fastest-polling model sets the target, so a pool of only that model
 * is still sized right. A pool whose tasks name no model with a contract (avatar) polls at the default cadence.
 */
export function poolCadenceSeconds(pool: Pool, pollIntervalScale: number): number {
  const contracts = listModels()
    .filter((m) => m.pool === pool)
    .flatMap((m): ModelContract[] => [...(m.contract ? [m.contract] : []), ...Object.values(m.actionContracts ?? {})]);
  const ranges = contracts.length > 0 ? contracts.map((c) => c.pollIntervalMs) : [DEFAULT_POLL_INTERVAL_MS];
  const meanMs = Math.min(...ranges.map((r) => (r.min + r.max) / 2));
  return (meanMs * pollIntervalScale) / 1000;
}

/** Polling tasks one replica keeps on time: ⌊utilisation × concurrency × cadence ÷ round trip⌋ (at least 1). */
export function pollPathTarget(o: { concurrency: number; cadenceSeconds: number; rttSeconds: number; utilisation?: number }): number {
  return Math.max(1, Math.floor(((o.utilisation ?? TARGET_POLL_UTILISATION) * o.concurrency * o.cadenceSeconds) / o.rttSeconds));
}
