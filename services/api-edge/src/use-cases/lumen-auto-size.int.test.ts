import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { renderImage } from '../uploads/test-images.test-kit';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * Issue 11.7: lumen-2 `size: auto` follows the first reference's ratio at the chosen tier. The edge measures its
 * own uploads (their stored size) and Base64 (its header); another URL is left to the upstream, billed at the tier.
 */
describe('lumen-2 size: auto at the edge', () => {
  let h: EdgeHarness;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gmg-auto-size-'));
    h = await startEdgeHarness({ env: { UPLOAD_DIR: dir } });
  });
  afterAll(async () => {
    await h?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const expectedOf = async (taskId: string) => (await h.db.dataSource.query(`SELECT request->'expected' AS e FROM tasks WHERE id = $1`, [taskId]))[0].e;

  it.each([
    [1600, 900, '2MP', 1920, 1072],
    [600, 1400, '1MP', 640, 1504],
    [1000, 1000, '4MP', 2048, 2048],
  ])('an uploaded %ix%i first reference at %s gives %ix%i', async (w, hgt, resolution, width, height) => {
    const c = await h.newCustomer({ balance: 10 });
    const up = await request(h.baseUrl)
      .post('/v1/uploads/images')
      .set('Authorization', `Bearer ${c.key}`)
      .attach('file', await renderImage('png', w, hgt), { filename: 'ref.png', contentType: 'image/png' });
    expect(up.status).toBe(200);
    const url: string = up.body.data.url;
    expect(url.startsWith('http://127.0.0.1:8080/v1/uploads/')).toBe(true);
    const res = await request(h.baseUrl)
      .post('/v1/images/generations')
      .set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'lumen-2-pro', prompt: 'x', size: 'auto', resolution, image_urls: [url] });
    expect(res.status).toBe(200);
    expect(await expectedOf(res.body.data[0].task_id)).toEqual({ kind: 'images', count: 1, width, height, format: 'jpeg' });
  });

  it("leaves the size of an external first reference to the upstream, and holds the tier's price", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl)
      .post('/v1/images/generations')
      .set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'lumen-2-pro', prompt: 'x', size: 'auto', resolution: '3MP', image_urls: ['https://cdn.example.com/wide.png'] });
    expect(res.status).toBe(200);
    const id = res.body.data[0].task_id;
    expect(await expectedOf(id)).toEqual({ kind: 'images', count: 1, format: 'jpeg' });
    const [{ price }] = await h.db.dataSource.query(`SELECT price::text FROM tasks WHERE id = $1`, [id]);
    expect(BigInt(price)).toBe(70_000n); // lumen-2-pro@3MP = 0.07 in infra/prices.json
  });
});
