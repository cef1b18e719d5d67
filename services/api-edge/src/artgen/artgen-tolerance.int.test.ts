import { AccountRepository, TaskRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { artgenCalls } from './artgen.test-kit';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const BASE = '/v1/artgen/generations';
const IMG = 'https://cdn.example.com/a.png';
const { post, submitted } = artgenCalls(() => h);
const held = async (accountId: string) => (await new AccountRepository(h.db.dataSource).get(accountId))!.held;
const requestOf = async (id: string) => (await new TaskRepository(h.db.dataSource).getRequest(id))!;

/** Prices from infra/prices.json, in micro-units (written here, not computed by the code under test). */
const PRICE = { imagine: 40_000n, video: 100_000n };

describe('art suite tolerance (issue 27)', () => {
  it('imagine with metadata and an unknown structured field is accepted and both pass upstream untouched', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const extra = { chaos: 10, stylize: [100, { weird: true }] };
    const id = await submitted(c.key, `${BASE}/imagine`, { prompt: 'a lighthouse', metadata: { order: 'A-17' }, style_options: extra });
    expect((await requestOf(id)).upstreamBody).toMatchObject({ prompt: 'a lighthouse', metadata: { order: 'A-17' }, style_options: extra });
  });

  it('speed relax and fast on video bill as omitted; turbo on video is a 400 naming speed', async () => {
    const c = await h.newCustomer({ balance: 5 });
    for (const speed of ['relax', 'fast', undefined]) {
      const before = await held(c.accountId);
      const id = await submitted(c.key, `${BASE}/video`, { image_urls: [IMG], batch_size: 2, ...(speed ? { speed } : {}) });
      expect({ speed, price: (await held(c.accountId)) - before }).toEqual({ speed, price: 2n * PRICE.video });
      expect((await requestOf(id)).upstreamBody.speed).toBeUndefined();
    }
    const turbo = await post(c.key, `${BASE}/video`, { image_urls: [IMG], speed: 'turbo' });
    expect(turbo.status).toBe(400);
    expect(turbo.body.error.message).toContain('speed');
  });

  it('version spellings of the prompt flag (8, 7.0, 6.0, v8) are accepted, normalized and billed as their canonical form', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const cases: Array<[string, string]> = [
      ['7.0', 'v7'],
      ['8', 'v8'],
      ['6.0', 'v6'],
      ['v8', 'v8'],
    ];
    for (const [spelling, canonical] of cases) {
      const before = await held(c.accountId);
      const id = await submitted(c.key, `${BASE}/imagine`, { prompt: 'a cat', version: spelling, speed: 'relax' });
      const r = await requestOf(id);
      expect({
        spelling,
        version: r.derived.version,
        upstream: r.upstreamBody.version,
        speed: r.upstreamBody.speed,
        price: (await held(c.accountId)) - before,
      }).toEqual({ spelling, version: canonical, upstream: canonical, speed: undefined, price: PRICE.imagine });
    }
    // a flag and the field that say the same version in different spellings agree
    await submitted(c.key, `${BASE}/imagine`, { prompt: 'a cat --v 7', version: '7.0' });
  });
});
