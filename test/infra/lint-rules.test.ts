import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';

/**
 * The lint gate of `npm test` (eslint.config.mjs) must fail on what it is there to catch. Each sample is linted
 * with the real config, the real type information and the real Nx project graph, under a path inside the project
 * it stands for (the boundary, raw-SQL and SDK rules go by the path) — as text, never written: no file appears in
 * a source tree, so a crash mid-test leaves nothing for the build, knip or tsc to pick up. A file that is not on
 * disk is in no tsconfig's file list, so the one thing added to the real config is typescript-eslint's default
 * project for exactly these paths, built from the repo's tsconfig.json (same compiler options, same `paths`).
 * In a child process: the flat config is an ES module, which jest's CommonJS runtime cannot load.
 */
const LINT_SAMPLES = `
  import { ESLint } from 'eslint';
  const samples = JSON.parse(process.argv[1]);
  const files = samples.map((s) => s.file);
  const eslint = new ESLint({
    cwd: process.cwd(),
    overrideConfig: [{
      files,
      languageOptions: {
        parserOptions: {
          projectService: {
            allowDefaultProject: files,
            defaultProject: 'tsconfig.json',
            maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: files.length,
          },
        },
      },
    }],
  });
  const out = [];
  for (const s of samples) {
    const [r] = await eslint.lintText(s.text, { filePath: s.file });
    out.push(r.messages.map((m) => m.ruleId ?? 'fatal: ' + m.message));
  }
  process.stdout.write(JSON.stringify(out));
`;

/** [what, the project folder the sample stands in, its text, the rule that must report it] */
const CASES: Array<[string, string, string, string]> = [
  [
    'a floating promise',
    'libs/queue/src',
    'export function f(p: Promise<void>): void {\n  p.then(() => undefined);\n}\n',
    '@typescript-eslint/no-floating-promises',
  ],
  [
    'an async callback where a void one is expected',
    'libs/queue/src',
    "import { EventEmitter } from 'node:events';\nexport function f(e: EventEmitter): void {\n  e.on('x', async () => { await Promise.resolve(); });\n}\n",
    '@typescript-eslint/no-misused-promises',
  ],
  ['await of a non-promise', 'libs/queue/src', 'export async function f(): Promise<number> {\n  return await 1;\n}\n', '@typescript-eslint/await-thenable'],
  [
    'a switch missing a case',
    'libs/queue/src',
    "export function f(s: 'a' | 'b'): number {\n  switch (s) {\n    case 'a':\n      return 1;\n  }\n  return 0;\n}\n",
    '@typescript-eslint/switch-exhaustiveness-check',
  ],
  // two of the type-checked recommended set (typescript-eslint's recommendedTypeChecked)
  [
    'an `any` assigned to a typed variable',
    'libs/queue/src',
    'export function f(raw: string): string {\n  const v: string = JSON.parse(raw);\n  return v;\n}\n',
    '@typescript-eslint/no-unsafe-assignment',
  ],
  [
    'a method passed on without its object',
    'libs/queue/src',
    'export function f(c: { get(): number }): () => number {\n  return c.get;\n}\n',
    '@typescript-eslint/unbound-method',
  ],
  [
    'contracts importing another lib',
    'libs/contracts/src',
    "import { createDataSource } from '@gmg/db';\nexport const x = createDataSource;\n",
    '@nx/enforce-module-boundaries',
  ],
  [
    'a lib importing a service by a relative path',
    'libs/queue/src',
    "import { createApp } from '../../../services/api-edge/src/app';\nexport const x = createApp;\n",
    '@nx/enforce-module-boundaries',
  ],
  [
    'a service importing another service',
    'services/billing/src',
    "import { createApp } from '@gmg/svc-api-edge';\nexport const x = createApp;\n",
    '@nx/enforce-module-boundaries',
  ],
  [
    'a deep import into a lib',
    'services/billing/src',
    "import { QUEUES } from '@gmg/contracts/src/queues';\nexport const x = QUEUES;\n",
    'no-restricted-imports',
  ],
  [
    'raw SQL outside libs/db',
    'services/billing/src',
    "import type { DataSource } from 'typeorm';\nexport async function f(ds: DataSource): Promise<unknown> {\n  return ds.query('SELECT 1');\n}\n",
    'no-restricted-syntax',
  ],
  ['the SDK importing a project', 'packages/sdk/src', "import { QUEUES } from '@gmg/contracts';\nexport const x = QUEUES;\n", 'no-restricted-imports'],
];
const CLEAN = { dir: 'libs/queue/src', text: "import { QUEUES } from '@gmg/contracts';\nexport const names = Object.values(QUEUES);\n" };

// one path per sample: the type-checker keeps a file it has opened, so a path is never reused for another text
const SAMPLES = [...CASES.map(([, dir, text]) => ({ dir, text })), CLEAN].map((s, i) => ({ file: `${s.dir}/zz-lint-sample-${i}.ts`, text: s.text }));

let results: string[][] = [];

/**
 * The Nx rule finds a service's package (`@gmg/svc-api-edge`) through its node_modules link. A checkout that
 * borrows another one's node_modules (a git worktree with a symlink) resolves it into the other tree, where it is
 * no project of this graph: the service-import sample then goes unreported, and this says why.
 */
function workspaceLinkProblem(): string | undefined {
  const linked = realpathSync(path.join(REPO_ROOT, 'node_modules/@gmg/svc-api-edge'));
  const own = path.join(REPO_ROOT, 'services/api-edge');
  return linked === own ? undefined : `node_modules/@gmg/svc-api-edge leads to ${linked}, not ${own}: node_modules belongs to another checkout`;
}

describe('lint gate (eslint.config.mjs)', () => {
  beforeAll(() => {
    // a real file at a sample's path would be linted as itself, not as the sample
    const onDisk = SAMPLES.filter((s) => existsSync(path.join(REPO_ROOT, s.file)));
    if (onDisk.length > 0) throw new Error(`lint samples' paths exist on disk: ${onDisk.map((s) => s.file).join(', ')}`);
    const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
    execFileSync(process.execPath, [`${REPO_ROOT}/node_modules/nx/dist/bin/nx.js`, 'show', 'projects'], { cwd: REPO_ROOT, env, stdio: 'ignore' });
    const json = execFileSync(process.execPath, ['--input-type=module', '-e', LINT_SAMPLES, JSON.stringify(SAMPLES)], {
      cwd: REPO_ROOT,
      env,
      encoding: 'utf8',
      maxBuffer: 16 << 20,
    });
    results = JSON.parse(json) as string[][];
  }, 180_000);

  it.each(CASES.map((c, i) => [...c, i] as const))('reports %s', (_what, _dir, text, rule, i) => {
    if (text.includes("'@gmg/svc-")) expect(workspaceLinkProblem()).toBeUndefined();
    expect(results[i]).toContain(rule);
  });

  it('passes a clean file', () => {
    expect(results[CASES.length]).toEqual([]);
  });
});
