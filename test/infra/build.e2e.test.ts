/**
 * The compiled build (`npm run build`, scripts/build.mjs): what production, `npm start` and the benchmarks run.
 * A bundle must behave like its sources: the files a module reads next to itself (the OpenAPI YAML, the docs page,
 * the playground) are found, the process runs with the production flags and without the tsx loader, and the
 * Dockerfile runs the same bundle with the same flags. The one-shot scripts the image runs (the migration Job and
 * init containers, the operator CLI) are bundles too, and every bundle loads only production dependencies — the
 * image has no others. (`npm start` end to end on the bundles: test/infra/start.e2e.test.ts.)
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { SERVICE_NODE_FLAGS, serviceBundlePath } from '@gmg/config';
import {
  REPO_ROOT,
  TEST_PG_ADMIN_URL,
  TEST_REDIS_URL,
  createTestDatabase,
  freePort,
  startService,
  uniqueRedisPrefix,
  uniqueSuffix,
  waitFor,
  type ServiceProcess,
  type TestDatabase,
} from '@gmg/testing';

const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');
const json = (rel: string): Record<string, any> => JSON.parse(read(rel)) as Record<string, any>;
const execFileAsync = promisify(execFile);

const serviceDirs = readdirSync(path.join(REPO_ROOT, 'services')).filter((d) => existsSync(path.join(REPO_ROOT, 'services', d, 'src', 'main.ts')));
const scriptBundle = (name: string): string => path.join(REPO_ROOT, 'dist', 'scripts', `${name}.js`);

/** The classes a libs/db/src folder exports, in file (= timestamp) order. */
const exportedClasses = (dir: string): string[] =>
  readdirSync(path.join(REPO_ROOT, dir))
    .filter((f) => f.endsWith('.ts') && !f.includes('.test.'))
    .sort()
    .flatMap((f) => [...read(path.join(dir, f)).matchAll(/^export class (\w+)/gm)].map((m) => m[1]!));

/** The npm packages a bundle loads at run time: `require("x…")` and `require.resolve("x…")`, Node's own aside. */
function packagesLoadedBy(file: string): string[] {
  const specs = [...readFileSync(file, 'utf8').matchAll(/\brequire(?:\.resolve)?\("([^".][^"]*)"\)/g)].map((m) => m[1]!);
  return [
    ...new Set(
      specs
        .filter((x) => !x.startsWith('node:') && !builtinModules.includes(x.split('/')[0]!))
        .map((x) =>
          x
            .split('/')
            .slice(0, x.startsWith('@') ? 2 : 1)
            .join('/'),
        ),
    ),
  ].sort();
}

