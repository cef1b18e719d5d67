/**
 * Issue 38: a black-holed Redis (packets dropped, not refused) between the edge and Redis. A submit never hangs: one
 * that passed the check before the hold is accepted within the command timeout (its enqueue timed out after the
 * money commit) and the worker's reconciler queues it later — it completes and is settled once; once the edge has
 * noticed, a submit is refused with a 503 in the spec's error shape before any money moves. Every process is real:
 * the edge reaches Redis through a TCP proxy that the test black-holes; the worker and billing reach it directly.
 */
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { TEST_REDIS_URL, startBlackHoleProxy, startSimStack, waitFor, type BlackHoleProxy, type SimStack } from '@gmg/testing';

const COMMAND_TIMEOUT_MS = 1000;
// the proxy stands for one server: on the Redis Cluster run (TEST_REDIS_CLUSTER_NODES) this suite is skipped
const onCluster = Boolean(process.env.TEST_REDIS_CLUSTER_NODES);

(onCluster ? describe.skip : describe)('a black-holed Redis between the edge and Redis (issue 38)', () => {
  let stack: SimStack;
  let proxy: BlackHoleProxy;
  let base: string;

  const newKey = async (balanceMinor: bigint): Promise<{ accountId: string; key: string }> => {
    const accounts = new AccountRepository(stack.db.dataSource);
    const a = await accounts.create({ name: `black-hole-${balanceMinor}` });
    if (balanceMinor > 0n) await accounts.topup(a.id, balanceMinor);
    return { accountId: a.id, key: (await new ApiKeyRepository(stack.db.dataSource).create({ accountId: a.id })).secret };
  };
  const submit = async (key: string): Promise<{ status: number; body: any; ms: number }> => {
    const t0 = Date.now();
    const r = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-2-flex', prompt: 'a lighthouse at dusk', resolution: '1MP' }),
    });
    return { status: r.status, body: await r.json(), ms: Date.now() - t0 };
  };
  const ledger = async (accountId: string): Promise<Record<string, number>> => {
    const rows: Array<{ kind: string; n: number }> = await stack.db.dataSource.query(
      `SELECT kind, count(*)::int AS n FROM ledger_entries WHERE account_id = $1 GROUP BY kind`,
      [accountId],
    );
    return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
  };

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_e2e', timeScale: '0.2' });
    proxy = await startBlackHoleProxy({ port: Number(new URL(TEST_REDIS_URL).port || 6379), host: new URL(TEST_REDIS_URL).hostname });
    const [edge] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN: 'e2e-admin-token-0123456789', REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) }),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000' }),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
  }, 120_000);

  afterAll(async () => {
    proxy?.restore();
    await stack?.stop();
    await proxy?.close();
  });

  it('accepts within the command timeout, then refuses with 503 before any hold; the accepted task is reconciled and settled once', async () => {
    const paying = await newKey(1_000_000_000n);
    const broke = await newKey(0n);
    // the path works: a submit is queued and a zero-balance one is refused for its balance (402), after the check
    expect((await submit(paying.key)).status).toBe(200);
    expect((await submit(broke.key)).status).toBe(402);

    proxy.blackHole();
    // 1. at once (before the edge can have noticed): the hold is committed, the enqueue times out — still accepted,
    // within the command timeouts (the rate limiter's and the enqueue's), never hanging
    const accepted = await submit(paying.key);
    expect(accepted.status).toBe(200);
    expect(accepted.ms).toBeLessThan(3 * COMMAND_TIMEOUT_MS + 2000);
    const acceptedId = accepted.body.data[0].task_id as string;

    // 2. once the edge has noticed (probed without moving money: a zero-balance submit is refused by the check, not
    // for its balance), a paying submit is refused fast, in the spec's error shape, and holds nothing
    await waitFor(async () => (await submit(broke.key)).status === 503 || undefined, { timeoutMs: 20_000, intervalMs: 200, what: 'the edge to notice' });
    const before = await ledger(paying.accountId);
    const refused = await submit(paying.key);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: expect.objectContaining({ type: expect.any(String), message: expect.stringMatching(/nothing was charged/) }) });
    expect(refused.ms).toBeLessThan(2 * COMMAND_TIMEOUT_MS + 2000);
    expect(await ledger(paying.accountId)).toEqual(before);

    // 3. the accepted task is not lost: the worker (its own path to Redis) re-queues it from Postgres, it completes,
    // and billing captures it once
    const done = await waitFor(
      async () => {
        const [row] = await stack.db.dataSource.query(`SELECT status, settled_at FROM tasks WHERE id = $1`, [acceptedId]);
        return row?.settled_at ? row : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: `task ${acceptedId} completed and settled` },
    );
    expect(done.status).toBe('completed');
    const [entries] = await stack.db.dataSource.query(
      `SELECT count(*) FILTER (WHERE kind = 'hold')::int AS holds, count(*) FILTER (WHERE kind = 'capture')::int AS captures,
              count(*) FILTER (WHERE kind = 'release')::int AS releases FROM ledger_entries WHERE task_id = $1`,
      [acceptedId],
    );
    expect(entries).toEqual({ holds: 1, captures: 1, releases: 0 });

    // 4. the path back: the edge answers submits again
    proxy.restore();
    await waitFor(async () => (await submit(broke.key)).status === 402 || undefined, { timeoutMs: 20_000, intervalMs: 200, what: 'the edge to recover' });
  }, 180_000);
});
