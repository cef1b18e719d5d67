// Lint gate (npm test): type-aware rules that catch what the compiler does not — a promise nobody awaits, a
// promise where a callback's return is ignored, a switch that forgets a case — plus the Nx module boundaries.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.data/**', 'coverage/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  {
    files: ['**/*.ts'],
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
    // Raw SQL lives in libs/db (repositories, pingDatabase); everything else calls a repository.
    files: ['services/**/src/**/*.ts', 'libs/**/src/**/*.ts'],
    ignores: ['libs/db/**', 'libs/testing/**', '**/*.test.ts', '**/test-support/**', '**/*.test-util.ts', '**/*.testkit.ts'],
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
      'no-restricted-imports': ['error', { patterns: [{ group: ['@gmg/*', '!./*', '!../*'], message: 'the SDK imports nothing at runtime: only its own files (./x.js) and generated types' }] }],
    },
  },
);
