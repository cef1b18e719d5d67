import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '@gmg/testing';

/**
 * The lint gate of `npm test` (eslint.config.mjs) must fail on what it is there to catch. Each sample is written
 * beside real code for a moment and linted with the real config, the real type information and the real Nx
 * project graph, in a child process (the flat config is an ES module, which jest's CommonJS runtime cannot load).
 */
const LINT_SAMPLES = `
  import { ESLint } from 'eslint';
  import { randomBytes } from 'node:crypto';
  import { rmSync, writeFileSync } from 'node:fs';
  const samples = JSON.parse(process.argv[1]);
  const eslint = new ESLint({ cwd: process.cwd() });
  const out = [];
  for (const s of samples) {
    // the type-aware rules need a file on disk inside its project; it lives only while it is linted
    const file = s.file.replace(/\\.ts$/, '-' + randomBytes(4).toString('hex') + '.ts');
    writeFileSync(file, s.text);
    try {
      const [r] = await eslint.lintFiles([file]);
      out.push(r.messages.map((m) => m.ruleId ?? 'fatal: ' + m.message));
    } finally {
      rmSync(file, { force: true });
    }
  }
  process.stdout.write(JSON.stringify(out));
`;

let results: string[][] = [];
async function ruleIdsFor(file: string, text: string): Promise<string[]> {
  const i = SAMPLES.findIndex((s) => s.file === file && s.text === text);
  return results[i];
}

const CASES: Array<[string, string, string, string]> = [
    ['a floating promise', 'libs/queue/src/zz-sample.ts', 'export function f(p: Promise<void>): void {\n  p.then(() => undefined);\n}\n', '@typescript-eslint/no-floating-promises'],
    ['an async callback where a void one is expected', 'libs/queue/src/zz-sample.ts', "import { EventEmitter } from 'node:events';\nexport function f(e: EventEmitter): void {\n  e.on('x', async () => { await Promise.resolve(); });\n}\n", '@typescript-eslint/no-misused-promises'],
    ['await of a non-promise', 'libs/queue/src/zz-sample.ts', 'export async function f(): Promise<number> {\n  return await 1;\n}\n', '@typescript-eslint/await-thenable'],
    ['a switch missing a case', 'libs/queue/src/zz-sample.ts', "export function f(s: 'a' | 'b'): number {\n  switch (s) {\n    case 'a':\n      return 1;\n  }\n  return 0;\n}\n", '@typescript-eslint/switch-exhaustiveness-check'],
    ['contracts importing another lib', 'libs/contracts/src/zz-sample.ts', "import { createDataSource } from '@gmg/db';\nexport const x = createDataSource;\n", '@nx/enforce-module-boundaries'],
    ['a lib importing a service by a relative path', 'libs/queue/src/zz-sample.ts', "import { createApp } from '../../../services/api-edge/src/app';\nexport const x = createApp;\n", '@nx/enforce-module-boundaries'],
    ['a service importing another service', 'services/billing/src/zz-sample.ts', "import { createApp } from '@gmg/svc-api-edge';\nexport const x = createApp;\n", '@nx/enforce-module-boundaries'],
    ['a deep import into a lib', 'services/billing/src/zz-sample.ts', "import { QUEUES } from '@gmg/contracts/src/queues';\nexport const x = QUEUES;\n", 'no-restricted-imports'],
    ['raw SQL outside libs/db', 'services/billing/src/zz-sample.ts', "import type { DataSource } from 'typeorm';\nexport async function f(ds: DataSource): Promise<unknown> {\n  return ds.query('SELECT 1');\n}\n", 'no-restricted-syntax'],
];
const CLEAN = { file: 'libs/queue/src/zz-sample.ts', text: "import { QUEUES } from '@gmg/contracts';\nexport const names = Object.values(QUEUES);\n" };
const SAMPLES = [...CASES.map(([, file, text]) => ({ file, text })), CLEAN];

describe('lint gate (eslint.config.mjs)', () => {
  beforeAll(() => {
    const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
    execFileSync(process.execPath, [`${REPO_ROOT}/node_modules/nx/dist/bin/nx.js`, 'show', 'projects'], { cwd: REPO_ROOT, env, stdio: 'ignore' });
    const json = execFileSync(process.execPath, ['--input-type=module', '-e', LINT_SAMPLES, JSON.stringify(SAMPLES)], { cwd: REPO_ROOT, env, encoding: 'utf8', maxBuffer: 16 << 20 });
    results = JSON.parse(json) as string[][];
  }, 180_000);

  it.each(CASES)('reports %s', async (_what, file, text, rule) => {
    expect(await ruleIdsFor(file, text)).toContain(rule);
  });

  it('passes a clean file', async () => {
    expect(await ruleIdsFor(CLEAN.file, CLEAN.text)).toEqual([]);
  });
});
