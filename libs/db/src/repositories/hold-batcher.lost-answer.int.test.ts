import net from 'node:net';
import { once } from 'node:events';
import type { DataSource } from 'typeorm';
import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import { createDataSource } from '../data-source';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { HoldBatchingTaskRepository } from './hold-batcher';

/**
 * A TCP hop in front of Postgres that, once armed, drops the next answer coming back from the server and cuts that
 * connection: the statement ran and committed, its caller sees only "Connection terminated" — what a pooler or
 * Postgres restart does to a statement in flight.
 */
async function lossyHop(target: URL): Promise<{ url: (db: string) => string; arm(): void; cuts: () => number; close(): Promise<void> }> {
  let armed = false;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (armed) {
        armed = false;
        cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(d);
    });
    for (const s of [client, upstream])
      s.on('error', () => undefined).on('close', () => {
        client.destroy();
        upstream.destroy();
      });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (db) => `postgres://${target.username || 'postgres'}@127.0.0.1:${port}/${db}`,
    arm: () => (armed = true),
    cuts: () => cuts,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('a hold whose answer was lost with its connection (HoldBatchingTaskRepository, real Postgres)', () => {
  let db: TestDatabase;
  let hop: Awaited<ReturnType<typeof lossyHop>>;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    hop = await lossyHop(new URL(db.url));
    ds = createDataSource({ url: hop.url(db.name), poolSize: 2, applicationName: 'gmg-test-lossy' });
    await ds.initialize();
  });
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy().catch(() => undefined);
    await hop?.close();
    await db?.drop();
  });

  it('is answered with its task even when the hold it made left too little for the retry (never a 402 for a task that exists)', async () => {
    const accounts = new AccountRepository(db.dataSource);
    const accountId = (await accounts.create({ name: 'lossy-exact' })).id;
    const apiKeyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
    await accounts.topup(accountId, 70n); // exactly the price: after the first (committed) hold, the retry's would fail
    const repo = new HoldBatchingTaskRepository(ds);
    const task = testTask({ accountId, apiKeyId }, 70n);
    const cutsBefore = hop.cuts();

    hop.arm();
    const made = await repo.createWithHold(task);

    expect(hop.cuts()).toBe(cutsBefore + 1);
    expect(made.id).toBe(task.id);
    const holds = await db.dataSource.query(`SELECT amount::text FROM ledger_entries WHERE task_id = $1 AND kind = 'hold'`, [task.id]);
    expect(holds).toEqual([{ amount: '70' }]);
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([0n, 70n]);
  });

  it('is answered with the task it wrote, held once — never an error for a task that exists', async () => {
    const accounts = new AccountRepository(db.dataSource);
    const accountId = (await accounts.create({ name: 'lossy' })).id;
    const apiKeyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
    await accounts.topup(accountId, 1_000n);
    const repo = new HoldBatchingTaskRepository(ds);
    const task = testTask({ accountId, apiKeyId }, 70n);

    hop.arm();
    const made = await repo.createWithHold(task);

    expect(hop.cuts()).toBeGreaterThan(0); // the first answer was lost
    expect(made.id).toBe(task.id);
    const holds = await db.dataSource.query(`SELECT amount::text FROM ledger_entries WHERE task_id = $1 AND kind = 'hold'`, [task.id]);
    expect(holds).toEqual([{ amount: '70' }]);
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([930n, 70n]);
  });
});
