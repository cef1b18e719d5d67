/**
 * FLEET_FAULTS=1: kill -9 one edge, one worker replica, one billing replica and one Redis master at chosen points of
 * the run (20 %, 35 %, 50 %, 65 % of the load phase). A killed service is replaced by a new process with the same
 * environment (what a Deployment does); a killed Redis master is failed over by its replica and then restarted (it
 * rejoins as a replica). Time to heal: from the kill to the replacement answering its readiness probe (services) or
 * to the cluster serving all 16384 slots again (Redis).
 */
import { waitFor } from '@gmg/testing';
import type { RedisTopology } from './infra';
import type { FleetServices } from './services';

export interface FaultResult {
  what: string;
  atS: number;
  healMs: number;
  note: string;
}

export interface Fault {
  at: number;
  what: string;
  run(): Promise<{ healMs: number; note: string }>;
}

export function plannedFaults(services: FleetServices, redis: RedisTopology, loadMs: number): Fault[] {
  const replica = (id: string) => services.replicas.find((r) => r.id === id)!;
  const service =
    (id: string, note: string): (() => Promise<{ healMs: number; note: string }>) =>
    async () => ({ healMs: await services.killAndReplace(replica(id)), note });
  return [
    { at: 0.2 * loadMs, what: 'kill -9 api-edge#1', run: service('api-edge#1', 'clients retried on api-edge#2 (Idempotency-Key on image/video submits)') },
    {
      at: 0.35 * loadMs,
      what: 'kill -9 worker-image#1',
      run: service('worker-image#1', 'its active jobs stall until their lock expires (WORKER_LOCK_MS), then worker-image#2 takes them'),
    },
    {
      at: 0.5 * loadMs,
      what: 'kill -9 billing#1',
      run: service('billing#1', 'settlements and webhooks in flight on it: redelivered by BullMQ / the billing sweeper'),
    },
    {
      at: 0.65 * loadMs,
      what: redis.kind === 'cluster' ? 'kill -9 a Redis master' : 'kill -9 the Redis server',
      run: async () => {
        const masters = await redis.masters();
        const victim = masters[0];
        if (!victim) return { healMs: NaN, note: 'no master found' };
        const t0 = Date.now();
        await victim.proc.signal('SIGKILL');
        if (redis.kind === 'standalone') await redis.restart(victim);
        const before = masters.length;
        // healed: as many masters as before among the live nodes (a replica was promoted) and every slot served
        await waitFor(async () => ((await redis.masters()).length >= before && (await redis.healthy())) || undefined, {
          timeoutMs: 60_000,
          intervalMs: 100,
          what: 'redis failed over after the kill',
        });
        const healMs = Date.now() - t0;
        if (redis.kind === 'cluster') await redis.restart(victim);
        return {
          healMs,
          note:
            redis.kind === 'cluster'
              ? `master :${victim.port} failed over to its replica, then restarted as a replica`
              : 'standalone: restarted empty (no persistence); the reconciler and sweepers rebuild from Postgres',
        };
      },
    },
  ];
}
