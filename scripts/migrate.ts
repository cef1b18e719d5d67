/**
 * Applies pending migrations to DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gmg) and exits.
 * Used by `npm run migrate`, `npm start`, the docker-compose `migrate` one-shot and the Kubernetes migration Job.
 * MIGRATE_CREATE_DATABASE=1 creates the database first when it is missing (local use; off in Kubernetes).
 * PRICES_FILE=path also upserts the price list from that file afterwards (idempotent; compose and the Job set it).
 * DEMO_API_KEY=sk-… also seeds the demo account (balance DEMO_BALANCE, default 100), that key and a channel to
 * DEMO_CHANNEL_URL (default http://upstream-sim:9090): docker compose sets them so `compose up` is usable at once.
 */
import { toMinor } from '@gmg/contracts';
import { loadPrices, seedDemo } from '@gmg/db';
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
