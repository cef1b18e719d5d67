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
const moduleNameMapper = Object.fromEntries(libs.map((l) => [`^@gmg/${l}$`, `<rootDir>/libs/${l}/src/index.ts`]));
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper,
  roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/test'],
  setupFiles: ['reflect-metadata'],
};
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['**/*.test.ts'], testPathIgnorePatterns: ['\\.int\\.test\\.ts$', '\\.e2e\\.test\\.ts$', '/node_modules/'] },
    { ...base, displayName: 'int', testMatch: ['**/*.int.test.ts'], setupFilesAfterEnv: ['<rootDir>/test/setup-int.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['**/*.e2e.test.ts'], setupFilesAfterEnv: ['<rootDir>/test/setup-e2e.ts'] },
  ],
};
