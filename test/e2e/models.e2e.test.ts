/**
 * Every image model of spec 4.6 and every video model of 4.7 (aliases included) through the real path: api-edge,
 * the image and video worker pools, billing and the upstream simulator as processes, real Postgres and Redis.
 * All submissions start together in beforeAll (one process set, concurrent tasks); each test awaits its own.
 */
import sharp from 'sharp';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { startSimStack, waitFor, type SimStack, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const REF = 'https://images.example.com/ref.png';
const REF_B64 = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const VIDEO_REF = 'https://videos.example.com/in.mp4';
const DAY_S = 24 * 3600;

type Body = Record<string, unknown>;
interface Case {
  name: string;
  body: Body;
}

/** One valid request per model name of 4.6 (images) and 4.7 (videos); every alias appears at least once. */
const IMAGE_CASES: Case[] = [
  { name: 'lumen-2-flex', body: { model: 'lumen-2-flex', prompt: 'a fox', size: '4:3', resolution: '1MP', output_format: 'png' } },
  { name: 'lumen-2-pro', body: { model: 'lumen-2-pro', prompt: 'a fox', size: '9:16', resolution: '1MP', output_format: 'webp' } },
  { name: 'lumen-2-max', body: { model: 'lumen-2-max', prompt: 'a fox', size: '3:2', resolution: '1MP' } },
  { name: 'pict-image-2', body: { model: 'pict-image-2', prompt: 'a fox', size: '21:9', resolution: '1k', n: 2, image_urls: [REF, REF_B64] } },
  { name: 'pict-image-2-ext', body: { model: 'pict-image-2-ext', prompt: 'a fox', size: '4:5', resolution: '1k' } },
  { name: 'spark-imagine-image-2.0', body: { model: 'spark-imagine-image-2.0', prompt: 'a fox', aspect_ratio: '16:9', resolution: '1k', n: 2 } },
  { name: 'spark-imagine-1.5-main', body: { model: 'spark-imagine-1.5-main', prompt: 'a fox', size: '16:9', n: 1 } },
  { name: 'spark-imagine-1.5-ext', body: { model: 'spark-imagine-1.5-ext', prompt: 'a fox', size: '3:4' } },
  { name: 'spark-imagine-image', body: { model: 'spark-imagine-image', prompt: 'a fox', size: '1:1' } },
  { name: 'spark-imagine-image-quality', body: { model: 'spark-imagine-image-quality', prompt: 'a fox', size: '2:3' } },
  { name: 'dream-5-0-pro', body: { model: 'dream-5-0-pro', prompt: 'a fox', size: '16:9', resolution: '2K' } },
  { name: 'dream-5-0-lite', body: { model: 'dream-5-0-lite', prompt: 'a fox', size: '1:1', resolution: '1K', n: 2 } },
];
const VIDEO_CASES: Case[] = [
  { name: 'pixel-v6', body: { model: 'pixel-v6', prompt: 'waves', duration: 3, resolution: '360p' } },
  { name: 'Omni-Flash-Ext', body: { model: 'Omni-Flash-Ext', prompt: 'waves', duration: 4 } },
  { name: 'spark-imagine-1.5-video-main', body: { model: 'spark-imagine-1.5-video-main', prompt: 'waves', duration: 6 } },
  { name: 'spark-imagine-1.5-video-ext', body: { model: 'spark-imagine-1.5-video-ext', prompt: 'waves', duration: 7, size: '9:16' } },
  { name: 'wave2.6-i2v-flash', body: { model: 'wave2.6-i2v-flash', prompt: 'waves', image_urls: [REF], duration: 2, resolution: '720p' } },
  { name: 'kinetic-video-o1', body: { model: 'kinetic-video-o1', prompt: 'waves', duration: 5 } },
  { name: 'clipq3-pro', body: { model: 'clipq3-pro', prompt: 'waves', duration: 2, resolution: '540p' } },
  { name: 'clipq3-turbo', body: { model: 'clipq3-turbo', prompt: 'waves', image_urls: [REF], duration: 3 } },
  { name: 'motion-1-0-pro-fast', body: { model: 'motion-1-0-pro-fast', prompt: 'waves', duration: 2 } },
  { name: 'motion-1-0-pro-quality', body: { model: 'motion-1-0-pro-quality', prompt: 'waves', duration: 3, resolution: '720p' } },
  { name: 'reel-v4-fast', body: { model: 'reel-v4-fast', prompt: 'waves', duration: 3 } },
  { name: 'reel-v4-std', body: { model: 'reel-v4-std', prompt: 'waves', duration: 4, image_urls: [REF] } },
  { name: 'wave2.7-videoedit', body: { model: 'wave2.7-videoedit', prompt: 'make it snow', video_urls: [VIDEO_REF], duration: 2 } },
  { name: 'wave2.7-r2v', body: { model: 'wave2.7-r2v', prompt: 'waves', image_with_roles: [{ url: REF, role: 'reference_image' }], duration: 2 } },
];

/**
 * What each case costs, in minor units (1 unit = 1,000,000): literals from infra/prices.json (the key, its price,
 * times the quantity the model bills), never the quote of the code under test.
 */
const PRICE: Record<string, bigint> = {
  'lumen-2-flex': 20_000n, // lumen-2-flex@1MP 0.02
  'lumen-2-pro': 30_000n, // lumen-2-pro@1MP 0.03
  'lumen-2-max': 60_000n, // lumen-2-max@1MP 0.06
  'pict-image-2': 60_000n, // pict-image-2@1k 0.03 × n 2
  'pict-image-2-ext': 30_000n, // an alias: pict-image-2@1k 0.03
  'spark-imagine-image-2.0': 80_000n, // spark-imagine-image-2.0@1k-medium 0.04 × n 2
  'spark-imagine-1.5-main': 30_000n, // spark-imagine-1.5-main@standard 0.03
  'spark-imagine-1.5-ext': 30_000n, // an alias: spark-imagine-1.5-main@standard 0.03
  'spark-imagine-image': 30_000n, // spark-imagine-image@standard 0.03
  'spark-imagine-image-quality': 60_000n, // spark-imagine-image-quality@standard 0.06
  'dream-5-0-pro': 40_000n, // dream-5-0-pro@2K 0.04
  'dream-5-0-lite': 30_000n, // dream-5-0-lite@1K 0.015 × n 2
  'pixel-v6': 60_000n, // pixel-v6@360p 0.02 × 3 s
  'Omni-Flash-Ext': 200_000n, // Omni-Flash-Ext@720p (default) 0.05 × 4 s
  'spark-imagine-1.5-video-main': 120_000n, // spark-imagine-1.5-video-main@480p 0.02 × 6 s
  'spark-imagine-1.5-video-ext': 140_000n, // an alias: spark-imagine-1.5-video-main@480p 0.02 × 7 s
  'wave2.6-i2v-flash': 80_000n, // (wave2.6-i2v-flash@720p 0.03 + @audio-720p 0.01, audio on by default) × 2 s
  'kinetic-video-o1': 250_000n, // kinetic-video-o1@std 0.05 × 5 s
  'clipq3-pro': 80_000n, // clipq3-pro@540p 0.04 × 2 s
  'clipq3-turbo': 90_000n, // clipq3-turbo@720p 0.03 × 3 s
  'motion-1-0-pro-fast': 100_000n, // motion-1-0-pro-fast@1080p (default) 0.05 × 2 s
  'motion-1-0-pro-quality': 180_000n, // motion-1-0-pro-quality@720p 0.06 × 3 s
  'reel-v4-fast': 90_000n, // reel-v4-fast@720p 0.03 × 3 s
  'reel-v4-std': 240_000n, // reel-v4-std@720p 0.06 × 4 s
  'wave2.7-videoedit': 200_000n, // wave2.7-videoedit@1080p 0.1 × 2 s
  'wave2.7-r2v': 200_000n, // wave2.7-r2v@1080p 0.1 × 2 s
};

const failing = (c: Case): Case => ({ name: `${c.name} [sim:fail]`, body: { ...c.body, prompt: `${String(c.body.prompt)} [sim:fail]` } });

/** The duration of an MP4 from its `moov/mvhd` box (after checking the leading `ftyp` box). */
function mp4Info(buf: Buffer): { brand: string; durationSeconds: number } {
  if (buf.length < 16 || buf.toString('latin1', 4, 8) !== 'ftyp') throw new Error('not an MP4: no leading ftyp box');
  const brand = buf.toString('latin1', 8, 12);
  const findBox = (start: number, end: number, type: string): [number, number] | undefined => {
    for (let at = start; at + 8 <= end;) {
      let size = buf.readUInt32BE(at);
      let header = 8;
      if (size === 1) {
        size = Number(buf.readBigUInt64BE(at + 8));
        header = 16;
      } else if (size === 0) size = end - at;
      if (size < header) return undefined;
      if (buf.toString('latin1', at + 4, at + 8) === type) return [at + header, at + size];
      at += size;
    }
    return undefined;
  };
  const moov = findBox(0, buf.length, 'moov');
  const mvhd = moov && findBox(moov[0], moov[1], 'mvhd');
  if (!mvhd) throw new Error('MP4 without moov/mvhd');
  const p = mvhd[0];
  const v1 = buf[p] === 1;
  const timescale = buf.readUInt32BE(p + (v1 ? 20 : 12));
  const duration = v1 ? Number(buf.readBigUInt64BE(p + 24)) : buf.readUInt32BE(p + 16);
  return { brand, durationSeconds: duration / timescale };
}

interface Outcome {
  ackStatus: number;
  ack: any;
  headers: Headers;
  task: any;
  taskId: string;
}

describe('models e2e: every image and video model completes through the real services', () => {
  let db: TestDatabase;
  let base: string;
  let stack: SimStack;
  let main: { accountId: string; key: string };
  const runs = new Map<string, Promise<Outcome>>();

  const submit = (body: Body, apiKey: string, extra: Record<string, string> = {}) => {
    const pool = resolveModel(String(body.model))!.pool;
    return fetch(`${base}/v1/${pool === 'video' ? 'videos' : 'images'}/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...extra },
      body: JSON.stringify(body),
    });
  };
  const getTask = async (pathOrId: string, apiKey: string) => {
    const p = pathOrId.startsWith('/') ? pathOrId : `/v1/tasks/${pathOrId}`;
    const r = await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return (await r.json()) as any;
  };
  const waitTerminal = (pathOrId: string, apiKey: string, timeoutMs = 90_000) =>
    waitFor(
      async () => {
        const t = await getTask(pathOrId, apiKey);
        return ['completed', 'failed'].includes(t.data?.status) ? t.data : undefined;
      },
      { timeoutMs, intervalMs: 200, what: `task ${pathOrId} to end` },
    );
  const newFundedKey = async (name: string, balanceMinor = 1_000_000_000_000n) => {
    const accounts = new AccountRepository(db.dataSource);
    const a = await accounts.create({ name });
    await accounts.topup(a.id, balanceMinor);
    // Its own generous limits: the suite submits every model at once, it tests models, not the fair-use defaults.
    const k = await new ApiKeyRepository(db.dataSource).create({ accountId: a.id, rpsLimit: 1000, inflightLimit: 1000 });
    return { accountId: a.id, key: k.secret };
  };
  const normalize = (body: Body): NormalizedRequest => {
    const v = validateRequest(resolveModel(String(body.model))!, body, String(body.model));
    if (!v.ok) throw new Error(`fixture ${String(body.model)} invalid: ${v.violation.message}`);
    return v.value;
  };
  const ledgerKinds = async (taskId: string) =>
    (await db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId])) as Array<{ kind: string; amount: string }>;

  /** Submits and waits in the background; the returned promise is awaited by the test that owns the run. */
  const run = (c: Case, apiKey = main.key, headers: Record<string, string> = {}): Promise<Outcome> => {
    const p = (async () => {
      const r = await submit(c.body, apiKey, headers);
      const ack = (await r.json()) as any;
      if (r.status !== 200 && r.status !== 202) throw new Error(`${c.name}: submit answered ${r.status} ${JSON.stringify(ack)}`);
      const taskId: string = r.status === 202 ? ack.data.id : ack.data[0].task_id;
      const task = await waitTerminal(r.status === 202 ? ack.data.poll_url : taskId, apiKey);
      return { ackStatus: r.status, ack, headers: r.headers, task, taskId };
    })();
    p.catch(() => undefined); // awaited later by its test; not an unhandled rejection meanwhile
    runs.set(c.name, p);
    return p;
  };

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_e2e_models', timeScale: '0.1' });
    db = stack.db;
    const worker = { POLL_INTERVAL_SCALE: '0.05', SWEEP_INTERVAL_MS: '1000' };
    const [edge] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN }),
      stack.start('worker-image', worker),
      stack.start('worker-video', worker),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
    main = await newFundedKey('e2e-models');
    for (const c of [...IMAGE_CASES, ...VIDEO_CASES]) {
      normalize(c.body);
      // started together here (the simulator renders them in parallel); each test awaits its own run
      void run(c, main.key, c.name === 'spark-imagine-image-2.0' ? { 'X-Service-Response-Version': '2026-07-27' } : {});
      void run(failing(c));
    }
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const outcome = (name: string) => runs.get(name)!;

  const expectCharged = async (c: Case, o: Outcome) => {
    const price = PRICE[c.name];
    expect(o.task.cost).toBe(Number(price) / 1_000_000);
    const rows = await waitFor(
      async () => {
        const r = await ledgerKinds(o.taskId);
        return r.length === 2 ? r : undefined;
      },
      { timeoutMs: 20_000, what: `capture of ${c.name}` },
    );
    expect(rows).toEqual([
      { kind: 'hold', amount: price.toString() },
      { kind: 'capture', amount: price.toString() },
    ]);
  };

  it.each(IMAGE_CASES.map((c) => [c.name, c] as const))('%s completes with images of the expected format and size, charged its listed price', async (_n, c) => {
    const o = await outcome(c.name);
    expect(o.task.status).toBe('completed');
    const expected = normalize(c.body).expected;
    expect(o.task.result.images).toHaveLength(expected.count);
    for (const img of o.task.result.images) {
      const r = await fetch(img.url);
      expect(r.status).toBe(200);
      const meta = await sharp(Buffer.from(await r.arrayBuffer())).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([expected.format, expected.width, expected.height]);
    }
    await expectCharged(c, o);
  });

  it.each(VIDEO_CASES.map((c) => [c.name, c] as const))(
    '%s completes with an MP4 of the requested duration, url array and 24 h expiry, charged its listed price',
    async (_n, c) => {
      const o = await outcome(c.name);
      expect(o.task.status).toBe('completed');
      const expected = normalize(c.body).expected;
      expect(o.task.result.videos).toHaveLength(1);
      const v = o.task.result.videos[0];
      expect(Array.isArray(v.url)).toBe(true);
      expect(Math.abs(v.expires_at - (Math.floor(Date.now() / 1000) + DAY_S))).toBeLessThan(600);
      const r = await fetch(v.url[0]);
      expect(r.status).toBe(200);
      const mp4 = mp4Info(Buffer.from(await r.arrayBuffer()));
      expect(Math.abs(mp4.durationSeconds - expected.durationSeconds!)).toBeLessThan(0.3);
      await expectCharged(c, o);
    },
  );

  it.each([...IMAGE_CASES, ...VIDEO_CASES].map((c) => [c.name, c] as const))(
    '%s with [sim:fail] ends failed with cost 0 and its hold released',
    async (_n, c) => {
      const o = await outcome(failing(c).name);
      expect(o.task.status).toBe('failed');
      expect(o.task.error.code).toBe('task_failed');
      expect(o.task.cost).toBe(0);
      const rows = await waitFor(
        async () => {
          const r = await ledgerKinds(o.taskId);
          return r.length === 2 ? r : undefined;
        },
        { timeoutMs: 20_000, what: `release of ${c.name}` },
      );
      expect(rows.map((x) => x.kind)).toEqual(['hold', 'release']);
      expect(rows[1].amount).toBe(rows[0].amount);
    },
  );

  it('spark-imagine-image-2.0 answers 202 with shape B, echoes the response version, and its poll_url polls to completed', async () => {
    const o = await outcome('spark-imagine-image-2.0');
    expect(o.ackStatus).toBe(202);
    expect(o.headers.get('x-service-response-version')).toBe('2026-07-27');
    expect(o.ack).toEqual({
      code: 202,
      request_id: expect.any(String),
      data: { id: o.taskId, object: 'generation.task', type: 'image', status: 'pending', progress: 0, poll_url: `/v1/tasks/${o.taskId}` },
    });
    expect(o.task.status).toBe('completed');
  });

  describe('pixel-v6 extend_from_task_id', () => {
    let owner: { accountId: string; key: string };
    let ownCompleted: string;
    let ownUnfinished: string;
    let ownImage: string;

    beforeAll(async () => {
      owner = await newFundedKey('e2e-extend');
      const [pixel, never, image] = await Promise.all([
        run({ name: 'ext-source', body: { model: 'pixel-v6', prompt: 'source clip', duration: 2, resolution: '360p' } }, owner.key),
        submit({ model: 'pixel-v6', prompt: 'still rendering [sim:never]', duration: 2, resolution: '360p' }, owner.key).then((r) => r.json() as Promise<any>),
        run({ name: 'ext-image', body: { model: 'lumen-2-flex', prompt: 'not a video', resolution: '1MP' } }, owner.key),
      ]);
      expect([pixel.task.status, image.task.status]).toEqual(['completed', 'completed']);
      ownCompleted = pixel.taskId;
      ownImage = image.taskId;
      ownUnfinished = never.data[0].task_id;
      // settled: the refusals below must leave the ledger exactly as it is now
      await waitFor(async () => (await ledgerKinds(ownImage)).length === 2 && (await ledgerKinds(ownCompleted)).length === 2, {
        timeoutMs: 20_000,
        what: 'captures',
      });
    }, 120_000);

    it("refuses another account's task, an unfinished task and a non-pixel-v6 task with 400 before any charge", async () => {
      const pixelOfOtherAccount = (await outcome('pixel-v6')).taskId;
      const count = async () => {
        const [t] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [owner.accountId]);
        const [l] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1`, [owner.accountId]);
        const a = (await new AccountRepository(db.dataSource).get(owner.accountId))!;
        return { tasks: t.n, ledger: l.n, available: a.available, held: a.held };
      };
      const before = await count();
      const refusals: Record<string, { status: number; body: any }> = {};
      for (const [what, id] of [
        ['foreign', pixelOfOtherAccount],
        ['missing', 'task_doesnotexist0000'],
        ['unfinished', ownUnfinished],
        ['image', ownImage],
      ] as const) {
        const r = await submit({ model: 'pixel-v6', prompt: 'extend', extend_from_task_id: id }, owner.key);
        refusals[what] = { status: r.status, body: await r.json() };
      }
      for (const r of Object.values(refusals)) {
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ error: { code: 400, type: 'invalid_request_error', message: expect.stringMatching(/^`extend_from_task_id`: /) } });
      }
      // a foreign task looks exactly like a missing one
      expect(refusals.foreign.body.error.message.replace(pixelOfOtherAccount, 'X')).toBe(
        refusals.missing.body.error.message.replace('task_doesnotexist0000', 'X'),
      );
      expect(refusals.unfinished.body.error.message).toMatch(/only a completed pixel-v6 task/);
      expect(refusals.image.body.error.message).toMatch(/lumen-2-flex task/);
      expect(await count()).toEqual(before);
    });

    it('extends a completed pixel-v6 task of the same account to completed', async () => {
      const o = await run(
        { name: 'ext-ok', body: { model: 'pixel-v6', prompt: 'and then', extend_from_task_id: ownCompleted, duration: 2, resolution: '360p' } },
        owner.key,
      );
      expect(o.task.status).toBe('completed');
      expect(mp4Info(Buffer.from(await (await fetch(o.task.result.videos[0].url[0])).arrayBuffer())).durationSeconds).toBeCloseTo(2, 0);
    });
  });
});
