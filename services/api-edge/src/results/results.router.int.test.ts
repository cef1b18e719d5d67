import { Readable } from 'node:stream';
import { createResultLinks, createResultStore, type ResultStore } from '@gmg/upstream';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const T0 = new Date('2030-01-01T00:00:00Z');
let clock = T0;
let h: EdgeHarness;
let store: ResultStore;

beforeAll(async () => {
  h = await startEdgeHarness({ deps: { now: () => clock } });
  store = createResultStore(h.config.resultStoreUrl);
});
afterAll(() => h.close());
beforeEach(() => {
  clock = T0;
});

const BYTES = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom', 'latin1'), Buffer.alloc(2000, 1)]);
const nowS = (): number => Math.floor(clock.getTime() / 1000);

/** A link as a worker signs it (same key, same public base), fetched on the edge that listens. */
function link(key: string, expiresAtS: number, signingKey = h.config.resultSigningKey): string {
  const url = new URL(createResultLinks({ publicBaseUrl: h.config.publicBaseUrl, signingKey }).url(key, expiresAtS));
  return `${h.baseUrl}${url.pathname}${url.search}`;
}

describe('GET /v1/results/<key> (signed links, no API key)', () => {
  it('streams a kept file with its type, length and a private cache lifetime of what the link has left', async () => {
    await store.put('task_r1/0.mp4', Readable.from([BYTES]), { contentType: 'video/mp4' });
    const res = await fetch(link('task_r1/0.mp4', nowS() + 600));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect(res.headers.get('content-length')).toBe(String(BYTES.length));
    expect(res.headers.get('cache-control')).toBe('private, max-age=600');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(BYTES);
    const head = await fetch(link('task_r1/0.mp4', nowS() + 600), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(BYTES.length));
  });

  it('refuses a bad signature, another key and another signing key with 403 in the spec error shape', async () => {
    await store.put('task_r2/0.mp4', Readable.from([BYTES]), { contentType: 'video/mp4' });
    const good = new URL(link('task_r2/0.mp4', nowS() + 600));
    const tampered = new URL(good);
    tampered.searchParams.set('signature', `${good.searchParams.get('signature')!.slice(0, -2)}AA`);
    const swapped = new URL(good);
    swapped.pathname = '/v1/results/task_r1/0.mp4';
    for (const url of [
      tampered.href,
      swapped.href,
      link('task_r2/0.mp4', nowS() + 600, 'another-signing-key-0123456789abcdef'),
      `${h.baseUrl}/v1/results/task_r2/0.mp4`,
    ]) {
      const res = await fetch(url);
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: { code: 403, message: 'link expired or invalid', type: 'permission_error' } });
    }
  });

  it('refuses a link once it has expired (clock injected)', async () => {
    await store.put('task_r3/0.png', Readable.from([Buffer.from([0x89, 0x50, 0x4e, 0x47])]), { contentType: 'image/png' });
    const url = link('task_r3/0.png', nowS() + 60);
    expect((await fetch(url)).status).toBe(200);
    clock = new Date(T0.getTime() + 60_000);
    const res = await fetch(url);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('permission_error');
  });

  it('answers 404 for a validly signed key with nothing stored, and 405 to other methods', async () => {
    const res = await fetch(link('task_none/0.png', nowS() + 60));
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(404);
    expect((await fetch(link('task_none/0.png', nowS() + 60), { method: 'POST' })).status).toBe(405);
  });

  it("the edge's sweeper removes local results a day past their links' lifetime", async () => {
    await store.put('task_r4/0.png', Readable.from([Buffer.from([0x89, 0x50])]), { contentType: 'image/png' });
    const url = link('task_r4/0.png', nowS() + 10 * 86_400);
    clock = new Date(Date.now() + (h.config.resultLinkTtlSeconds + 86_400 + 60) * 1000);
    await h.background.resultSweeper!.sweep();
    clock = T0;
    expect((await fetch(url)).status).toBe(404);
  });
});
