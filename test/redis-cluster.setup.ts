/**
 * Jest global set-up of the int and e2e projects. TEST_REDIS_CLUSTER=1: starts a local 3-master Redis Cluster on
 * free ports (libs/testing startLocalRedisCluster) and publishes it as TEST_REDIS_CLUSTER_NODES, which
 * TEST_REDIS_TARGET and startService honour; otherwise nothing (the standalone TEST_REDIS_URL, as always).
 */
import { startLocalRedisCluster, type LocalRedisCluster } from '@gmg/testing';

const g = globalThis as { gmgTestCluster?: LocalRedisCluster };

/** @public (jest globalSetup) */
export default async function setup(): Promise<void> {
  if (process.env.TEST_REDIS_CLUSTER !== '1' || process.env.TEST_REDIS_CLUSTER_NODES) return;
  g.gmgTestCluster = await startLocalRedisCluster({ masters: 3 });
  process.env.TEST_REDIS_CLUSTER_NODES = g.gmgTestCluster.nodesEnv;
  process.stdout.write(`\nredis cluster for the tests: ${g.gmgTestCluster.nodesEnv}\n`);
}
