import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { BODY_CAPS, maxBodyBytesOfPath } from '@gmg/contracts';
import { AccountRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { LINGER_MS } from './body-linger';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const MIB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20); // JSON whitespace: a valid prefix of any body

interface Partial413 {
  status: number;
  body: Record<string, unknown>;
  headers: http.IncomingHttpHeaders;
  /** Body bytes the client had written when the answer arrived. */
  sent: number;
}

/**
 * Sends the headers and then body chunks one at a time (waiting for each to be flushed), stopping as soon as an
 * answer arrives or after `maxChunks`; never ends the body. Resolves with the answer and how much was sent.
 */
function postInChunks(path: string, headers: Record<string, string>, maxChunks: number): Promise<Partial413> {
  const url = new URL(h.baseUrl);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({ host: url.hostname, port: url.port, path, method: 'POST', headers: { 'Content-Type': 'application/json', ...headers } });
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')), sent });
      });
    });
    // after the answer the server closes the connection: a write racing it may fail, which is expected
    req.on('error', (e) => (answered ? undefined : reject(e)));
    req.flushHeaders();
    const next = (i: number): void => {
      if (answered || i >= maxChunks) return;
      req.write(CHUNK, () => {
        sent += CHUNK.length;
        setImmediate(() => next(i + 1));
      });
    };
    next(0);
  });
}

describe('body caps', () => {
  it('every submit route has a cap from its contracts, never above MAX_BODY_BYTES', () => {
    expect(maxBodyBytesOfPath('/v1/images/generations')).toBe(BODY_CAPS.manyInline);
    expect(maxBodyBytesOfPath('/v1/artgen/generations')).toBe(BODY_CAPS.urlsOnly);
    expect(maxBodyBytesOfPath('/v1/artgen/generations/edits')).toBe(BODY_CAPS.oneInline);
    expect(maxBodyBytesOfPath('/v1/motion2/private-avatar')).toBe(BODY_CAPS.urlsOnly);
    expect(BODY_CAPS.manyInline).toBeLessThanOrEqual(h.config.maxBodyBytes);
  });

  it('a Content-Length over the route cap is answered 413 (spec shape, rule named) before the body is sent', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const declared = 100 * MIB;
    // at most 4 chunks (256 KiB) of the declared 100 MiB are ever written
    const r = await postInChunks('/v1/images/generations', { Authorization: `Bearer ${c.key}`, 'Content-Length': String(declared) }, 4);
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ error: { code: 413, type: 'invalid_request_error', message: expect.stringContaining('max_body_bytes') } });
    expect(r.sent).toBeLessThan(declared);
    expect((await new AccountRepository(h.db.dataSource).get(c.accountId))!.held).toBe(0n);
  });

  it('a chunked body crossing the route cap is answered 413 as it crosses, without the client finishing it', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const cap = maxBodyBytesOfPath('/v1/artgen/generations')!;
    const maxChunks = 256; // 16 MiB, 64 times the cap: the answer must come long before
    const r = await postInChunks('/v1/artgen/generations', { Authorization: `Bearer ${c.key}`, 'Transfer-Encoding': 'chunked' }, maxChunks);
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ error: { type: 'invalid_request_error', message: expect.stringContaining('max_body_bytes') } });
    expect(r.sent).toBeGreaterThanOrEqual(cap - CHUNK.length);
    expect(r.sent).toBeLessThan(maxChunks * CHUNK.length);
  });

  it("the messages routes read their bytes with the same reader: a chunked body over MAX_BODY_BYTES is 413 as it crosses, in the vendor's envelope", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const maxChunks = 4 * Math.ceil(h.config.maxBodyBytes / CHUNK.length);
    const r = await postInChunks('/v1/messages', { 'x-api-key': c.key, 'msgproto-version': '2023-06-01', 'Transfer-Encoding': 'chunked' }, maxChunks);
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ type: 'error', error: { code: 413, type: 'invalid_request_error', message: expect.stringContaining('max_body_bytes') } });
    expect(r.sent).toBeLessThan(maxChunks * CHUNK.length);
  });

  it("a body under the route cap but over the model's own cap is 413 naming the model; nothing is held", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const body = JSON.stringify({ model: 'pixel-v6', prompt: 'a fox', pass_through: 'x'.repeat(BODY_CAPS.urlsOnly) });
    const res = await fetch(`${h.baseUrl}/v1/videos/generations`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${c.key}`, 'Content-Type': 'application/json' },
      body,
    });
    expect(res.status).toBe(413);
    const json = (await res.json()) as { error: { message: string } };
    expect(json.error.message).toMatch(/model 'pixel-v6'.*max_body_bytes/);
    const n = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId]);
    expect(n[0].n).toBe(0);
  });

  it('a refused body sent whole leaves its keep-alive connection usable past the linger (no close under the next request)', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const cap = maxBodyBytesOfPath('/v1/artgen/generations')!;
    const url = new URL(h.baseUrl);
    const socket = net.connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    let got = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.on('close', () => (closed = true));
    /** Resolves with the status of the next whole answer in `got` (answers here carry a Content-Length). */
    const answer = async (from: number): Promise<{ status: number; end: number }> => {
      for (let i = 0; i < 500 && !closed; i++) {
        const head = got.indexOf('\r\n\r\n', from);
        const len = /content-length: (\d+)/i.exec(got.slice(from, head));
        if (head > 0 && len && got.length >= head + 4 + Number(len[1]))
          return { status: Number(got.slice(from + 9, from + 12)), end: head + 4 + Number(len[1]) };
        await once(socket, 'data').catch(() => undefined);
      }
      throw new Error(`no whole answer (closed: ${closed}): ${got.slice(from, from + 200)}`);
    };
    const auth = `Authorization: Bearer ${c.key}\r\nContent-Type: application/json\r\nHost: x\r\n`;
    // 1: a body over the cap, written whole: refused 413, the rest of it read and dropped by Node
    socket.write(`POST /v1/artgen/generations HTTP/1.1\r\n${auth}Content-Length: ${cap + 1000}\r\n\r\n`);
    socket.write(Buffer.alloc(cap + 1000, 0x20));
    const first = await answer(0);
    expect(first.status).toBe(413);
    // 2: the next request on the same connection spans the linger (its last byte comes after LINGER_MS)
    socket.write(`POST /v1/artgen/generations HTTP/1.1\r\n${auth}Content-Length: 2\r\n\r\n{`);
    await new Promise((r) => setTimeout(r, LINGER_MS * 1.5));
    expect(closed).toBe(false);
    socket.write('}');
    const second = await answer(first.end);
    expect(second.status).toBe(400); // the empty body's missing fields, answered on the kept connection
    socket.destroy();
  });
});
