/** One jest config for the whole monorepo: unit (*.test.ts), integration (*.int.test.ts), e2e (*.e2e.test.ts). */
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};
const libs = ['contracts', 'queue', 'db', 'upstream', 'config', 'errors', 'logger', 'testing', 'tasks', 'observability'];
const moduleNameMapper = {
  ...Object.fromEntries(libs.map((l) => [`^@gmg/${l}$`, `<rootDir>/libs/${l}/src/index.ts`])),
  // packages/* are ESM sources that import their siblings as `./x.js` (what Node needs after tsc); jest runs the .ts
  '^(\\.{1,2}/.*)\\.js$': '$1',
};
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper,
  roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/packages', '<rootDir>/test'],
  setupFiles: ['reflect-metadata'],
};
// TEST_REDIS_CLUSTER=1: the int and e2e suites run on a local 3-master Redis Cluster (test/redis-cluster.setup.ts)
const redisCluster = { globalSetup: '<rootDir>/test/redis-cluster.setup.ts', globalTeardown: '<rootDir>/test/redis-cluster.teardown.ts' };
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['**/*.test.ts'], testPathIgnorePatterns: ['\\.int\\.test\\.ts$', '\\.e2e\\.test\\.ts$', '/node_modules/'] },
    { ...base, ...redisCluster, displayName: 'int', testMatch: ['**/*.int.test.ts'], setupFilesAfterEnv: ['<rootDir>/test/setup-int.ts'] },
    { ...base, ...redisCluster, displayName: 'e2e', testMatch: ['**/*.e2e.test.ts'], setupFilesAfterEnv: ['<rootDir>/test/setup-e2e.ts'] },
  ],
};
