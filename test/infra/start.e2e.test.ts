/**
 * `npm start` end to end: scripts/start.ts --smoke brings up every service and the simulator on free ports against
 * a fresh database and a unique queue prefix, submits one lumen-2-pro image through HTTP, polls it to `completed`,
 * makes one chat call (POST /v1/messages, the vendor's headers),
 * then shuts everything down gracefully and exits 0. The services run from their bundles (scripts/build.mjs).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { SERVICE_NODE_FLAGS } from '@gmg/config';
import { TEST_PG_ADMIN_URL, TEST_REDIS_URL, uniqueSuffix } from '@gmg/testing';
import { LOCAL_SERVICES, portOverrideVar } from '../../scripts/lib/services';

const ROOT = path.resolve(__dirname, '../..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('npm start (scripts/start.ts --smoke)', () => {
  const dbName = `gmg_start_${uniqueSuffix()}`;
  const prefix = `gmgstart${uniqueSuffix()}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gmg-start-'));

  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    const admin = new Client({ connectionString: TEST_PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
    const r = new Redis(TEST_REDIS_URL);
    const keys = await r.keys(`${prefix}:*`);
    if (keys.length) await r.del(...keys);
    r.disconnect();
  });

  it('starts every service, completes a lumen-2-pro image through the public API, and exits 0 on shutdown', async () => {
    const pricesFile = path.join(dataDir, 'prices.json');
    const chatPrices = ['input', 'output', 'cache_write', 'cache_read'].map((k) => ({ key: `lumen-chat-1@${k}`, price: 3, description: 'e2e' }));
    writeFileSync(pricesFile, JSON.stringify([{ key: 'lumen-2-pro', price: 0.05, description: 'e2e' }, ...chatPrices]));
    const ports: Record<string, string> = {};
    for (const s of LOCAL_SERVICES) ports[portOverrideVar(s.name)] = String(await freePort());
    const dbUrl = new URL(TEST_PG_ADMIN_URL);
    dbUrl.pathname = `/${dbName}`;

    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', '--smoke'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...ports,
        DATABASE_URL: dbUrl.toString(),
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: prefix,
        GMG_DATA_DIR: dataDir,
        PRICES_FILE: pricesFile,
        LOG_LEVEL: 'warn',
        NO_COLOR: '1',
        STOP_TIMEOUT_MS: '15000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));

    // a failure shows the log's end in the assertion itself (a CI log cut to its last lines still has it)
    expect({ code, log: code === 0 ? '' : out.split('\n').slice(-60).join('\n') }).toEqual({ code: 0, log: '' });
    for (const s of LOCAL_SERVICES) expect(out).toMatch(new RegExp(`ready +${s.name} `));
    // Every service ran as production runs it: its bundle, built first, under the production flags.
    expect(out).toMatch(new RegExp(`build: ${LOCAL_SERVICES.length} service bundle\\(s\\) in dist/services/`));
    for (const s of LOCAL_SERVICES)
      expect(out).toContain(`run       ${s.name.padEnd(13)} node ${SERVICE_NODE_FLAGS.join(' ')} dist/services/${s.name}/main.js`);
    expect(out).toMatch(/smoke: OK task=task_\w+ status=completed/);
    // chat works on first start: the seeded messages channel to the simulator answers a vendor-style call
    expect(out).toMatch(/smoke: chat OK 200 \{"id":"msg_/);
    expect(out).toContain('stopped');
    // The generated secrets were persisted where GMG_DATA_DIR says, and printed.
    const saved = JSON.parse(readFileSync(path.join(dataDir, 'demo.json'), 'utf8')) as { demoApiKey: string; adminToken: string };
    expect(saved.demoApiKey).toMatch(/^sk-[A-Za-z0-9]{40}$/);
    expect(out).toContain(`Demo API key: ${saved.demoApiKey}`);
    expect(out).toContain(`Admin token:  ${saved.adminToken}`);
  }, 180_000);
});
