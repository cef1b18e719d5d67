/**
 * The compiled build (`npm run build`, scripts/build.mjs): what production, `npm start` and the benchmarks run.
 * A bundle must behave like its sources: the files a module reads next to itself (the OpenAPI YAML, the docs page,
 * the playground) are found, the process runs with the production flags and without the tsx loader, and the
 * Dockerfile runs the same bundle with the same flags. (`npm start` end to end on the bundles:
 * test/infra/start.e2e.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { SERVICE_NODE_FLAGS, serviceBundlePath } from '@gmg/config';
import {
  REPO_ROOT, TEST_REDIS_URL, createTestDatabase, freePort, startService, uniqueRedisPrefix,
  type ServiceProcess, type TestDatabase,
} from '@gmg/testing';

const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');

describe('the compiled build', () => {
  let db: TestDatabase;
  let edge: ServiceProcess | undefined;
  let base: string;

  beforeAll(async () => {
    const out = execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build.mjs'), 'api-edge'], { encoding: 'utf8' });
    expect(out).toMatch(/build: 1 service bundle\(s\) in dist\/services\/ \(api-edge\)/);
    db = await createTestDatabase('gmg_build');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    edge = await startService('api-edge', {
      PORT: String(port), DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: uniqueRedisPrefix(),
      ADMIN_TOKEN: 'build-test-admin-token-0123456789abcdef',
    }, `${base}/healthz`, 60_000, 'dist');
  }, 90_000);

  afterAll(async () => {
    await edge?.stop();
    await db?.drop();
  });

  it('runs dist/services/api-edge/main.js under plain node with the production flags, no tsx loader', () => {
    const argv = readFileSync(`/proc/${edge!.proc.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(argv.slice(1)).toEqual([...SERVICE_NODE_FLAGS, serviceBundlePath(REPO_ROOT, 'api-edge')]);
    expect(argv.join(' ')).not.toMatch(/tsx/);
    // Nothing the bundle requires at run time is TypeScript: the libs are inside it.
    const bundle = readFileSync(serviceBundlePath(REPO_ROOT, 'api-edge'), 'utf8');
    expect(bundle).not.toMatch(/require\("@gmg\//);
  });

  it('emits every TypeORM entity and migration class under its own name (the build has no keepNames)', () => {
    const bundle = readFileSync(serviceBundlePath(REPO_ROOT, 'api-edge'), 'utf8');
    const names = ['libs/db/src/entities', 'libs/db/src/migrations'].flatMap((dir) =>
      readdirSync(path.join(REPO_ROOT, dir))
        .filter((f) => f.endsWith('.ts') && !f.includes('.test.'))
        .flatMap((f) => [...read(path.join(dir, f)).matchAll(/^export class (\w+)/gm)].map((m) => m[1]!)));
    expect(names.length).toBeGreaterThan(15);
    // `var X = class {` gives the class the name X at run time (TypeORM reads it); `class _X` or `X2` would not
    const missing = names.filter((n) => !new RegExp(`^var ${n} = class(?: extends [\\w.]+)? \\{`, 'm').test(bundle));
    expect(missing).toEqual([]);
  });

  it('finds the files its modules read next to themselves: the OpenAPI YAML, the docs page, the playground', async () => {
    const doc = await fetch(`${base}/openapi.json`);
    expect(doc.status).toBe(200);
    const body = (await doc.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(body.openapi).toMatch(/^3\./);
    expect(Object.keys(body.paths)).toEqual(expect.arrayContaining(['/v1/images/generations', '/v1/tasks/{task_id}']));
    const docs = await fetch(`${base}/docs`);
    expect([docs.status, docs.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/html/)]);
    const page = await fetch(`${base}/playground`, { redirect: 'follow' });
    expect([page.status, page.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/html/)]);
    expect(await page.text()).toMatch(/<html/i);
  });

  it('the image runs the same bundles with the same flags (Dockerfile)', () => {
    const docker = read('Dockerfile');
    expect(docker).toContain(`NODE_OPTIONS="${SERVICE_NODE_FLAGS.join(' ')}"`);
    expect(docker).toMatch(/^CMD \["sh", "-c", "exec node dist\/services\/\$\{SERVICE\}\/main\.js"\]$/m);
    expect(docker).toMatch(/^FROM app AS build\n(?:.*\n)*?RUN node scripts\/build\.mjs$/m);
    for (const stage of ['sim', 'runtime']) {
      const from = docker.indexOf(`AS ${stage}\n`);
      const next = docker.indexOf('\nFROM ', from);
      expect(docker.slice(from, next === -1 ? undefined : next)).toContain('COPY --from=build --chown=node:node /app/dist ./dist');
    }
  });
});
