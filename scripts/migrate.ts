/**
 * Applies pending migrations to DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gmg) and exits.
 * Used by `npm run migrate`, `npm start`, the docker-compose `migrate` one-shot and the Kubernetes migration Job.
 * MIGRATE_CREATE_DATABASE=1 creates the database first when it is missing (local use; off in Kubernetes).
 * PRICES_FILE=path also upserts the price list from that file afterwards (idempotent; compose and the Job set it).
 */
import { loadPrices } from '@gmg/db';
import { ensureDatabase, migrate, redactUrl } from './lib/db-setup';

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gmg';
  if (/^(1|true|yes)$/i.test(process.env.MIGRATE_CREATE_DATABASE ?? '')) {
    if (await ensureDatabase(url)) console.log(`migrate: created database of ${redactUrl(url)}`);
  }
  const { ds, applied } = await migrate(url);
  try {
    console.log(applied.length ? `migrate: applied ${applied.join(', ')}` : 'migrate: schema up to date');
    if (process.env.PRICES_FILE) console.log(`migrate: ${await loadPrices(ds, process.env.PRICES_FILE)} prices loaded from ${process.env.PRICES_FILE}`);
  } finally {
    await ds.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(`migrate: failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
