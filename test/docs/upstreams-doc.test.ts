/** docs/upstreams.md is what scripts/gen-upstream-docs.ts makes of the protocol pages and the adapters' tables. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';
import { CHAT_PROTOCOLS, TASK_PROTOCOLS } from '@gmg/upstream';
import { UPSTREAMS_DOC, renderUpstreamsDoc } from '../../scripts/gen-upstream-docs';

describe('docs/upstreams.md', () => {
  it("is up to date with docs/upstreams/*.md and the adapters' translation tables (else: npm run gen:upstream-docs)", () => {
    expect(readFileSync(UPSTREAMS_DOC, 'utf8')).toBe(renderUpstreamsDoc());
  });

  it('lists in the OpenAPI document exactly the protocols a channel can take', () => {
    const doc = readFileSync(path.join(REPO_ROOT, 'services/api-edge/src/openapi/components.openapi.yaml'), 'utf8');
    const enums = [...doc.matchAll(/^ {10}enum: \[ (gateway, [^\]]*) \]$/gm)].map((m) => m[1]!.split(', ').sort());
    expect(enums.length).toBe(3);
    for (const e of enums) expect(e).toEqual([...TASK_PROTOCOLS, ...CHAT_PROTOCOLS].sort());
  });

  it('has a section for every task protocol', () => {
    const doc = renderUpstreamsDoc();
    for (const p of TASK_PROTOCOLS) expect(doc).toMatch(new RegExp(`^## \`${p}\``, 'm'));
  });
});
