/**
 * Applies pending migrations to MIGRATION_DATABASE_URL — the direct Postgres endpoint, never PgBouncer's transaction
 * pool — or, when unset, DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gmg), and exits.
 * Used by `npm run migrate`, `npm start`, the docker-compose `migrate` one-shot and the Kubernetes migration Job.
 * MIGRATE_CREATE_DATABASE=1 creates the database first when it is missing (local use; off in Kubernetes).
 * PRICES_FILE=path also upserts the price list from that file afterwards (idempotent; compose and the Job set it).
 * DEMO_API_KEY=sk-… also seeds the demo account (balance DEMO_BALANCE, default 100), that key and a channel to
 * DEMO_CHANNEL_URL (default http://upstream-sim:9090): docker compose sets them so `compose up` is usable at once.
 * `--wait` applies nothing: it waits (at most MIGRATE_WAIT_SECONDS, default 1800) until every migration this build
 * knows is applied, then exits 0 — the init container of every Deployment, so no pod of a release starts before the
 * migration Job has brought the schema to it (k8s/base/migrate-job.yaml).
 */
import { toMinor } from '@gmg/contracts';
import { createDataSource, loadPrices, pendingMigrations, seedDemo } from '@gmg/db';
import { ensureDatabase, migrate, redactUrl } from './lib/db-setup';

async function waitForSchema(): Promise<void> {
  const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/gmg';
  const deadline = Date.now() + Number(process.env.MIGRATE_WAIT_SECONDS ?? 1800) * 1000;
  const ds = createDataSource({ url, poolSize: 1, applicationName: 'gmg-wait-schema' });
  try {
    for (let round = 0; Date.now() < deadline; round++) {
      const pending = await (ds.isInitialized ? Promise.resolve(ds) : ds.initialize()).then(pendingMigrations, (e: Error) => [`(no answer: ${e.message})`]);
      if (!pending.length) return void console.log('migrate --wait: schema up to date');
      if (round % 12 === 0) console.log(`migrate --wait: waiting for ${pending.join(', ')}`);
      await new Promise((r) => setTimeout(r, 5000));
    }
    throw new Error('the schema did not reach this release in time (is the migration Job running?)');
  } finally {
    if (ds.isInitialized) await ds.destroy();
  }
}

const USAGE = `Usage: node dist/scripts/migrate.js [--wait]     (in a checkout: npm run migrate [-- --wait])
  (no flag)  apply pending migrations to MIGRATION_DATABASE_URL, else DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gmg)
  --wait     apply nothing: wait until every migration of this build is applied (MIGRATE_WAIT_SECONDS, default 1800)
Environment: MIGRATE_CREATE_DATABASE=1, PRICES_FILE, DEMO_API_KEY, DEMO_BALANCE, DEMO_CHANNEL_URL (see docs/operations.md).`;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) return void console.log(USAGE);
  // an unknown flag never falls through to migrating the default database
  const unknown = args.filter((a) => a !== '--wait');
  if (unknown.length) {
    console.error(`migrate: unknown argument ${unknown.join(' ')}\n${USAGE}`);
    process.exit(2);
  }
  if (args.includes('--wait')) return waitForSchema();
  const url = process.env.MIGRATION_DATABASE_URL || process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/gmg';
  if (/^(1|true|yes)$/i.test(process.env.MIGRATE_CREATE_DATABASE ?? '')) {
    if (await ensureDatabase(url)) console.log(`migrate: created database of ${redactUrl(url)}`);
  }
  const { ds, applied } = await migrate(url);
  try {
    console.log(applied.length ? `migrate: applied ${applied.join(', ')}` : 'migrate: schema up to date');
    if (process.env.PRICES_FILE) console.log(`migrate: ${await loadPrices(ds, process.env.PRICES_FILE)} prices loaded from ${process.env.PRICES_FILE}`);
    if (process.env.DEMO_API_KEY) {
      const channelBaseUrl = process.env.DEMO_CHANNEL_URL ?? 'http://upstream-sim:9090';
      await seedDemo(ds, { apiKey: process.env.DEMO_API_KEY, balanceMinor: toMinor(Number(process.env.DEMO_BALANCE ?? 100)), channelBaseUrl });
      console.log(`migrate: demo account, key and channels (tasks and chat, ${channelBaseUrl}) seeded`);
    }
  } finally {
    await ds.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(`migrate: failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
