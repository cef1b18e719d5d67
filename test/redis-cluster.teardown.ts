/** Stops the cluster test/redis-cluster.setup.ts started (if it did). */
import type { LocalRedisCluster } from '@gmg/testing';

const g = globalThis as { gmgTestCluster?: LocalRedisCluster };

/** @public (jest globalTeardown) */
export default async function teardown(): Promise<void> {
  if (!g.gmgTestCluster) return;
  await g.gmgTestCluster.stop();
  delete process.env.TEST_REDIS_CLUSTER_NODES;
  g.gmgTestCluster = undefined;
}
