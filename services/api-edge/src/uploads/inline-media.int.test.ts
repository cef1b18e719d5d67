import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import sharp from 'sharp';
import { AccountRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { INLINE_KEEP_MAX_CHARS } from './inline-media';

const uploadDir = mkdtempSync(path.join(tmpdir(), 'gmg-inline-media-'));
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness({ env: { UPLOAD_DIR: uploadDir } });
});
afterAll(async () => {
  await h?.close();
  rmSync(uploadDir, { recursive: true, force: true });
});

/** A noisy PNG (incompressible, so its Base64 is well above the inline threshold). */
const noisyPng = (side: number): Promise<Buffer> =>
  sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png()
    .toBuffer();

const storedRequest = async (id: string) =>
  ((await h.db.dataSource.query(`SELECT request FROM tasks WHERE id = $1`, [id])) as Array<{ request: { upstreamBody: Record<string, unknown> } }>)[0].request;
const uploadFiles = () => readdirSync(uploadDir).filter((f) => !f.endsWith('.meta.json'));
const submit = (key: string, body: Record<string, unknown>) =>
  request(h.baseUrl).post('/v1/images/generations').set('Authorization', `Bearer ${key}`).send(body);

describe('inline media is stored once, outside the task row', () => {
  it('stores each large Base64 / data-URI reference once as an upload and keeps only its URL in the task request', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const a = await noisyPng(96);
    const b = await noisyPng(80);
    expect(a.toString('base64').length).toBeGreaterThan(INLINE_KEEP_MAX_CHARS);
    const before = uploadFiles().length;
    const res = await submit(c.key, {
      model: 'lumen-2-pro',
      prompt: 'a fox',
      image_urls: [`data:image/png;base64,${a.toString('base64')}`, b.toString('base64'), a.toString('base64'), 'https://cdn.example.com/x.png'],
    });
    expect(res.status).toBe(200);
    const stored = await storedRequest(res.body.data[0].task_id);
    const urls = stored.upstreamBody.image_urls as string[];
    const prefix = `${h.config.publicBaseUrl}/v1/uploads/`;
    expect(urls[0].startsWith(prefix)).toBe(true);
    expect(urls[1].startsWith(prefix)).toBe(true);
    expect(urls[2]).toBe(urls[0]); // the same image twice: stored once
    expect(urls[3]).toBe('https://cdn.example.com/x.png');
    expect(uploadFiles().length - before).toBe(2);
    expect(JSON.stringify(stored).length).toBeLessThan(2048);
    // the link serves the exact bytes that were sent
    const served = await request(h.baseUrl)
      .get(new URL(urls[0]).pathname)
      .buffer(true)
      .parse((r, cb) => {
        const parts: Buffer[] = [];
        r.on('data', (d: Buffer) => parts.push(d));
        r.on('end', () => cb(null, Buffer.concat(parts)));
      });
    expect(served.status).toBe(200);
    expect(Buffer.compare(served.body as Buffer, a)).toBe(0);
  });

  it('keeps a tiny inline value (a 1×1 pixel) in the request as sent', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const pixel = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const res = await submit(c.key, { model: 'lumen-2-pro', prompt: 'a fox', image_urls: [pixel] });
    expect(res.status).toBe(200);
    expect((await storedRequest(res.body.data[0].task_id)).upstreamBody.image_urls).toEqual([pixel]);
  });

  it('refuses large inline data that is not an image with 400 naming the field; nothing held, nothing stored', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const before = uploadFiles().length;
    const junk = Buffer.alloc(8192, 7).toString('base64');
    const res = await submit(c.key, { model: 'lumen-2-pro', prompt: 'a fox', image_urls: ['https://cdn.example.com/x.png', junk] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('`image_urls.1`');
    expect((await new AccountRepository(h.db.dataSource).get(c.accountId))!.held).toBe(0n);
    expect(uploadFiles().length).toBe(before);
  });

  it('deletes the media it stored when the submit is then refused for money (402): the store is as before', async () => {
    const c = await h.newCustomer({ balance: 0 });
    const before = uploadFiles().sort();
    const a = await noisyPng(96);
    const b = await noisyPng(80);
    const res = await submit(c.key, {
      model: 'lumen-2-pro',
      prompt: 'a fox',
      image_urls: [a.toString('base64'), `data:image/png;base64,${b.toString('base64')}`],
    });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ error: { code: 402, type: 'payment_required', message: expect.any(String) } });
    expect(uploadFiles().sort()).toEqual(before);
    expect(readdirSync(uploadDir).filter((f) => f.endsWith('.meta.json'))).toHaveLength(before.length);
  });

  it('deletes the images it already stored when a later inline value is refused (400)', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const before = uploadFiles().sort();
    const junk = Buffer.alloc(8192, 7).toString('base64');
    const res = await submit(c.key, { model: 'lumen-2-pro', prompt: 'a fox', image_urls: [(await noisyPng(96)).toString('base64'), junk] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('`image_urls.1`');
    expect(uploadFiles().sort()).toEqual(before);
  });
});
