import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import sharp from 'sharp';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { renderImage } from './test-images.test-kit';

const uploadDir = mkdtempSync(path.join(tmpdir(), 'gmg-upload-quota-'));
const TTL_SECONDS = 600;
const MAX_BYTES = 64 * 1024;
let shiftMs = 0;
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness({
    env: {
      UPLOAD_DIR: uploadDir,
      UPLOAD_TTL_SECONDS: String(TTL_SECONDS),
      UPLOAD_MAX_BYTES: String(MAX_BYTES),
      UPLOAD_QUOTA_FILES: '3',
      UPLOAD_QUOTA_BYTES: String(2 * MAX_BYTES),
    },
    deps: { now: () => new Date(Date.now() + shiftMs) },
  });
});
afterAll(async () => {
  await h?.close();
  rmSync(uploadDir, { recursive: true, force: true });
});

/** A customer whose group has no request-rate limit: only the quota can refuse its uploads. */
const customer = () => h.newCustomer({ balance: 1, groupName: 'upload-quota-test' });
const stored = () => readdirSync(uploadDir).filter((f) => !f.endsWith('.meta.json')).length;
const upload = async (key: string, image: Buffer) =>
  request(h.baseUrl).post('/v1/uploads/images').set('Authorization', `Bearer ${key}`).attach('file', image, 'a.png');
/** An incompressible PNG of about side²·3 bytes. */
const noisyPng = (side: number): Promise<Buffer> =>
  sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png()
    .toBuffer();

describe('per-account upload quota (UPLOAD_QUOTA_FILES, UPLOAD_QUOTA_BYTES)', () => {
  it('refuses the upload past the file quota with 429 naming the rule, stores nothing, and leaves other accounts alone', async () => {
    const a = await customer();
    for (let i = 0; i < 3; i++) expect((await upload(a.key, await renderImage('png', 20 + i, 20))).status).toBe(200);
    const before = stored();
    const refused = await upload(a.key, await renderImage('png', 40, 40));
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: { code: 429, type: 'rate_limit_error', message: expect.stringContaining('rule upload_quota_files') } });
    expect(refused.body.error.message).toMatch(/keeps 3 unexpired uploads, the most allowed is 3/);
    // room frees when the oldest expires: about the TTL from now
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(TTL_SECONDS - 30);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(TTL_SECONDS);
    expect(stored()).toBe(before);

    const b = await customer();
    expect((await upload(b.key, await renderImage('png', 40, 40))).status).toBe(200);
  });

  it('refuses the upload that would take the account past the byte quota with 429 naming the rule', async () => {
    const c = await customer();
    const big = await noisyPng(140);
    expect(big.length).toBeGreaterThan(MAX_BYTES * 0.75);
    expect(big.length).toBeLessThanOrEqual(MAX_BYTES);
    expect((await upload(c.key, big)).status).toBe(200);
    expect((await upload(c.key, await noisyPng(140))).status).toBe(200);
    const before = stored();
    const refused = await upload(c.key, await noisyPng(140));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 429, type: 'rate_limit_error' });
    expect(refused.body.error.message).toContain('rule upload_quota_bytes');
    expect(refused.body.error.message).toContain('would exceed 131072 bytes');
    expect(stored()).toBe(before);
  });

  it('counts only uploads that have not expired: once they expire the account uploads again', async () => {
    const d = await customer();
    for (let i = 0; i < 3; i++) expect((await upload(d.key, await renderImage('png', 30, 30 + i))).status).toBe(200);
    expect((await upload(d.key, await renderImage('png', 30, 30))).status).toBe(429);
    shiftMs += (TTL_SECONDS + 1) * 1000;
    expect((await upload(d.key, await renderImage('png', 30, 30))).status).toBe(200);
  });
});
