/**
 * Real upstreams (issue 34), end to end: channels created through `POST /api/channels` with a vendor `protocol`,
 * `model_map` and a group; tasks submitted through the public API; the simulator's vendor modes (strict, as each
 * vendor documents it) as the vendors; api-edge, the image and video pools and billing as processes; real Postgres
 * and Redis. Each vendor's own result links die after SIM_VENDOR_LINK_TTL_MS, so a result served after that comes
 * from the gateway's result store.
 */
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository, GroupRepository } from '@gmg/db';
import { startSimStack, waitFor, type SimStack, type StackService, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const LINK_TTL_MS = 1500;

type Body = Record<string, unknown>;
interface Seen {
  phase: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
}

describe('vendor protocols e2e: fal, replicate, openai and bfl channels behind the public API', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let base: string;
  let imageWorker: StackService;

  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  /** A funded key in its own group (each channel below serves one group, so each test reaches its vendor only). */
  const keyIn = async (group: string) => {
    await new GroupRepository(db.dataSource).upsert({ name: group, priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const accounts = new AccountRepository(db.dataSource);
    const a = await accounts.create({ name: `e2e-${group}`, groupName: group });
    await accounts.topup(a.id, 1_000_000_000n);
    return { accountId: a.id, key: (await new ApiKeyRepository(db.dataSource).create({ accountId: a.id })).secret };
  };
  const channel = async (c: { name: string; protocol: string; group: string; model_map?: Record<string, string>; api_key?: string; priority?: number }) => {
    const r = await admin('POST', '/api/channels', {
      name: c.name,
      protocol: c.protocol,
      base_url: `${stack.simUrl}/${c.protocol}`,
      api_key: c.api_key ?? `vendor-key-${c.name}`,
      groups: [c.group],
      priority: c.priority ?? 0,
      ...(c.model_map ? { model_map: c.model_map } : {}),
    });
    expect(r.status).toBe(201);
    expect(JSON.stringify(r.body)).not.toContain(c.api_key ?? `vendor-key-${c.name}`);
    return r.body.data as { id: string };
  };
  const submit = async (key: string, body: Body) => {
    const video = String(body.model).match(/video|Omni|kinetic|pixel|wave|clip|motion|reel/);
    const r = await fetch(`${base}/v1/${video ? 'videos' : 'images'}/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await r.json()) as any;
    return { status: r.status, body: json, taskId: (json.data?.[0]?.task_id ?? json.data?.id) as string };
  };
  const waitTerminal = (key: string, id: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const r = await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } });
        const t = ((await r.json()) as any).data;
        return ['completed', 'failed'].includes(t?.status) ? t : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `task ${id} to end` },
    );
  const vendorRequests = async (prefix: string): Promise<Seen[]> =>
    ((await (await fetch(`${stack.simUrl}/__sim/vendor-requests`)).json()) as { requests: Seen[] }).requests.filter((r) => r.path.startsWith(prefix));
  const ledger = (taskId: string) =>
    db.dataSource.query(`SELECT kind, amount::text FROM ledger_entries WHERE task_id = $1 AND kind <> 'hold' ORDER BY id`, [taskId]) as Promise<
      Array<{ kind: string; amount: string }>
    >;
  const settledOnce = (taskId: string, kind: 'capture' | 'release') =>
    waitFor(
      async () => {
        const rows = await ledger(taskId);
        return rows.length > 0 ? rows : undefined;
      },
      { timeoutMs: 15_000, what: `settlement of ${taskId}` },
    ).then((rows) => {
      expect(rows.map((r) => r.kind)).toEqual([kind]);
      return rows[0]!;
    });
  /** The vendor's own link for a file is dead (403) — what the gateway serves after that is its own copy. */
  const vendorLinkDead = (url: string) =>
    waitFor(async () => ((await fetch(url)).status === 403 ? true : undefined), { timeoutMs: LINK_TTL_MS * 4, intervalMs: 100, what: `${url} to expire` });
  const expectImage = async (url: string, want: { width: number; height: number }) => {
    expect(url.startsWith(`${base}/v1/results/`)).toBe(true);
    const r = await fetch(url);
    expect(r.status).toBe(200);
    const meta = await sharp(Buffer.from(await r.arrayBuffer())).metadata();
    expect({ width: meta.width, height: meta.height }).toEqual(want);
  };

  beforeAll(async () => {
    stack = await startSimStack({
      database: 'gmg_e2e_vendor',
      timeScale: '0.1',
      simEnv: { SIM_VENDOR_LINK_TTL_MS: String(LINK_TTL_MS) },
      // the simulator's own `gateway` channel serves only the default group: every group below reaches its vendor
      channel: { groups: ['default'] },
    });
    db = stack.db;
    const workerEnv = { POLL_INTERVAL_SCALE: '0.05', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '3000' };
    const [edge, image] = await Promise.all([
      stack.start('api-edge', (url) => ({ ADMIN_TOKEN, PUBLIC_BASE_URL: url, MESSAGES_CHANNEL_CACHE_TTL_MS: '0' })),
      stack.start('worker-image', workerEnv),
      stack.start('worker-video', workerEnv),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
    imageWorker = image;
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('fal: the path from model_map, `Authorization: Key`, the translated body; the result served by us after fal\'s link died; captured once', async () => {
    const { key } = await keyIn('fal-only');
    await channel({ name: 'fal-a', protocol: 'fal', group: 'fal-only', model_map: { 'lumen-2-pro': 'fal-ai/flux-2-pro' } });
    const sub = await submit(key, { model: 'lumen-2-pro', prompt: 'a lighthouse', size: '16:9', resolution: '1MP', seed: 7 });
    expect(sub.status).toBe(200);
    const task = await waitTerminal(key, sub.taskId);
    expect(task.status).toBe('completed');
    const submitSeen = (await vendorRequests('/fal/fal-ai/flux-2-pro')).find((r) => r.method === 'POST');
    expect(submitSeen?.headers.authorization).toBe('Key vendor-key-fal-a');
    expect(submitSeen?.body).toMatchObject({ prompt: 'a lighthouse', seed: 7 });
    expect(submitSeen?.body).not.toHaveProperty('model');
    const vendorFile = (await vendorRequests('/vendor-files')).at(-1)!;
    await vendorLinkDead(`${stack.simUrl}${vendorFile.path}`);
    await expectImage(task.result.images[0].url, { width: 1344, height: 752 });
    const capture = await settledOnce(sub.taskId, 'capture');
    expect(Number(capture.amount)).toBe(Math.round(task.cost * 1e6));
  });
});
