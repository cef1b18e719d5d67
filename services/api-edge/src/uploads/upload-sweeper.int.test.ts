import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { waitFor } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { renderImage } from './test-images.test-kit';

const uploadDir = mkdtempSync(path.join(tmpdir(), 'gmg-upload-sweeper-'));
const TTL_SECONDS = 60;
/** The edge's clock: real time plus a shift the test moves forward (the sweeper's gating needs time to pass). */
let shiftMs = 0;
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness({
    env: { UPLOAD_DIR: uploadDir, UPLOAD_TTL_SECONDS: String(TTL_SECONDS), UPLOAD_SWEEP_INTERVAL_MS: '200' },
    deps: { now: () => new Date(Date.now() + shiftMs) },
  });
});
afterAll(async () => {
  await h?.close();
  rmSync(uploadDir, { recursive: true, force: true });
});

const filesOf = (name: string) => readdirSync(uploadDir).filter((f) => f.startsWith(name));

const upload = async (key: string): Promise<string> => {
  const up = await request(h.baseUrl)
    .post('/v1/uploads/images')
    .set('Authorization', `Bearer ${key}`)
    .attach('file', await renderImage('png', 32, 32), 'a.png');
  expect(up.status).toBe(200);
  return String(up.body.data.url).split('/').pop()!;
};

describe('the running edge sweeps expired uploads on its own timer', () => {
  it('deletes an expired upload with no request after it (no sweep called by hand) and keeps a live one', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const old = await upload(c.key);
    shiftMs = 30_000;
    const young = await upload(c.key);
    expect(filesOf(old)).toEqual([old, `${old}.meta.json`]);

    // `old` past its expiry, `young` not; from here on nothing talks to the edge: only its timer can remove files
    shiftMs = (TTL_SECONDS + 1) * 1000;
    await waitFor(() => filesOf(old).length === 0, { timeoutMs: 5000, intervalMs: 50, what: 'the expired upload to be swept' });
    expect(filesOf(young)).toEqual([young, `${young}.meta.json`]);
    expect((await request(h.baseUrl).get(`/v1/uploads/${young}`)).status).toBe(200);
  });
});
