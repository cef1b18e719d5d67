/** docs/upstreams.md is what scripts/gen-upstream-docs.ts makes of the protocol pages and the adapters' tables. */
import { readFileSync } from 'node:fs';
import { TASK_PROTOCOLS } from '@gmg/upstream';
import { UPSTREAMS_DOC, renderUpstreamsDoc } from '../../scripts/gen-upstream-docs';

describe('docs/upstreams.md', () => {
  it("is up to date with docs/upstreams/*.md and the adapters' translation tables (else: npm run gen:upstream-docs)", () => {
    expect(readFileSync(UPSTREAMS_DOC, 'utf8')).toBe(renderUpstreamsDoc());
  });

  it('has a section for every task protocol', () => {
    const doc = renderUpstreamsDoc();
    for (const p of TASK_PROTOCOLS) expect(doc).toMatch(new RegExp(`^## \`${p}\``, 'm'));
  });
});
