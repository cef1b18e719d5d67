import http from 'node:http';
import { largeBodiesWaiting, largeBodyBytesInFlight } from '@gmg/observability';
import { waitFor } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const MIB = 1024 * 1024;
const BUDGET = MIB;
const WAIT_MS = 1500;
/** 700 KiB: one body of this size fits the 1 MiB budget, two do not. */
const DECLARED = 700 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20); // JSON whitespace: a valid prefix of any body

let h: EdgeHarness;
/** Requests a test left open (a failed expectation): destroyed after it, so the edge can close. */
const open = new Set<http.ClientRequest>();
afterEach(() => {
  for (const r of open) r.destroy();
  open.clear();
});
beforeAll(async () => {
  h = await startEdgeHarness({ env: { MAX_BODY_BYTES_IN_FLIGHT: String(BUDGET), BODY_BUDGET_WAIT_MS: String(WAIT_MS) } });
});
afterAll(async () => {
  await h?.close();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: { error?: { type?: string; message?: string; code?: number } };
  at: number;
}

/**
 * A POST whose body the test sends when it chooses: the headers (with the declared length) and `first` bytes at once,
 * the rest on `finish()`. `answer` resolves with the response whenever it comes.
 */
function openPost(path: string, headers: Record<string, string>, first: number, declared = DECLARED) {
  const url = new URL(h.baseUrl);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    path,
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(declared > 0 ? { 'Content-Length': String(declared) } : {}), ...headers },
  });
  open.add(req);
  let sent = 0;
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        req.destroy();
        open.delete(req);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')), at: Date.now() });
      });
    });
    req.on('error', (e) => (sent < size ? undefined : reject(e))); // the server may close an unfinished upload
  });
  // declared 0: a chunked body (no Content-Length) of DECLARED bytes
  const size = declared > 0 ? declared : DECLARED;
  const write = (n: number) => {
    for (let i = 0; i < Math.ceil(n / CHUNK.length) && sent < size; i++) {
      const part = CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
      req.write(part);
      sent += part.length;
    }
  };
  req.flushHeaders();
  write(first);
  return {
    answer,
    finish: () => {
      write(size);
      req.end();
    },
  };
}

const gauge = async (g: typeof largeBodyBytesInFlight): Promise<number> => (await g.get()).values[0]?.value ?? 0;

describe('the large bodies budget (MAX_BODY_BYTES_IN_FLIGHT)', () => {
  it('a large body that does not fit waits unread, is refused 503 after BODY_BUDGET_WAIT_MS, and the next one is admitted once room is freed', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const auth = { Authorization: `Bearer ${c.key}` };

    // A: admitted, and held while its client sends slowly
    const a = openPost('/v1/images/generations', auth, CHUNK.length);
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === DECLARED, { timeoutMs: 5000, what: 'A admitted' });

    // B (a submission) and U (an upload) do not fit beside A: they wait, then are refused in the spec's shape
    const b = openPost('/v1/images/generations', auth, CHUNK.length);
    const u = openPost('/v1/uploads/images', auth, CHUNK.length);
    const [rb, ru] = await Promise.all([b.answer, u.answer]);
    for (const r of [rb, ru]) {
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
      expect(r.body.error).toMatchObject({ type: 'service_unavailable', message: expect.stringContaining('max_body_bytes_in_flight') });
    }
    expect(await gauge(largeBodyBytesInFlight)).toBe(DECLARED);

    // C waits behind A; A's end gives its share back and C is read and answered
    const cReq = openPost('/v1/images/generations', auth, CHUNK.length);
    await waitFor(async () => (await gauge(largeBodiesWaiting)) === 1, { timeoutMs: 5000, what: 'C waiting' });
    a.finish();
    const ra = await a.answer;
    cReq.finish();
    const rc = await cReq.answer;
    expect(ra.status).toBe(400); // a body of whitespace: not JSON
    expect(rc.status).toBe(400);
    expect(rc.at).toBeGreaterThanOrEqual(ra.at);

    // every share is given back once the answers are out; nothing was held or queued
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === 0, { timeoutMs: 5000, what: 'budget empty' });
    expect(await gauge(largeBodiesWaiting)).toBe(0);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId]);
    expect(n).toBe(0);
  });

  it("two keys: one key's slow large bodies take at most its share, so another key's large body is read at once (not starved)", async () => {
    const [noisy, other] = [await h.newCustomer({ balance: 10 }), await h.newCustomer({ balance: 10 })];
    const third = 400 * 1024; // two fit the 1 MiB budget beside each other; two of one key exceed its 512 KiB share
    const a1 = openPost('/v1/images/generations', { Authorization: `Bearer ${noisy.key}` }, CHUNK.length, third);
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === third, { timeoutMs: 5000, what: 'noisy 1 admitted' });
    const a2 = openPost('/v1/images/generations', { Authorization: `Bearer ${noisy.key}` }, CHUNK.length, third);
    await waitFor(async () => (await gauge(largeBodiesWaiting)) === 1, { timeoutMs: 5000, what: 'noisy 2 over its share, waiting' });
    // the other key's body arrives after the noisy key's waiting one and is read while both noisy bodies stay open
    const b = openPost('/v1/images/generations', { Authorization: `Bearer ${other.key}` }, CHUNK.length, third);
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === 2 * third, { timeoutMs: 5000, what: 'other key admitted' });
    b.finish();
    const rb = await b.answer;
    expect(rb.status).toBe(400); // read and parsed (whitespace is not JSON), not 503
    a1.finish();
    a2.finish();
    expect((await a1.answer).status).toBe(400);
    expect((await a2.answer).status).toBe(400);
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === 0, { timeoutMs: 5000, what: 'budget empty' });
  });

  it('a chunked body holds what it has read, not the route cap', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const chunked = openPost('/v1/images/generations', { Authorization: `Bearer ${c.key}` }, 6 * CHUNK.length, 0);
    // 256 KiB up front; 384 KiB read → 384 KiB held (the route's cap is 24 MiB, which would not even fit the budget)
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === 6 * CHUNK.length, { timeoutMs: 5000, what: 'real bytes counted' });
    chunked.finish();
    expect((await chunked.answer).status).toBe(400);
    await waitFor(async () => (await gauge(largeBodyBytesInFlight)) === 0, { timeoutMs: 5000, what: 'budget empty' });
  });

  it('an upload declared larger than any image it may carry is refused 413 before it is read', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await new Promise<{ status: number; body: { error?: { message?: string } } }>((resolve, reject) => {
      const url = new URL(h.baseUrl);
      const req = http.request({
        host: url.hostname,
        port: url.port,
        path: '/v1/uploads/images',
        method: 'POST',
        headers: { Authorization: `Bearer ${c.key}`, 'Content-Type': 'application/json', 'Content-Length': String(500 * MIB) },
      });
      req.on('response', (r) => {
        const parts: Buffer[] = [];
        r.on('data', (d: Buffer) => parts.push(d));
        r.on('end', () => {
          req.destroy();
          resolve({ status: r.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) });
        });
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(res.status).toBe(413);
    expect(res.body.error?.message).toMatch(/image.*larger than the limit/);
  });
});
