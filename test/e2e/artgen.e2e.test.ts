/**
 * The art suite end to end, every part real: api-edge (two replicas: one with a short TASK_TIMEOUT_SECONDS for the
 * timeout cases), worker-artgen and billing as processes, upstream-sim speaking the suite, real Postgres and Redis.
 * Driven over HTTP; every chain checks the ledger (hold, then capture or release of exactly the task's price).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository, GroupRepository, PriceRepository } from '@gmg/db';
import { REPO_ROOT, startSimStack, waitFor, type SimStack, type StackService, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const BASE = '/v1/artgen/generations';
type Json = any;

describe('art suite e2e: every action through the real services', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let worker: StackService;
  let base: string;
  let shortBase: string;
  let key: string;
  let accountId: string;
  let prices: Map<string, bigint>;
  let uploadDir: string;
  const accounts = () => new AccountRepository(db.dataSource);

  const post = async (p: string, body: unknown, apiKey = key, at = base) => {
    const r = await fetch(`${at}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Json };
  };
  const native = async (id: string, apiKey = key) => {
    const r = await fetch(`${base}/v1/artgen/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return { status: r.status, body: (await r.json()) as Json };
  };
  const submit = async (action: string, body: unknown, at = base): Promise<string> => {
    const r = await post(`${BASE}/${action}`, body, key, at);
    expect({ action, status: r.status, body: r.body }).toMatchObject({ status: 200, body: { code: 200, data: { task_id: expect.stringMatching(/^task_/) } } });
    return r.body.data.task_id;
  };
  const waitStatus = (id: string, statuses: string[], timeoutMs = 20_000) =>
    waitFor(
      async () => {
        const v = await native(id);
        return statuses.includes(v.body.status) ? v.body : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `art task ${id} to reach ${statuses.join('|')}` },
    );
  const done = async (id: string) => {
    const v = await waitStatus(id, ['SUCCESS', 'FAILURE']);
    expect({ id, status: v.status, fail_reason: v.fail_reason }).toEqual({ id, status: 'SUCCESS', fail_reason: undefined });
    return v;
  };
  /** Waits for the settlement and checks hold and capture (or release) are both exactly `amount`. */
  const expectSettled = async (id: string, kind: 'capture' | 'release', amount: bigint) => {
    const rows = await waitFor(
      async () => {
        const r = await db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [id]);
        return r.length === 2 ? r : undefined;
      },
      { timeoutMs: 15_000, what: `settlement of ${id}` },
    );
    expect(rows).toEqual([
      { kind: 'hold', amount: amount.toString() },
      { kind, amount: amount.toString() },
    ]);
  };
  const price = (k: string, quantity = 1) => {
    const p = prices.get(k);
    if (p === undefined) throw new Error(`no price ${k}`);
    return p * BigInt(quantity);
  };
  const image = async (url: string) => sharp(Buffer.from(await (await fetch(url)).arrayBuffer())).metadata();
  const newKey = async (models: string[] | null = null, groupName?: string) => {
    const a = await accounts().create({ name: 'e2e-artgen', groupName });
    await accounts().topup(a.id, 1_000_000_000n);
    const k = await new ApiKeyRepository(db.dataSource).create({ accountId: a.id, models });
    return { accountId: a.id, key: k.secret };
  };

  beforeAll(async () => {
    // the sim serves the default group only: a key of group `stranded` has no upstream for artgen
    stack = await startSimStack({ database: 'gmg_e2e_artgen', timeScale: '0.2', channel: { groups: ['default'] } });
    db = stack.db;
    prices = new Map(await new PriceRepository(db.dataSource).table());
    await new GroupRepository(db.dataSource).upsert({ name: 'stranded', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    uploadDir = path.join(REPO_ROOT, '.data', `e2e-uploads-${stack.prefix}`);
    const edgeEnv =
      (extra: Record<string, string> = {}) =>
      (url: string) => ({ ADMIN_TOKEN, PUBLIC_BASE_URL: url, UPLOAD_DIR: uploadDir, ...extra });
    const [edge, shortEdge, artgenWorker] = await Promise.all([
      stack.start('api-edge', edgeEnv()),
      stack.start('api-edge', edgeEnv({ TASK_TIMEOUT_SECONDS: '4' })),
      stack.start('worker-artgen', { POLL_INTERVAL_SCALE: '0.05', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '5000' }),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    worker = artgenWorker;
    base = edge.url;
    shortBase = shortEdge.url;
    ({ key, accountId } = await newKey());
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
  });

  it('imagine → U1 (by customId) → pan left twice (wider each time) → zoom, each captured at its price', async () => {
    const imagine = await submit('imagine', { prompt: 'a lighthouse at dusk' });
    const grid = await done(imagine);
    expect(grid).toMatchObject({ action: 'IMAGINE', progress: '100%' });
    expect(grid.image_urls).toHaveLength(4);
    const tile = await image(grid.image_urls[0]);
    const gridMeta = await image(grid.grid_image_url);
    expect([gridMeta.format, gridMeta.width, gridMeta.height]).toEqual(['png', tile.width! * 2, tile.height! * 2]);
    expect(grid.buttons.map((b: Json) => b.label)).toEqual(['U1', 'U2', 'U3', 'U4', '🔄', 'V1', 'V2', 'V3', 'V4']);
    const unified = (await (await fetch(`${base}/v1/tasks/${imagine}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json;
    expect(unified.data).toMatchObject({ id: imagine, model: 'artgen', status: 'completed' });
    expect(unified.data.result.images.map((i: Json) => i.url)).toEqual(grid.image_urls);
    await expectSettled(imagine, 'capture', price('artgen@imagine'));

    const u1 = await post(`${BASE}/action`, { task_id: imagine, customId: grid.buttons[0].customId });
    expect(u1.body.data).toMatchObject({ action: 'UPSCALE', status: 'SUBMITTED' });
    const up = await done(u1.body.data.task_id);
    expect(up.image_urls).toHaveLength(1);
    const upMeta = await image(up.image_urls[0]);
    expect(upMeta.width!).toBeGreaterThan(tile.width!);
    expect(up.buttons.map((b: Json) => b.label)).toContain('⬅️');
    await expectSettled(u1.body.data.task_id, 'capture', price('artgen@upscale'));

    const pan1 = await submit('pan', { task_id: u1.body.data.task_id, direction: 'left' });
    const p1 = await image((await done(pan1)).image_urls[0]);
    expect(p1.width!).toBeGreaterThan(upMeta.width!);
    const pan2 = await submit('pan', { task_id: pan1, direction: 'left' });
    const p2 = await image((await done(pan2)).image_urls[0]);
    expect(p2.width!).toBeGreaterThan(p1.width!);
    expect(p2.height).toBe(p1.height);
    await expectSettled(pan1, 'capture', price('artgen@pan'));
    await expectSettled(pan2, 'capture', price('artgen@pan'));

    const zoom = await submit('zoom', { task_id: pan2, zoom_ratio: 1.5 });
    const z = await done(zoom);
    expect(z.action).toBe('ZOOM');
    expect(z.image_urls).toHaveLength(4);
    await expectSettled(zoom, 'capture', price('artgen@zoom'));
  });

  it('imagine → V2 → reroll', async () => {
    const imagine = await submit('imagine', { prompt: 'a fox --ar 3:2' });
    await done(imagine);
    const v2 = await submit('variation', { task_id: imagine, index: 2 });
    expect((await done(v2)).action).toBe('VARIATION');
    const reroll = await submit('reroll', { task_id: v2 });
    const r = await done(reroll);
    expect(r.action).toBe('REROLL');
    expect(r.image_urls).toHaveLength(4);
    await expectSettled(v2, 'capture', price('artgen@variation'));
    await expectSettled(reroll, 'capture', price('artgen@reroll'));
  });

  it('imagine → inpaint (MODAL) → modal → both SUCCESS and both captured', async () => {
    const imagine = await submit('imagine', { prompt: 'a portrait' });
    await done(imagine);
    const inpaint = await submit('inpaint', { task_id: imagine, index: 1 });
    expect((await waitStatus(inpaint, ['MODAL'])).buttons).toEqual([]);
    const modal = await submit('modal', { task_id: inpaint, prompt: 'a red hat', mask_url: 'https://cdn.example.com/mask.png' });
    const m = await done(modal);
    expect(m.image_urls).toHaveLength(4);
    await done(inpaint);
    await expectSettled(inpaint, 'capture', price('artgen@inpaint'));
    await expectSettled(modal, 'capture', price('artgen@modal'));
  });

  it('blend of two uploads', async () => {
    const urls: string[] = [];
    for (const color of ['#d00', '#00d']) {
      const png = await sharp({ create: { width: 256, height: 256, channels: 3, background: color } })
        .png()
        .toBuffer();
      const form = new FormData();
      form.append('file', new Blob([png], { type: 'image/png' }), 'x.png');
      const r = await fetch(`${base}/v1/uploads/images`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      expect(r.status).toBe(200);
      urls.push(((await r.json()) as Json).data.url);
    }
    const blend = await submit('blend', { image_urls: urls, dimensions: 'LANDSCAPE' });
    const b = await done(blend);
    expect(b.action).toBe('BLEND');
    const meta = await image(b.image_urls[0]);
    expect(meta.width!).toBeGreaterThan(meta.height!);
    await expectSettled(blend, 'capture', price('artgen@blend'));
  });

  it('describe answers synchronously with the text in prompt and description, and is billed', async () => {
    const r = await post(`${BASE}/describe`, { image_urls: ['https://cdn.example.com/cat.png'] });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ action: 'DESCRIBE', status: 'SUCCESS' });
    expect(r.body.data.description).toMatch(/1️⃣/);
    expect(r.body.data.prompt).toBe(r.body.data.description);
    expect(r.body.data.prompts).toHaveLength(4);
    await expectSettled(r.body.data.task_id, 'capture', price('artgen@describe'));
  });

  it('video with batch_size 4 gives four MP4s and is charged 4×', async () => {
    const video = await submit('video', { image_urls: ['https://cdn.example.com/still.png'], motion: 'high', batch_size: 4, prompt: 'waves' });
    const v = await done(video);
    expect(v.video_urls).toHaveLength(4);
    const mp4 = Buffer.from(await (await fetch(v.video_urls[0])).arrayBuffer());
    expect(mp4.subarray(4, 8).toString('ascii')).toBe('ftyp');
    await expectSettled(video, 'capture', price('artgen@video', 4));
  });

  it('remix-strong on a v8.2 imagine parent', async () => {
    const imagine = await submit('imagine', { prompt: 'a city --v 8.2' });
    await done(imagine);
    await expectSettled(imagine, 'capture', price('artgen@imagine-v8.2'));
    const remix = await submit('remix-strong', { task_id: imagine, index: 1 });
    expect((await done(remix)).action).toBe('REMIX_STRONG');
    await expectSettled(remix, 'capture', price('artgen@remix_strong'));
  });

  it('refusals cost nothing: foreign parent, pan on v5.2, remix on v7, blend of one, modal on a finished task, artgen not allowed', async () => {
    const v52 = await submit('imagine', { prompt: 'old style --v 5.2' });
    await done(v52);
    const up52 = await submit('upscale', { task_id: v52, index: 1 });
    await done(up52);
    const v7 = await submit('imagine', { prompt: 'new style', version: '7' });
    await done(v7);
    const stranger = await newKey();
    const limited = await newKey(['lumen-2-pro']);
    const balances = async () => Promise.all([accountId, stranger.accountId, limited.accountId].map(async (id) => (await accounts().get(id))!.available));
    const before = await balances();
    const cases: Array<[string, unknown, string, number, string]> = [
      ['upscale', { task_id: v7, index: 1 }, stranger.key, 404, 'not_found'],
      ['pan', { task_id: up52, direction: 'left' }, key, 400, 'invalid_request_error'],
      ['remix-strong', { task_id: v7, index: 1 }, key, 400, 'invalid_request_error'],
      ['blend', { image_urls: ['https://cdn.example.com/a.png'] }, key, 400, 'invalid_request_error'],
      ['modal', { task_id: v7, prompt: 'x', mask_url: 'https://cdn.example.com/m.png' }, key, 400, 'invalid_request_error'],
      ['imagine', { prompt: 'x' }, limited.key, 403, 'permission_error'],
    ];
    for (const [action, body, apiKey, status, type] of cases) {
      const r = await post(`${BASE}/${action}`, body, apiKey);
      expect({ action, status: r.status, body: r.body }).toEqual({ action, status, body: { error: { type, message: expect.any(String) } } });
    }
    expect(await balances()).toEqual(before);
  });

  it('a [sim:moderation] imagine fails with Banned prompt detected and is refunded', async () => {
    const id = await submit('imagine', { prompt: 'something [sim:moderation]' });
    const v = await waitStatus(id, ['FAILURE', 'SUCCESS']);
    expect([v.status, v.fail_reason]).toEqual(['FAILURE', 'Banned prompt detected']);
    await expectSettled(id, 'release', price('artgen@imagine'));
  });

  it("an imagine with no channel for the key's group fails with No available upstream and is refunded", async () => {
    const stranded = await newKey(null, 'stranded');
    const before = (await accounts().get(stranded.accountId))!;
    const r = await post(`${BASE}/imagine`, { prompt: 'nowhere to go' }, stranded.key);
    expect(r.status).toBe(200);
    const id = r.body.data.task_id;
    const v = await waitFor(
      async () => {
        const n = await native(id, stranded.key);
        return ['FAILURE', 'SUCCESS'].includes(n.body.status) ? n.body : undefined;
      },
      { timeoutMs: 15_000, what: 'no-upstream failure' },
    );
    expect([v.status, v.fail_reason]).toEqual(['FAILURE', 'No available upstream']);
    await expectSettled(id, 'release', price('artgen@imagine'));
    expect((await accounts().get(stranded.accountId))!.available).toBe(before.available);
  });

  it('loses nothing when worker-artgen is killed -9 with art tasks in flight: all finish, each captured once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await submit('imagine', { prompt: `slow ${i} [sim:slow]` }));
    await waitFor(
      async () => {
        const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'processing'`, [ids]);
        return n === ids.length;
      },
      { timeoutMs: 20_000, what: 'art tasks processing' },
    );
    await worker.proc.kill9();
    const [{ open }] = await db.dataSource.query(`SELECT count(*)::int AS open FROM tasks WHERE id = ANY($1) AND status <> 'completed'`, [ids]);
    expect(open).toBeGreaterThan(0);
    worker = await stack.restart(worker);
    for (const id of ids) expect((await waitStatus(id, ['SUCCESS', 'FAILURE'], 60_000)).status).toBe('SUCCESS');
    for (const id of ids) await expectSettled(id, 'capture', price('artgen@imagine'));
  });

  it('a [sim:never] imagine fails with Task timeout and is refunded; so does a MODAL task left alone', async () => {
    const before = (await accounts().get(accountId))!;
    const parent = await submit('imagine', { prompt: 'for inpaint' });
    await done(parent);
    await expectSettled(parent, 'capture', price('artgen@imagine'));
    const afterParent = (await accounts().get(accountId))!;
    expect(afterParent.available).toBe(before.available - price('artgen@imagine'));

    const never = await submit('imagine', { prompt: 'forever [sim:never]' }, shortBase);
    const inpaint = await submit('inpaint', { task_id: parent, index: 2 }, shortBase);
    await waitStatus(inpaint, ['MODAL']);
    for (const id of [never, inpaint]) {
      const v = await waitStatus(id, ['FAILURE', 'SUCCESS'], 30_000);
      expect({ id, status: v.status, fail_reason: v.fail_reason }).toEqual({ id, status: 'FAILURE', fail_reason: 'Task timeout' });
    }
    await expectSettled(never, 'release', price('artgen@imagine'));
    await expectSettled(inpaint, 'release', price('artgen@inpaint'));
    const after = (await accounts().get(accountId))!;
    expect([after.available, after.held]).toEqual([afterParent.available, afterParent.held]);
  });
});
