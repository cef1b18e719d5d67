export {
  createTestDatabase,
  propertyRuns,
  TEST_PG_ADMIN_URL,
  TEST_REDIS_TARGET,
  TEST_REDIS_URL,
  uniqueRedisPrefix,
  uniqueSuffix,
  type TestDatabase,
} from './test-database';
export { waitFor } from './wait-for';
export { startService, freePort, REPO_ROOT, testResultEnv } from './service-process';
export type { ServiceProcess } from './service-process';
export { deleteRedisPrefix } from './redis-cleanup';
export { recordCalls } from './record-calls';
export { startLocalRedis, startLocalRedisCluster } from './redis-cluster';
export { startBlackHoleProxy, type BlackHoleProxy } from './black-hole-proxy';
export { startForwardProxy, type ForwardProxy } from './forward-proxy';
export { startS3TestServer, type S3TestServer } from './s3-server';
export type { LocalRedis, LocalRedisCluster } from './redis-cluster';
export { ownPort, redisAnswers, redisClusterArgs, redisServerArgs, ServerProc, serverUserWhenRoot } from './local-server';
export { checkLedger } from './ledger-check';
export { adminApi, fundedKeyInGroup, fundedOwner, testChatCall, testPrincipal, testTask, type TestOwner } from './db-fixtures';
export { startTestDnsServer, type TestDnsServer } from './dns-server';
export { launchTestBrowser } from './browser';
export type { TestBrowser } from './browser';
export { startSimStack, type SimStack, type StackService } from './sim-stack';
export { normalizedRequest } from './test-request';
export { seedVolume, volumeSeeded } from './volume-seed';
