export {
  createTestDatabase,
  TEST_PG_ADMIN_URL,
  TEST_REDIS_CLUSTER_NODES,
  TEST_REDIS_TARGET,
  TEST_REDIS_URL,
  uniqueRedisPrefix,
  uniqueSuffix,
  type TestDatabase,
} from './test-database';
export { waitFor } from './wait-for';
export { startService, freePort, REPO_ROOT } from './service-process';
export type { ServiceProcess } from './service-process';
export { deleteRedisPrefix } from './redis-cleanup';
export { recordCalls } from './record-calls';
export { startLocalRedis, startLocalRedisCluster } from './redis-cluster';
export type { LocalRedis, LocalRedisCluster } from './redis-cluster';
export { ownPort, redisAnswers, redisClusterArgs, redisServerArgs, ServerProc, serverUserWhenRoot } from './local-server';
export { fundedOwner, testPrincipal, testTask, type TestOwner } from './db-fixtures';
export { startTestDnsServer, type TestDnsServer } from './dns-server';
export { launchTestBrowser } from './browser';
export type { TestBrowser } from './browser';
export { startSimStack, type SimStack, type SimStackOptions, type StackService } from './sim-stack';
