// Lint gate (npm test): typescript-eslint's type-checked recommended set (unsafe `any`, unbound methods, promises
// nobody awaits or that land where a callback's return is ignored, …), a switch that forgets a case, and the Nx
// module boundaries.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.data/**', 'coverage/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  {
    // .tsx: the console's React sources (packages/console, its own tsconfig with the DOM library)
    files: ['**/*.ts', '**/*.tsx'],
    // typescript-eslint's type-checked recommended set first; the rules below add to it or tighten it
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, '@nx': nx },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // off: `async () => x` is how a fake, a hook or a poll callback meets a promise-returning type (a throw in it
      // becomes a rejection, as callers expect); await-thenable and the promise rules catch the real mistakes
      '@typescript-eslint/require-await': 'off',
      // off: 178 of its 260 findings are `xs[i]!` reads marked as `noUncheckedIndexedAccess` would demand; that
      // option is off (340 tsc errors today), so the rule would strip the marks it needs: turn both on together
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // a rejection passed on as it came (another promise's, an AbortSignal's reason) stays as it came
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // a lib is imported only through its root index.ts (the Nx rule does not see `@gmg/x/src/...`)
      'no-restricted-imports': ['error', { patterns: [{ group: ['@gmg/*/**'], message: 'import the project through its root (@gmg/<name>)' }] }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          enforceBuildableLibDependency: false,
          depConstraints: [
            // services → libs only; libs never import services; contracts imports no other project
            { sourceTag: 'scope:service', onlyDependOnLibsWithTags: ['scope:lib'] },
            { sourceTag: 'scope:lib', onlyDependOnLibsWithTags: ['scope:lib'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            // packages (the SDK): only their tests use libs (real-gateway tests); their source imports none (below)
            { sourceTag: 'scope:package', onlyDependOnLibsWithTags: ['scope:lib'] },
          ],
        },
      ],
    },
  },
  {
    // Test code reads untyped data on purpose (supertest's `res.body`, rows from `ds.query`, `res.json()`, jest's
    // `expect.any(...)`) and asserts on it: a wrong read fails the test, not production. The rest of the set stays on.
    files: ['**/*.test.ts', '**/*.test-kit.ts', 'libs/testing/**', 'test/**', 'packages/*/test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Raw SQL lives in libs/db (repositories, pingDatabase); everything else calls a repository.
    files: ['services/**/src/**/*.ts', 'libs/**/src/**/*.ts'],
    ignores: ['libs/db/**', 'libs/testing/**', '**/*.test.ts', '**/*.test-kit.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.property.name='query']", message: 'raw SQL only in libs/db: add a repository method there' },
      ],
    },
  },
  {
    // The SDK is standalone (published on its own, no runtime dependencies): its source imports no project and no
    // package; only its tests may use the repo's test helpers.
    files: ['packages/sdk/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@gmg/*', '!./*', '!../*'], message: 'the SDK imports nothing at runtime: only its own files (./x.js) and generated types' }] },
      ],
    },
  },
);
