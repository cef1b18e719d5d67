/**
 * The spine, end to end, with every part real: api-edge, worker-image and billing as separate processes,
 * the upstream simulator as a process, real Postgres and Redis. Driven over HTTP only (plus ledger queries).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { createRedis, createTaskQueue } from '@gmg/queue';
import { AccountRepository, ApiKeyRepository, GroupRepository } from '@gmg/db';
import { REPO_ROOT, deleteRedisPrefix, startSimStack, waitFor, TEST_REDIS_TARGET, type SimStack, type StackService, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const PRICE_LIST = JSON.parse(readFileSync(path.join(REPO_ROOT, 'infra/prices.json'), 'utf8')) as Array<{ key: string; price: number }>;
/** A price as infra/prices.json lists it, in minor units. */
const listedPrice = (key: string): bigint => BigInt(Math.round(PRICE_LIST.find((p) => p.key === key)!.price * 1_000_000));

describe('spine e2e: an image task travels through every service', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let prefix: string;
  let base: string;
  let worker: StackService;
  let key: string;
  let accountId: string;
  const accounts = () => new AccountRepository(db.dataSource);

  const submit = (body: unknown, apiKey = key) =>
    fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const getTask = async (id: string, apiKey = key) => {
    const r = await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return { status: r.status, body: (await r.json()) as any };
  };
  const waitTerminal = (id: string, timeoutMs: number) =>
    waitFor(
      async () => {
        const t = await getTask(id);
        return ['completed', 'failed'].includes(t.body.data?.status) ? t.body.data : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `task ${id} to end` },
    );
  /** `groupName`: e.g. a group without the default fair-use limits, for bursts that test something else. */
  const newFundedKey = async (balanceMinor: bigint, groupName?: string) => {
    if (groupName) await new GroupRepository(db.dataSource).upsert({ name: groupName, priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const a = await accounts().create({ name: `e2e-${balanceMinor}`, groupName });
    if (balanceMinor > 0n) await accounts().topup(a.id, balanceMinor);
    const k = await new ApiKeyRepository(db.dataSource).create({ accountId: a.id });
    return { accountId: a.id, key: k.secret };
  };

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_e2e', timeScale: '0.2' });
    ({ db, prefix } = stack);
    const [edge, imageWorker] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN }),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '5000' }),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
    worker = imageWorker;
    // the spine's own key is in a group without the default fair-use limits: its kill -9 test submits 20 tasks back to
    // back, which the default group's 20 requests/s would turn into 429s on a fast run (fair use has its own tests)
    ({ key, accountId } = await newFundedKey(1_000_000_000n, 'spine-unlimited'));
  });

  afterAll(async () => {
    await stack?.stop();
    // The stack's stop leaves no key of its prefix in the shared test Redis (nothing is left to delete).
    const redis = createRedis(TEST_REDIS_TARGET, 'client');
    try {
      expect(await deleteRedisPrefix(redis, prefix)).toBe(0);
    } finally {
      await redis.quit();
    }
  });

  it('completes lumen-2-pro 16:9 at 1MP within 10 s with a 1344x752 JPEG, charging exactly the quote', async () => {
    const body = { model: 'lumen-2-pro', prompt: 'a lighthouse at dusk', size: '16:9', resolution: '1MP' };
    const r = await submit(body);
    expect(r.status).toBe(200);
    const ack = (await r.json()) as any;
    expect(ack).toEqual({ code: 200, data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_/) }] });
    const id = ack.data[0].task_id;
    const task = await waitTerminal(id, 10_000);
    expect(task.status).toBe('completed');
    const img = await fetch(task.result.images[0].url);
    const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 1344, 752]);
    // the expected charge comes from the price table the operator wrote, not from the code under test
    const q = { total: listedPrice('lumen-2-pro@1MP') };
    expect(task.cost).toBe(Number(q.total) / 1_000_000);
    await waitFor(
      async () => {
        const rows = await db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [id]);
        return rows.length === 2 ? rows : undefined;
      },
      { timeoutMs: 10_000, what: 'capture' },
    ).then((rows: any[]) => {
      expect(rows).toEqual([
        { kind: 'hold', amount: q.total.toString() },
        { kind: 'capture', amount: q.total.toString() },
      ]);
    });
  });

  it('fails a [sim:fail] task with task_failed, cost 0, and puts the balance back', async () => {
    const before = (await accounts().get(accountId))!;
    const r = await submit({ model: 'lumen-2-flex', prompt: 'boom [sim:fail]' });
    const id = ((await r.json()) as any).data[0].task_id;
    const task = await waitTerminal(id, 15_000);
    expect(task.status).toBe('failed');
    expect(task.error.code).toBe('task_failed');
    expect(task.cost).toBe(0);
    const after = await waitFor(
      async () => {
        const a = (await accounts().get(accountId))!;
        return a.held === before.held && a.available === before.available ? a : undefined;
      },
      { timeoutMs: 10_000, what: 'release' },
    );
    expect(after.spent).toBe(before.spent);
    const kinds = await db.dataSource.query(`SELECT kind FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [id]);
    expect(kinds.map((k: any) => k.kind)).toEqual(['hold', 'release']);
  });

  it('answers 402 payment_required on a low balance with no task row, no job and no ledger entry', async () => {
    const poor = await newFundedKey(1n);
    const redis = createRedis(TEST_REDIS_TARGET, 'worker');
    const queue = createTaskQueue('image', redis, prefix);
    try {
      // The pool's sweep scheduler keeps one delayed job in this queue and re-adds it after every sweep, so the
      // count moves on its own: what must not appear is a task job that was not there before.
      const taskJobIds = async () =>
        new Set((await queue.getJobs(['waiting', 'delayed', 'prioritized', 'paused', 'active'])).filter((j) => j && j.name !== 'sweep').map((j) => j.id));
      const jobsBefore = await taskJobIds();
      const r = await submit({ model: 'lumen-2-max', prompt: 'too expensive' }, poor.key);
      expect(r.status).toBe(402);
      expect(await r.json()).toEqual({ error: { code: 402, message: expect.any(String), type: 'payment_required' } });
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [poor.accountId]);
      const [{ m }] = await db.dataSource.query(`SELECT count(*)::int AS m FROM ledger_entries WHERE account_id = $1 AND kind <> 'topup'`, [poor.accountId]);
      expect([n, m]).toEqual([0, 0]);
      expect([...(await taskJobIds())].filter((id) => !jobsBefore.has(id))).toEqual([]);
    } finally {
      await queue.close();
      await redis.quit();
    }
  });

  it('loses nothing when the image worker is killed -9 with 20 tasks in flight: all complete, each captured once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await submit({ model: 'lumen-2-pro', prompt: `slow ${i} [sim:slow]`, resolution: '1MP' });
      expect(r.status).toBe(200);
      ids.push(((await r.json()) as any).data[0].task_id);
    }
    // in flight: every task was taken by the worker and sent upstream
    await waitFor(
      async () => {
        const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'processing'`, [ids]);
        return n === 20;
      },
      { timeoutMs: 20_000, what: '20 tasks processing' },
    );
    const pid = worker.proc.proc.pid!;
    await worker.proc.kill9();
    expect(() => process.kill(pid, 0)).toThrow(); // really gone
    const [{ open }] = await db.dataSource.query(`SELECT count(*)::int AS open FROM tasks WHERE id = ANY($1) AND status <> 'completed'`, [ids]);
    expect(open).toBeGreaterThan(0); // the kill happened with work in flight
    worker = await stack.restart(worker);
    await waitFor(
      async () => {
        const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'completed'`, [ids]);
        return n === 20;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: '20 tasks completed after the restart' },
    );
    const rows = await waitFor(
      async () => {
        const r = await db.dataSource.query(
          `SELECT task_id, count(*) FILTER (WHERE kind = 'capture')::int AS captures,
                count(*) FILTER (WHERE kind = 'release')::int AS releases
         FROM ledger_entries WHERE task_id = ANY($1) GROUP BY task_id`,
          [ids],
        );
        return r.length === 20 && r.every((x: any) => x.captures === 1) ? r : undefined;
      },
      { timeoutMs: 20_000, what: 'captures' },
    );
    expect(rows.every((x: any) => x.captures === 1 && x.releases === 0)).toBe(true);
    // and the account's money agrees with its ledger: nothing held, balance = topups − captures
    await waitFor(
      async () => {
        const [{ held }] = await db.dataSource.query(`SELECT held::text FROM accounts a JOIN tasks t ON t.account_id = a.id WHERE t.id = $1`, [ids[0]]);
        return held === '0' ? true : undefined;
      },
      { timeoutMs: 20_000, what: 'nothing held' },
    );
    const [acct] = await db.dataSource.query(
      `SELECT a.available::text, a.held::text,
              (SELECT sum(amount) FILTER (WHERE kind = 'topup') - COALESCE(sum(amount) FILTER (WHERE kind = 'capture'), 0)
               FROM ledger_entries l WHERE l.account_id = a.id)::text AS balance
       FROM accounts a JOIN tasks t ON t.account_id = a.id WHERE t.id = $1`,
      [ids[0]],
    );
    expect(BigInt(acct.available) + BigInt(acct.held)).toBe(BigInt(acct.balance));
  });

  it('accepts exactly 10 of 200 concurrent submits against a balance that covers 10', async () => {
    const body = { model: 'lumen-2-flex', prompt: 'race', resolution: '1MP' };
    const price = listedPrice('lumen-2-flex@1MP');
    const racer = await newFundedKey(price * 10n, 'race-unlimited');
    const statuses = await Promise.all(Array.from({ length: 200 }, () => submit(body, racer.key).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(190);
    const a = (await accounts().get(racer.accountId))!;
    expect(a.available).toBe(0n);
    expect(a.held + a.spent).toBe(price * 10n);
  });
});
