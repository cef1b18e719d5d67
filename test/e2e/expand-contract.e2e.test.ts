/**
 * Expand/contract, tested: the PREVIOUS release (the commit before this build's newest migration was added, checked
 * out from git into a temporary worktree) runs its edge, image worker and billing on a database at its own schema and
 * keeps submitting and finishing tasks while THIS build's migrations are applied to that database. Every task of the
 * old release must be accepted, finish and be captured exactly once — before, during and after the migration.
 * PREVIOUS_RELEASE=<commit> picks the old release explicitly.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createMigrationDataSource, pendingMigrations, runMigrations } from '@gmg/db';
import {
  REPO_ROOT,
  TEST_PG_ADMIN_URL,
  TEST_REDIS_URL,
  freePort,
  startService,
  testResultEnv,
  uniqueRedisPrefix,
  uniqueSuffix,
  waitFor,
  type ServiceProcess,
} from '@gmg/testing';

const git = (...args: string[]): string => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();

/** The commit before the newest migration of this build appeared (or PREVIOUS_RELEASE). */
function previousRelease(): string {
  if (process.env.PREVIOUS_RELEASE) return git('rev-parse', process.env.PREVIOUS_RELEASE);
  const newest = readdirSync(path.join(REPO_ROOT, 'libs/db/src/migrations'))
    .filter((f) => /^\d{13}-/.test(f))
    .sort()
    .pop()!;
  // along main's own line (a migration that came in by a merge, or was renamed there, is added by that merge)
  const added = git('log', '--first-parent', '-m', '--no-renames', '--diff-filter=A', '--format=%H', '-1', '--', `libs/db/src/migrations/${newest}`);
  return git('rev-parse', added ? `${added}^` : 'HEAD');
}

/** node_modules for the old tree: every package of ours, but @gmg/* pointing at the OLD tree's libs. */
function linkModules(oldRoot: string): void {
  const nm = path.join(oldRoot, 'node_modules');
  mkdirSync(path.join(nm, '@gmg'), { recursive: true });
  for (const e of readdirSync(path.join(REPO_ROOT, 'node_modules'))) {
    if (e !== '@gmg') symlinkSync(path.join(REPO_ROOT, 'node_modules', e), path.join(nm, e));
  }
  for (const lib of readdirSync(path.join(oldRoot, 'libs'))) symlinkSync(path.join(oldRoot, 'libs', lib), path.join(nm, '@gmg', lib));
}

