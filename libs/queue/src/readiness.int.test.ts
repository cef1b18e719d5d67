/**
 * Issue 38: readiness is this process's own connection, never the health of every Redis primary. On a real 3-master
 * cluster with one primary frozen (SIGSTOP: its connections stay open and nothing answers, as during a failover
 * before the node timeout or on a black-holed path), the shared readiness rule still answers ready (the other
 * primaries answer this process's PING) and reports the frozen primary's memory check as degraded — before,
 * readiness asked every primary, and one shard down took every replica of every Deployment out of its Service.
 */
import { startLocalRedisCluster, type LocalRedisCluster } from '@gmg/testing';
import { redisTargetOf } from '@gmg/config';
import { createRedis, redisReady, type Redis } from './connection';
import { evaluateReadiness } from './readiness';
import { checkRedisMemory, checkRedisReady } from './redis-memory';

let cluster: LocalRedisCluster;
let redis: Redis;

beforeAll(async () => {
  cluster = await startLocalRedisCluster({ masters: 3 });
  redis = createRedis(redisTargetOf({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: cluster.nodesEnv }), 'client');
  await redisReady(redis);
}, 120_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

const readiness = () =>
  evaluateReadiness({ checks: { redis: () => checkRedisReady(redis) }, degradable: { redis_memory: () => checkRedisMemory(redis) }, timeoutMs: 1500 });

describe('readiness on a Redis Cluster with one primary down (issue 38)', () => {
  it('stays ready on its own connection and reports the frozen primary as degraded, not as a reason to leave the Service', async () => {
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ready', checks: { redis: 'ok', redis_memory: 'ok' } } });
    const frozen = cluster.nodes[1]!.proc.child;
    frozen.kill('SIGSTOP');
    let r: Awaited<ReturnType<typeof readiness>>;
    try {
      r = await readiness();
    } finally {
      frozen.kill('SIGCONT');
    }
    expect(r.status).toBe(200);
    expect(r.body.checks.redis).toBe('ok');
    expect(r.body.degraded).toEqual(['redis_memory']);
    expect(r.body.checks.redis_memory).toBe('timeout');
  }, 60_000);
});