describe('the compiled build', () => {
  let db: TestDatabase;
  let edge: ServiceProcess | undefined;
  let base: string;
  /** The database the migrate bundle creates (dropped in afterAll). */
  let scratchDb: string | undefined;

  beforeAll(async () => {
    const out = execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build.mjs')], { encoding: 'utf8' });
    expect(out).toContain(
      `build: ${serviceDirs.length} service bundle(s) in dist/services/ (${serviceDirs.join(', ')}), ` + '2 script bundle(s) in dist/scripts/ (migrate, admin)',
    );
    db = await createTestDatabase('gmg_build');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    edge = await startService(
      'api-edge',
      {
        PORT: String(port),
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: uniqueRedisPrefix(),
        ADMIN_TOKEN: 'build-test-admin-token-0123456789abcdef',
      },
      `${base}/healthz`,
      60_000,
      'dist',
    );
  }, 90_000);

  afterAll(async () => {
    await edge?.stop();
    await db?.drop();
    if (scratchDb) {
      const admin = new Client({ connectionString: TEST_PG_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${scratchDb}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
  });

  it('runs dist/services/api-edge/main.js under plain node with the production flags, no tsx loader', () => {
    const argv = readFileSync(`/proc/${edge!.proc.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(argv.slice(1)).toEqual([...SERVICE_NODE_FLAGS, serviceBundlePath(REPO_ROOT, 'api-edge')]);
    expect(argv.join(' ')).not.toMatch(/tsx/);
    // Nothing the bundle requires at run time is TypeScript: the libs are inside it.
    const bundle = readFileSync(serviceBundlePath(REPO_ROOT, 'api-edge'), 'utf8');
    expect(bundle).not.toMatch(/require\("@gmg\//);
  });

  it('emits every bundle as ASCII without comments or indentation: V8 keeps each loaded source for lazy compiling', () => {
    // one non-ASCII character makes V8 hold a whole source as a two-byte string (the edge's 1.7 MiB instead of
    // 0.7 in its heap); esbuild escapes strings but not every regular expression, nor the comments it keeps
    for (const file of [...serviceDirs.map((s) => serviceBundlePath(REPO_ROOT, s)), scriptBundle('migrate'), scriptBundle('admin')]) {
      const bundle = readFileSync(file, 'utf8');
      const nonAscii = [...bundle.matchAll(/.{0,40}[^\x00-\x7f].{0,20}/g)].map((m) => m[0]);
      expect({ file: path.relative(REPO_ROOT, file), nonAscii }).toEqual({ file: path.relative(REPO_ROOT, file), nonAscii: [] });
      expect(bundle).not.toMatch(/^\s+\/?\*/m);
    }
  });

  it('emits every TypeORM entity and migration class under its own name (the build has no keepNames)', () => {
    const names = ['libs/db/src/entities', 'libs/db/src/migrations'].flatMap(exportedClasses);
    expect(names.length).toBeGreaterThan(15);
    for (const file of [serviceBundlePath(REPO_ROOT, 'api-edge'), scriptBundle('migrate')]) {
      const bundle = readFileSync(file, 'utf8');
      // `var X = class {` gives the class the name X at run time (TypeORM reads it); `class _X` or `X2` would not
      // (whitespace is minified: `var X=class extends Y{`)
      const missing = names.filter((n) => !new RegExp(`(?:^|[;{}])var ${n}\\s*=\\s*class(?:\\s+extends\\s+[\\w.]+)?\\s*\\{`, 'm').test(bundle));
      expect({ file: path.relative(REPO_ROOT, file), missing }).toEqual({ file: path.relative(REPO_ROOT, file), missing: [] });
    }
  });

  it("dist/scripts/migrate.js and admin.js run under plain node with the image's flags: the migrations, --wait, the CLI", async () => {
    const name = `gmg_build_migrate_${uniqueSuffix()}`;
    const url = new URL(TEST_PG_ADMIN_URL);
    url.pathname = `/${name}`;
    scratchDb = name;
    // the image's environment: NODE_OPTIONS as the Dockerfile sets it, no loader
    const env = { PATH: process.env.PATH ?? '', NODE_ENV: 'production', NODE_OPTIONS: SERVICE_NODE_FLAGS.join(' ') };
    const run = async (script: string, args: string[], extra: Record<string, string>): Promise<string> =>
      (await execFileAsync(process.execPath, [scriptBundle(script), ...args], { cwd: REPO_ROOT, env: { ...env, ...extra }, encoding: 'utf8' })).stdout;

    const migrated = await run('migrate', [], {
      MIGRATE_CREATE_DATABASE: '1',
      MIGRATION_DATABASE_URL: url.toString(),
      PRICES_FILE: path.join(REPO_ROOT, 'infra/prices.json'),
    });
    const prices = json('infra/prices.json') as unknown as unknown[];
    const shown = new URL(url); // the script redacts a password in what it prints
    if (shown.password) shown.password = '***';
    expect(migrated.split('\n').filter(Boolean)).toEqual([
      `migrate: created database of ${shown.toString()}`,
      `migrate: applied ${exportedClasses('libs/db/src/migrations').join(', ')}`,
      `migrate: ${prices.length} prices loaded from ${path.join(REPO_ROOT, 'infra/prices.json')}`,
    ]);
    expect(await run('migrate', ['--wait'], { DATABASE_URL: url.toString() })).toBe('migrate --wait: schema up to date\n');
    const listed = JSON.parse(await run('admin', ['prices', 'list'], { DATABASE_URL: url.toString() })) as Array<{ key: string }>;
    expect(listed.map((p) => p.key).sort()).toEqual((prices as Array<{ key: string }>).map((p) => p.key).sort());
  });

  it("maps stack frames of the bundle's own code to its TypeScript files, and reads no library's source map", async () => {
    // a preloaded probe asks Node's source-map cache, as the process exits, what the production flags loaded: the
    // bundle's own map (scripts/admin.ts among its sources), and none for typeorm, which the bundle did load
    // (the libraries' maps cost the edge 13 MiB at start-up; scripts/build.mjs, docs/benchmarks.md)
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gmg-build-maps-'));
    try {
      const out = path.join(dir, 'probe.json');
      const probe = path.join(dir, 'probe.js');
      writeFileSync(
        probe,
        `const m = require('node:module');
process.on('exit', () => {
  const typeorm = require.resolve('typeorm', { paths: [${JSON.stringify(REPO_ROOT)}] });
  const own = m.findSourceMap(process.argv[1]);
  require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({
    own: own ? own.payload.sources.filter((s) => s.endsWith('scripts/admin.ts')).length : 0,
    typeormLoaded: require.cache[typeorm] !== undefined,
    typeormMap: m.findSourceMap(typeorm) !== undefined,
  }));
});
`,
      );
      await execFileAsync(process.execPath, [...SERVICE_NODE_FLAGS, '--require', probe, scriptBundle('admin'), 'help'], { cwd: REPO_ROOT, encoding: 'utf8' });
      expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({ own: 1, typeormLoaded: true, typeormMap: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the edge loads at start-up only what serving needs: the OpenAPI YAML, the queue dashboard, the tracing SDK and S3 on first use', async () => {
    // a preloaded probe lists, on SIGUSR2, the packages the process has loaded (Node's module cache)
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gmg-build-loaded-'));
    const out = path.join(dir, 'loaded.json');
    const probe = path.join(dir, 'probe.js');
    writeFileSync(
      probe,
      `process.on('SIGUSR2', () => {
  const names = Object.keys(require.cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean);
  require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify([...new Set(names)]));
});
`,
    );
    const port = await freePort();
    const admin = 'build-test-admin-token-0123456789abcdef';
    const env = { PORT: String(port), DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: uniqueRedisPrefix(), ADMIN_TOKEN: admin };
    const probed = await startService('api-edge', env, `http://127.0.0.1:${port}/healthz`, 60_000, 'dist', ['--require', probe]);
    const loaded = async (): Promise<string[]> => {
      rmSync(out, { force: true });
      probed.proc.kill('SIGUSR2');
      return waitFor(() => existsSync(out) && (JSON.parse(readFileSync(out, 'utf8')) as string[]), { timeoutMs: 10_000, what: 'the probe' });
    };
    try {
      const onFirstUse = ['yaml', '@bull-board/api', '@bull-board/express'];
      const atStart = await loaded();
      expect(atStart).toEqual(expect.arrayContaining(['express', 'typeorm', 'bullmq']));
      expect(atStart.filter((p) => [...onFirstUse, '@opentelemetry/sdk-trace-base', '@aws-sdk/client-s3'].includes(p))).toEqual([]);
      expect((await fetch(`http://127.0.0.1:${port}/openapi.json`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/admin/queues`, { headers: { authorization: `Bearer ${admin}` } })).status).toBe(200);
      const after = await loaded();
      expect(onFirstUse.filter((p) => !after.includes(p))).toEqual([]);
    } finally {
      await probed.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every bundle loads only production dependencies of its workspace, and each production dependency is loaded', () => {
    const root = json('package.json');
    const own = (manifest: string): string[] => Object.keys(json(manifest).dependencies ?? {});
    const bundles: Array<[file: string, manifest: string]> = [
      ...serviceDirs.map((s): [string, string] => [serviceBundlePath(REPO_ROOT, s), `services/${s}/package.json`]),
      ...['migrate', 'admin'].map((n): [string, string] => [scriptBundle(n), 'package.json']),
    ];
    const loaded = new Set<string>();
    const undeclared: string[] = [];
    for (const [file, manifest] of bundles) {
      const allowed = new Set([...own('package.json'), ...own(manifest)]);
      for (const p of packagesLoadedBy(file)) {
        loaded.add(p);
        if (!allowed.has(p)) undeclared.push(`${path.relative(REPO_ROOT, file)}: ${p}`);
      }
    }
    expect(undeclared).toEqual([]);
    // the other direction: nothing in "dependencies" that production does not load (it would ship in the image)
    const declared = [...own('package.json'), ...serviceDirs.flatMap((s) => own(`services/${s}/package.json`))];
    expect(declared.filter((d) => !loaded.has(d))).toEqual([]);
    // the reader sees what it should: the simulator's sharp, a package found by require.resolve (swagger-ui-dist)
    expect(packagesLoadedBy(serviceBundlePath(REPO_ROOT, 'upstream-sim'))).toContain('sharp');
    expect(packagesLoadedBy(serviceBundlePath(REPO_ROOT, 'api-edge'))).toContain('swagger-ui-dist');
    expect(Object.keys(root.devDependencies)).toEqual(expect.arrayContaining(['esbuild', 'tsx']));
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
    // built with the development dependencies (esbuild) of their own stage, which no running image copies
    expect(docker).toMatch(
      /^FROM app AS build\n(?:.*\n)*?COPY --from=deps-build \/app\/node_modules \.\/node_modules\n(?:.*\n)*?RUN node scripts\/build\.mjs$/m,
    );
    expect(docker.match(/--from=deps-build\b/g)).toHaveLength(1);
    // what scripts/build.mjs reads from the root (path.join(ROOT, '…')) is copied into the app or build stage
    const stageText = (name: string): string => docker.slice(docker.indexOf(`AS ${name}\n`), docker.indexOf('\nFROM ', docker.indexOf(`AS ${name}\n`)));
    const copied = [...`${stageText('app')}\n${stageText('build')}`.matchAll(/^COPY (?:--chown=\S+ )?(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
    const readByBuild = [...new Set([...read('scripts/build.mjs').matchAll(/path\.join\(ROOT, '([^']+)'/g)].map((m) => m[1]!))].filter((f) => f !== 'dist');
    expect(readByBuild).toEqual(expect.arrayContaining(['.node-version', 'tsconfig.json', 'services', 'scripts']));
    expect(readByBuild.filter((f) => !copied.includes(f))).toEqual([]);
    // no TypeScript run in the image: nothing outside comments names tsx
    expect(docker.split('\n').filter((l) => !l.trim().startsWith('#') && /\btsx\b/.test(l) && !/test ! -e node_modules\/tsx/.test(l))).toEqual([]);
    for (const stage of ['sim', 'runtime']) {
      const from = docker.indexOf(`AS ${stage}\n`);
      const next = docker.indexOf('\nFROM ', from);
      expect(docker.slice(from, next === -1 ? undefined : next)).toContain('COPY --from=build --chown=node:node /app/dist ./dist');
    }
  });
});