describe('expand/contract: the previous release keeps working while the next migration applies', () => {
  const old = { root: '', sha: '', procs: [] as ChildProcess[] };
  let sim: ServiceProcess | undefined;
  let dbName = '';
  let directUrl = '';
  let base = '';
  const apiKey = `sk-prev-${uniqueSuffix()}`;

  const startOld = async (service: string, env: Record<string, string>, health: string): Promise<void> => {
    const p = spawn(process.execPath, ['--import', 'tsx', path.join(old.root, 'services', service, 'src', 'main.ts')], {
      cwd: old.root,
      // the result store every release since issue 34 requires (a test directory and key, as startService gives them)
      env: { ...process.env, LOG_LEVEL: 'warn', ...testResultEnv(), ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    old.procs.push(p);
    await waitFor(async () => (await fetch(health).catch(() => undefined))?.ok, { timeoutMs: 240_000, intervalMs: 250, what: `old ${service}` });
  };

  beforeAll(async () => {
    old.sha = previousRelease();
    old.root = mkdtempSync(path.join(tmpdir(), 'gmg-prev-'));
    rmSync(old.root, { recursive: true });
    git('worktree', 'add', '--detach', old.root, old.sha);
    linkModules(old.root);
    dbName = `gmg_prev_${uniqueSuffix()}`;
    const u = new URL(TEST_PG_ADMIN_URL);
    u.pathname = `/${dbName}`;
    directUrl = u.toString();
    const [simPort, edgePort, workerPort, billingPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    sim = await startService('upstream-sim', { PORT: String(simPort), SIM_TIME_SCALE: '0.1' }, `http://127.0.0.1:${simPort}/healthz`, 240_000);
    // The old release's own migrations, prices and a funded demo key (its scripts/migrate.ts, as its Job ran it).
    execFileSync(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: old.root,
      stdio: 'inherit',
      env: {
        ...process.env,
        DATABASE_URL: directUrl,
        MIGRATE_CREATE_DATABASE: '1',
        PRICES_FILE: path.join(old.root, 'infra/prices.json'),
        DEMO_API_KEY: apiKey,
        DEMO_BALANCE: '1000',
        DEMO_CHANNEL_URL: `http://127.0.0.1:${simPort}`,
      },
    });
    // the result store settings too: a release that keeps vendor results needs RESULT_SIGNING_KEY to start at all
    const common = { DATABASE_URL: directUrl, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: uniqueRedisPrefix(), ...testResultEnv() };
    await Promise.all([
      startOld('api-edge', { ...common, PORT: String(edgePort), ADMIN_TOKEN: 'prev-admin-token-0123456789abcdef' }, `http://127.0.0.1:${edgePort}/healthz`),
      startOld('worker-image', { ...common, HEALTH_PORT: String(workerPort), POLL_INTERVAL_SCALE: '0.1' }, `http://127.0.0.1:${workerPort}/healthz`),
      startOld(
        'billing',
        { ...common, HEALTH_PORT: String(billingPort), SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' },
        `http://127.0.0.1:${billingPort}/healthz`,
      ),
    ]);
    base = `http://127.0.0.1:${edgePort}`;
  }, 600_000);

  afterAll(async () => {
    for (const p of old.procs) p.kill('SIGKILL');
    await sim?.stop();
    if (dbName) {
      const c = new Client({ connectionString: TEST_PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => c.end());
    }
    if (old.root && existsSync(old.root)) git('worktree', 'remove', '--force', old.root);
  }, 60_000);

  it('accepts, finishes and captures every task of the old release before, during and after the migration', async () => {
    const submitted: Array<{ id: string; phase: string }> = [];
    let phase = 'before';
    let stop = false;
    const loop = (async () => {
      for (let i = 0; i < 400 && !stop; i++) {
        const r = await fetch(`${base}/v1/images/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'lumen-2-flex', prompt: `expand-contract ${i}` }),
        });
        const body = (await r.json()) as { data?: Array<{ task_id: string }> };
        expect({ i, phase, status: r.status }).toEqual({ i, phase, status: 200 });
        submitted.push({ id: body.data![0]!.task_id, phase });
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    await waitFor(() => submitted.length >= 3, { timeoutMs: 60_000, what: 'tasks before the migration' });
    // This build's migrations, as its Job applies them: direct, no statement timeout, a short lock timeout.
    const migrator = createMigrationDataSource(directUrl);
    await migrator.initialize();
    const pending = await pendingMigrations(migrator);
    phase = 'during';
    const applied = await runMigrations(migrator);
    phase = 'after';
    expect(applied).toEqual(pending);
    expect(applied.length).toBeGreaterThan(0);
    const duringOrBefore = submitted.length;
    await waitFor(() => submitted.length >= duringOrBefore + 3, { timeoutMs: 60_000, what: 'tasks after the migration' });
    stop = true;
    await loop;
    // every task the old release accepted ends completed with exactly one hold and one capture
    const ids = submitted.map((s) => s.id);
    await waitFor(
      async () => {
        const rows = (await migrator.query(
          `SELECT t.id, t.status, array_agg(l.kind ORDER BY l.kind) AS kinds FROM tasks t LEFT JOIN ledger_entries l ON l.task_id = t.id
         WHERE t.id = ANY($1) GROUP BY t.id, t.status`,
          [ids],
        )) as Array<{ id: string; status: string; kinds: string[] }>;
        return rows.length === ids.length && rows.every((r) => r.status === 'completed' && r.kinds.join() === 'capture,hold');
      },
      { timeoutMs: 120_000, intervalMs: 500, what: `all ${ids.length} tasks completed and captured once` },
    );
    await migrator.destroy();
  }, 600_000);
});
