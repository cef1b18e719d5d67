import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const INDEX = '<!doctype html><html><head><script type="module" src="/console/assets/index-3f2a9c.js"></script></head><body></body></html>';
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: http://127.0.0.1:8080 https:; " +
  "media-src 'self' blob: http://127.0.0.1:8080 https:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** GET /console on the real edge app, from a tiny fake build in a temp dir (CONSOLE_DIR). */
describe('/console static mount (real edge app)', () => {
  let edge: EdgeHarness;
  let root: string;
  let dist: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'gmg-console-'));
    dist = path.join(root, 'dist');
    mkdirSync(path.join(dist, 'assets'), { recursive: true });
    writeFileSync(path.join(dist, 'index.html'), INDEX);
    writeFileSync(path.join(dist, 'assets', 'index-3f2a9c.js'), 'console.log("console");');
    writeFileSync(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    edge = await startEdgeHarness({ env: { CONSOLE_DIR: dist } });
  });
  afterAll(async () => {
    await edge?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const strict = (r: request.Response): void => {
    expect(r.headers['content-security-policy']).toBe(CSP);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
  };

  it('answers the app page at /console and every deep link under it, revalidated on each load, under the strict CSP', async () => {
    for (const p of ['/console', '/console/', '/console/tasks/task_0abc', '/console/accounts?q=acme']) {
      const r = await request(edge.app).get(p);
      expect({ p, status: r.status, type: r.headers['content-type'], cache: r.headers['cache-control'] }).toEqual({
        p,
        status: 200,
        type: 'text/html; charset=utf-8',
        cache: 'no-cache',
      });
      expect(r.text).toBe(INDEX);
      strict(r);
    }
  });

  it('serves hashed assets immutable for a year and other files no-cache; a missing file is 404, never the page', async () => {
    const js = await request(edge.app).get('/console/assets/index-3f2a9c.js');
    expect([js.status, js.headers['content-type'], js.headers['cache-control']]).toEqual([
      200,
      'text/javascript; charset=utf-8',
      'public, max-age=31536000, immutable',
    ]);
    strict(js);
    const icon = await request(edge.app).get('/console/favicon.svg');
    expect([icon.status, icon.headers['cache-control']]).toEqual([200, 'no-cache']);
    for (const p of [
      '/console/assets/index-000000.js',
      '/console/..%2f..%2fpackage.json',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/assets/../../../package.json',
    ]) {
      const miss = await request(edge.app).get(p);
      expect({ p, status: miss.status }).toEqual({ p, status: 404 });
      expect(miss.text).not.toBe(INDEX);
      expect(miss.text).not.toContain('"name"');
      strict(miss);
    }
    const post = await request(edge.app).post('/console/tasks');
    expect(post.status).toBe(405);
    strict(post);
  });

  it('answers 503 in words while the build is missing, read at request time (nothing loaded at start-up)', async () => {
    const away = path.join(root, 'away');
    renameSync(dist, away);
    try {
      const r = await request(edge.app).get('/console/tasks');
      expect(r.status).toBe(503);
      expect(JSON.stringify(r.body)).toContain('the console is not built: run npm run build');
      strict(r);
    } finally {
      renameSync(away, dist);
    }
    expect((await request(edge.app).get('/console/tasks')).status).toBe(200);
  });
});
