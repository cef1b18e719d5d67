/**
 * Statements of the docs that can be checked mechanically, held to the code: the error envelopes the edge's README
 * lists, and the adapter recipe of docs/architecture.md ("Adding an upstream adapter").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';
import { TASK_PROTOCOLS } from '@gmg/upstream';
import { dialectOf, errorBody, type ErrorDialect } from '../../services/api-edge/src/http/error-body';

const read = (file: string): string => readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** An object's keys as the docs write them: `{error: {code, message, type}}`. */
const shape = (v: unknown): string =>
  typeof v === 'object' && v !== null
    ? `{${Object.entries(v)
        .map(([k, x]) => (typeof x === 'object' && x !== null ? `${k}: ${shape(x)}` : k))
        .join(', ')}}`
    : '';

describe('services/api-edge/README.md, "Errors"', () => {
  const section = read('services/api-edge/README.md').split('## Errors')[1]!.split('\n## ')[0]!;

  it('lists each envelope errorBody makes, with the path that answers in it', () => {
    const paths: Array<[ErrorDialect, string]> = [
      ['standard', '/v1/images/generations'],
      ['artgen', '/v1/artgen'],
      ['messages', '/v1/messages'],
      ['chat', '/v1/chat/completions'],
    ];
    for (const [dialect, p] of paths) {
      expect(dialectOf(p)).toBe(dialect);
      const body = errorBody(dialect, 400, 'invalid_request_error', 'bad', { field: 'model', rule: 'required' });
      const line = section.split('\n- ').find((l) => l.startsWith(`\`${shape(body)}\``));
      expect({ dialect, line }).toEqual({ dialect, line: expect.stringContaining(dialect === 'standard' ? 'every path' : `\`${p}\``) });
    }
  });
});

describe('docs/architecture.md, "Adding an upstream adapter"', () => {
  const recipe = read('docs/architecture.md').split('## Adding an upstream adapter')[1]!.split('\n## ')[0]!;
  const registry = read('libs/upstream/src/adapters.ts');

  it('holds for every task protocol: one folder with its table and adapter, one line in adapters.ts, one page', () => {
    for (const p of TASK_PROTOCOLS.filter((x) => x !== 'gateway')) {
      const dir = `libs/upstream/src/protocols/${p}`;
      const files = [`${dir}/${p}.translation.ts`, `${dir}/${p}.adapter.ts`, `docs/upstreams/${p}.md`];
      expect(files.filter((f) => !existsSync(path.join(REPO_ROOT, f)))).toEqual([]);
      expect(registry).toContain(`from './protocols/${p}/${p}.adapter'`);
    }
  });

  it('names the one registry every consumer uses: no other code builds one', () => {
    expect(recipe).toContain('`createUpstreamAdapters`');
    const builders = execFileSync('git', ['grep', '-l', 'createAdapterRegistry(', '--', 'libs', 'services', ':!*.test.ts', ':!*.test-kit.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
      .trim()
      .split('\n');
    expect(builders.sort()).toEqual(['libs/upstream/src/adapter.ts', 'libs/upstream/src/adapters.ts']);
  });
});
