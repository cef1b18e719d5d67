/**
 * Image uploads through the real api-edge process: multipart and JSON Base64, byte-sniffed type, 400/413 limits,
 * the public link serving the same bytes, and an uploaded PNG used as a lumen-2-pro reference that completes
 * (worker-image, billing and the simulator as processes).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { startSimStack, waitFor, type SimStack, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const MAX_BYTES = 256 * 1024;

const image = (format: 'png' | 'jpeg', width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 20 } } })
    .toFormat(format)
    .toBuffer();

describe('uploads e2e: POST /v1/uploads/images and the link as a model reference', () => {
  let db: TestDatabase;
  let uploadDir: string;
  let base: string;
  let key: string;
  let stack: SimStack;

  const upload = (init: { body: RequestInit['body']; contentType?: string }) =>
    fetch(`${base}/v1/uploads/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...(init.contentType ? { 'content-type': init.contentType } : {}) },
      body: init.body,
    });
  const multipart = (bytes: Buffer, filename: string, declaredType: string) => {
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: declaredType }), filename);
    return upload({ body: form });
  };
  const fetchBytes = async (url: string) => {
    const r = await fetch(url);
    return { status: r.status, type: r.headers.get('content-type'), bytes: Buffer.from(await r.arrayBuffer()) };
  };

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_e2e_uploads', timeScale: '0.1' });
    db = stack.db;
    uploadDir = await mkdtemp(path.join(os.tmpdir(), 'gmg-e2e-uploads-'));
    const [edge] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN, UPLOAD_DIR: uploadDir, UPLOAD_MAX_BYTES: String(MAX_BYTES) }),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.05' }),
      stack.start('billing'),
    ]);
    base = edge.url;
    const accounts = new AccountRepository(db.dataSource);
    const a = await accounts.create({ name: 'e2e-uploads' });
    await accounts.topup(a.id, 1_000_000_000n);
    key = (await new ApiKeyRepository(db.dataSource).create({ accountId: a.id })).secret;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
  });

  let pngUrl: string;

  it('stores a multipart PNG (declared as JPEG) as image/png and serves the same bytes without a key', async () => {
    const png = await image('png', 300, 200);
    const r = await multipart(png, 'holiday.jpg', 'image/jpeg');
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    const now = Math.floor(Date.now() / 1000);
    expect(body).toEqual({
      code: 200,
      data: {
        url: expect.stringMatching(new RegExp(`^${base}/v1/uploads/img_[A-Za-z0-9_-]{32}\\.png$`)),
        id: expect.any(String),
        mime: 'image/png',
        bytes: png.length,
        width: 300,
        height: 200,
        expires_at: expect.any(Number),
      },
    });
    expect(Math.abs(body.data.expires_at - (now + 86400))).toBeLessThan(60);
    const served = await fetchBytes(body.data.url);
    expect([served.status, served.type]).toEqual([200, 'image/png']);
    expect(served.bytes.equals(png)).toBe(true);
    pngUrl = body.data.url;
  });

  it('stores a JPEG sent as JSON Base64 (data URI) and serves the same bytes', async () => {
    const jpeg = await image('jpeg', 64, 96);
    const r = await upload({ contentType: 'application/json', body: JSON.stringify({ image: `data:image/jpeg;base64,${jpeg.toString('base64')}` }) });
    expect(r.status).toBe(200);
    const { data } = (await r.json()) as any;
    expect([data.mime, data.bytes, data.width, data.height, data.url.endsWith('.jpg')]).toEqual(['image/jpeg', jpeg.length, 64, 96, true]);
    const served = await fetchBytes(data.url);
    expect([served.type, served.bytes.equals(jpeg)]).toEqual(['image/jpeg', true]);
  });

  it('refuses a non-image with 400 naming the field, whatever its declared type', async () => {
    const r = await multipart(Buffer.from('%PDF-1.7 not an image'), 'fake.png', 'image/png');
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      error: { code: 400, type: 'invalid_request_error', message: expect.stringMatching(/^`file` is not a JPEG, PNG, WEBP or BMP image/) },
    });
  });

  it('refuses an image above UPLOAD_MAX_BYTES with 413 in the spec error shape, multipart and JSON', async () => {
    const big = Buffer.concat([await image('png', 32, 32), Buffer.alloc(MAX_BYTES)]);
    const m = await multipart(big, 'big.png', 'image/png');
    expect(m.status).toBe(413);
    expect(await m.json()).toEqual({
      error: { code: 413, type: 'invalid_request_error', message: expect.stringMatching(/larger than the limit of 262144 bytes/) },
    });
    const j = await upload({ contentType: 'application/json', body: JSON.stringify({ image: big.toString('base64') }) });
    expect(j.status).toBe(413);
  });

  it('needs a key to upload (401) and answers 404 for an unknown link', async () => {
    const r = await fetch(`${base}/v1/uploads/images`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"image":"x"}' });
    expect(r.status).toBe(401);
    expect((await fetch(`${base}/v1/uploads/img_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png`)).status).toBe(404);
  });

  it('accepts the uploaded PNG link (a loopback address) as a lumen-2-pro reference, and the task completes', async () => {
    expect(pngUrl).toBeDefined();
    const r = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-2-pro', prompt: 'in the style of the reference', image_urls: [pngUrl], resolution: '1MP' }),
    });
    const ack = (await r.json()) as any;
    expect(r.status).toBe(200);
    const id = ack.data[0].task_id;
    const task = await waitFor(
      async () => {
        const t = (await (await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
        return ['completed', 'failed'].includes(t.data?.status) ? t.data : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'reference task to end' },
    );
    expect(task.status).toBe('completed');
    const [{ request }] = await db.dataSource.query(`SELECT request FROM tasks WHERE id = $1`, [id]);
    expect(request.upstreamBody.image_urls).toEqual([pngUrl]);
    const out = await fetchBytes(task.result.images[0].url);
    const meta = await sharp(out.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([1024, 1024]);
  });

  it('refuses a loopback reference that is not an upload link (same host, other path) with 400', async () => {
    const r = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-2-pro', prompt: 'p', image_urls: [`${base}/v1/tasks/x.png`] }),
    });
    expect(r.status).toBe(400);
  });
});
