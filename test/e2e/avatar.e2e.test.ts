/**
 * Avatar assets end to end (issue 9), every part real: api-edge, worker-avatar, worker-video and billing as separate
 * processes, the upstream simulator as a process, real Postgres and Redis. Driven over HTTP (plus ledger queries).
 */
import { toMinor } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, PriceRepository } from '@gmg/db';
import { startSimStack, waitFor, type SimStack, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const IMG = (i: number) => `https://cdn.example.com/avatar/${i}.png`;

describe('avatar assets e2e: review batches, bill per approved asset, render them with motion-2.0', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let base: string;
  let assetPrice: bigint;

  const call = async (method: string, p: string, key: string, body?: unknown) => {
    const r = await fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const submitAssets = (key: string, body: unknown) => call('POST', '/v1/motion2/private-avatar', key, body);
  const waitTerminal = (id: string, key: string, timeoutMs = 20_000) =>
    waitFor(
      async () => {
        const t = await call('GET', `/v1/tasks/${id}`, key);
        return ['completed', 'failed'].includes(t.body.data?.status) ? t.body.data : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `task ${id} to end` },
    );
  const ledgerOf = (taskId: string, count: number) =>
    waitFor(
      async () => {
        const rows = await db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId]);
        return rows.length === count ? rows : undefined;
      },
      { timeoutMs: 10_000, what: `${count} ledger entries of ${taskId}` },
    );
  const moneyOf = async (accountId: string) => {
    const a = (await new AccountRepository(db.dataSource).get(accountId))!;
    return { available: a.available, held: a.held, spent: a.spent };
  };
  const newCustomer = async () => {
    const accounts = new AccountRepository(db.dataSource);
    const a = await accounts.create({ name: 'avatar-e2e' });
    await accounts.topup(a.id, toMinor(100));
    const k = await new ApiKeyRepository(db.dataSource).create({ accountId: a.id });
    return { accountId: a.id, key: k.secret };
  };
  const taskRows = async (accountId: string) =>
    Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_e2e_avatar', timeScale: '0.2' });
    db = stack.db;
    assetPrice = (await new PriceRepository(db.dataSource).table()).get('avatar-asset@image')!;
    const worker = { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '5000' };
    const [edge] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN }),
      stack.start('worker-avatar', worker),
      stack.start('worker-video', worker),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('a batch of 3 in a new group completes with 3 usable assets; motion-2.0 renders one; another account cannot use it', async () => {
    const owner = await newCustomer();
    const ack = await submitAssets(owner.key, {
      group: { name: 'presenters', description: 'people who present' },
      assets: [0, 1, 2].map((i) => ({ url: IMG(i), name: `presenter ${i}` })),
    });
    expect(ack.status).toBe(200);
    expect(ack.body).toEqual({
      code: 200,
      data: {
        id: expect.stringMatching(/^task_/),
        object: 'motion.avatar.asset.task',
        status: 'processing',
        progress: expect.any(Number),
        model: 'motion-2.0',
      },
    });
    const batch = await waitTerminal(ack.body.data.id, owner.key);
    expect(batch.status).toBe('completed');
    expect(batch.result.assets).toHaveLength(3);
    expect(batch.result.usable_assets).toHaveLength(3);
    for (const a of batch.result.usable_assets) {
      expect(a).toEqual({ asset_id: expect.stringMatching(/^asset_/), asset_url: `asset://${a.asset_id}`, status: 'Active' });
    }
    expect(batch.cost).toBe(Number(3n * assetPrice) / 1e6);
    expect(await ledgerOf(batch.id, 2)).toEqual([
      { kind: 'hold', amount: (3n * assetPrice).toString() },
      { kind: 'capture', amount: (3n * assetPrice).toString() },
    ]);

    const groups = await call('GET', '/v1/motion2/groups', owner.key);
    expect(groups.body.data.items).toEqual([expect.objectContaining({ name: 'presenters', description: 'people who present', asset_count: 3 })]);
    const listed = await call('GET', `/v1/motion2/assets?group_id=${groups.body.data.items[0].id}&status=Active`, owner.key);
    expect(listed.body.data.items.map((a: any) => a.asset_id).sort()).toEqual(batch.result.usable_assets.map((a: any) => a.asset_id).sort());

    const assetUrl = batch.result.usable_assets[0].asset_url;
    const video = await call('POST', '/v1/videos/generations', owner.key, { model: 'motion-2.0', prompt: 'wave hello', asset_urls: [assetUrl], duration: 2 });
    expect(video.status).toBe(200);
    const rendered = await waitTerminal(video.body.data[0].task_id, owner.key, 30_000);
    expect(rendered.status).toBe('completed');
    expect(rendered.result.videos[0].url[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\/.+\.mp4$/);
    // where a client naturally puts an image (issue 27): the same asset in image_urls renders too
    const viaImages = await call('POST', '/v1/videos/generations', owner.key, {
      model: 'motion-2.0',
      prompt: 'wave hello',
      image_urls: [assetUrl],
      duration: 2,
    });
    expect(viaImages.status).toBe(200);
    expect((await waitTerminal(viaImages.body.data[0].task_id, owner.key, 30_000)).status).toBe('completed');

    const thief = await newCustomer();
    const before = await moneyOf(thief.accountId);
    const stolen = await call('POST', '/v1/videos/generations', thief.key, { model: 'motion-2.0', prompt: 'wave hello', asset_urls: [assetUrl] });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('asset_urls.0') });
    expect(await moneyOf(thief.accountId)).toEqual(before);
    expect(await taskRows(thief.accountId)).toBe(0);
  }, 90_000);

  it('a batch of 3 with one [sim:moderation] name: 2 usable, 1 Rejected with a reason, only the 2 approved charged', async () => {
    const c = await newCustomer();
    const before = await moneyOf(c.accountId);
    const ack = await submitAssets(c.key, {
      assets: [
        { url: IMG(0), name: 'ok one' },
        { url: IMG(1), name: 'bad one [sim:moderation]' },
        { url: IMG(2), name: 'ok two' },
      ],
    });
    expect(ack.status).toBe(200);
    const batch = await waitTerminal(ack.body.data.id, c.key);
    expect(batch.status).toBe('completed');
    expect(batch.result.assets.map((a: any) => a.status)).toEqual(['Active', 'Rejected', 'Active']);
    expect(batch.result.assets[1].reason).toEqual(expect.stringMatching(/moderation/i));
    expect(batch.result.usable_assets.map((a: any) => a.asset_id)).toEqual([batch.result.assets[0].asset_id, batch.result.assets[2].asset_id]);
    expect(batch.cost).toBe(Number(2n * assetPrice) / 1e6);
    expect(await ledgerOf(batch.id, 3)).toEqual([
      { kind: 'hold', amount: (3n * assetPrice).toString() },
      { kind: 'capture', amount: (2n * assetPrice).toString() },
      { kind: 'release', amount: assetPrice.toString() },
    ]);
    const after = await waitFor(
      async () => {
        const m = await moneyOf(c.accountId);
        return m.held === 0n ? m : undefined;
      },
      { timeoutMs: 10_000, what: 'settled balance' },
    );
    expect(after).toEqual({ available: before.available - 2n * assetPrice, held: 0n, spent: before.spent + 2n * assetPrice });
    const logs = await call('GET', '/api/logs', c.key);
    const logged = logs.body.data.items.find((i: any) => i.task_id === batch.id);
    expect(logged).toMatchObject({ status: 'completed', cost: Number(2n * assetPrice) / 1e6, price: Number(3n * assetPrice) / 1e6, settled: true });

    const rejected = await call('GET', `/v1/motion2/assets/${batch.result.assets[1].asset_id}`, c.key);
    expect(rejected.body.data).toMatchObject({ status: 'Rejected', reason: batch.result.assets[1].reason, name: 'bad one [sim:moderation]' });
    const refused = await call('POST', '/v1/videos/generations', c.key, { model: 'motion-2.0', prompt: 'p', asset_urls: [batch.result.assets[1].asset_url] });
    expect(refused.status).toBe(400);
  }, 60_000);

  it('accepts 20 assets; refuses 21, url with assets, an asset without name, group with group_id — 400 and no charge', async () => {
    const c = await newCustomer();
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ url: IMG(i), name: `a${i}` }));
    const twenty = await submitAssets(c.key, { assets: many(20) });
    expect(twenty.status).toBe(200);
    const [row] = await db.dataSource.query(`SELECT price FROM tasks WHERE id = $1`, [twenty.body.data.id]);
    expect(BigInt(row.price)).toBe(20n * assetPrice);

    const before = await moneyOf(c.accountId);
    const tasksBefore = await taskRows(c.accountId);
    const bad: Array<[unknown, string]> = [
      [{ assets: many(21) }, 'assets'],
      [{ assets: many(1), url: IMG(9), name: 'x' }, 'url'],
      [{ assets: [{ url: IMG(0) }] }, 'assets.0.name'],
      [{ assets: many(1), group: { name: 'g' }, group_id: 'group_x' }, 'group_id'],
    ];
    for (const [body, field] of bad) {
      const r = await submitAssets(c.key, body);
      expect({ field, status: r.status, type: r.body.error?.type }).toEqual({ field, status: 400, type: 'invalid_request_error' });
      expect(r.body.error.message).toContain(`\`${field}\``);
    }
    expect(await taskRows(c.accountId)).toBe(tasksBefore);
    expect(await moneyOf(c.accountId)).toEqual(before);
  }, 60_000);
});
