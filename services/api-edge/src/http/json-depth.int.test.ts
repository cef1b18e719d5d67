import { AccountRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { MAX_JSON_DEPTH } from './json-depth';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A body with a valid object at its top, nested `levels` deep inside one of its fields (issue 27: 20,000 gave 500). */
const nested = (fields: Record<string, unknown>, levels: number): string =>
  `${JSON.stringify(fields).slice(0, -1)},"metadata":${'['.repeat(levels)}${']'.repeat(levels)}}`;

const count = async (table: string): Promise<number> => Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

describe('JSON nesting depth at the edge', () => {
  it('a body nested 20,000 deep is a 400 in the spec shape on every JSON endpoint, creating and charging nothing', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const user = { Authorization: `Bearer ${c.key}` };
    const admin = { Authorization: `Bearer ${h.config.adminToken}` };
    const endpoints: Array<{ path: string; headers: Record<string, string>; fields: Record<string, unknown>; envelope?: boolean }> = [
      { path: '/v1/images/generations', headers: user, fields: { model: 'lumen-2-pro', prompt: 'a cat' } },
      { path: '/v1/videos/generations', headers: user, fields: { model: 'reel-v4', prompt: 'a cat' } },
      { path: '/v1/artgen/generations/imagine', headers: user, fields: { prompt: 'a cat' } },
      { path: '/v1/motion2/private-avatar', headers: user, fields: { url: 'https://example.com/a.png', name: 'a' } },
      {
        path: '/v1/messages',
        headers: { ...user, 'msgproto-version': '2023-06-01' },
        fields: { model: 'claude-sonnet-4', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      },
      { path: '/v1/uploads/images', headers: user, fields: { image: 'iVBORw0KGgo=' } },
      { path: '/api/accounts', headers: admin, fields: { name: 'nested' }, envelope: true },
    ];
    const before = { accounts: await count('accounts'), tasks: await count('tasks'), ledger: await count('ledger_entries') };
    for (const e of endpoints) {
      const res = await fetch(h.baseUrl + e.path, {
        method: 'POST',
        headers: { ...e.headers, 'Content-Type': 'application/json' },
        body: nested(e.fields, 20_000),
      });
      const body = await res.json();
      expect({ path: e.path, status: res.status }).toEqual({ path: e.path, status: 400 });
      const message = expect.stringContaining(`deeper than ${MAX_JSON_DEPTH} levels`);
      // each family's own error shape (management: its envelope; messages: the vendor's, with a top-level type)
      expect(body).toMatchObject(e.envelope ? { success: false, message, data: null } : { error: { type: 'invalid_request_error', message } });
    }
    expect({ accounts: await count('accounts'), tasks: await count('tasks'), ledger: await count('ledger_entries') }).toEqual(before);
    const account = (await new AccountRepository(h.db.dataSource).get(c.accountId))!;
    expect({ available: account.available, held: account.held }).toEqual({ available: 10_000_000n, held: 0n }); // 10 units in micro-units
  });
});
