/**
 * The art suite served by a midjourney-proxy channel (protocol `mj-proxy`), end to end: the channel created through
 * `POST /api/channels`, tasks submitted through `/v1/artgen/*`, the simulator's strict mj-proxy mode as the proxy,
 * api-edge, worker-artgen and billing as processes, real Postgres and Redis. The proxy's links die after
 * SIM_VENDOR_LINK_TTL_MS, so what the client is served after that comes from the gateway's result store.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { REPO_ROOT, adminApi, fundedKeyInGroup, startSimStack, waitFor, type SimStack, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const BASE = '/v1/artgen/generations';
/**
 * The vendor links' life in this test. The simulator writes their expiry in whole seconds, so a link lives between
 * TTL − 1 s and TTL: 4 s leaves the worker ≥ 3 s from the poll that hands it the link to the last download. 1.5 s
 * (0.5–1.5 s) was missed on a loaded CI host: the download met a dead link and the task failed, refunded.
 */
const LINK_TTL_MS = 4000;
type Json = any;

/** Price of a billing key chain, read from infra/prices.json itself (not through the code under test), in micro units. */
const PRICES = new Map(
  (JSON.parse(readFileSync(path.join(REPO_ROOT, 'infra', 'prices.json'), 'utf8')) as Array<{ key: string; price: number }>).map((p) => [p.key, p.price]),
);
function expectedMicros(action: string, version: string, speed?: string): bigint {
  // docs/artgen.md "Billing": most specific first; relax or omitted adds no speed part
  const chain = [
    ...(speed ? [`artgen@${action}-${version}-${speed}`] : []),
    `artgen@${action}-${version}`,
    ...(speed ? [`artgen@${action}-${speed}`] : []),
    `artgen@${action}`,
    'artgen',
  ];
  const key = chain.find((k) => PRICES.has(k))!;
  return BigInt(Math.round(PRICES.get(key)! * 1e6));
}

describe('mj-proxy e2e: the art suite through a midjourney-proxy channel', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let base: string;
  let mask: string;

  const admin = adminApi(() => base, ADMIN_TOKEN);
  const keyIn = async (group: string) => (await fundedKeyInGroup(db.dataSource, group)).key;
  const channel = async (name: string, group: string, extra: Record<string, unknown> = {}) => {
    const r = await admin('POST', '/api/channels', {
      name,
      protocol: 'mj-proxy',
      base_url: `${stack.simUrl}/mj-proxy`,
      api_key: `mj-secret-${name}`,
      groups: [group],
      ...extra,
    });
    expect(r.status).toBe(201);
    expect(JSON.stringify(r.body)).not.toContain(`mj-secret-${name}`);
    return r.body.data as { id: string };
  };
  const post = async (key: string, action: string, body: unknown) => {
    const r = await fetch(`${base}${BASE}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await r.json()) as Json;
    expect({ action, status: r.status, json }).toMatchObject({ status: 200, json: { code: 200, data: { task_id: expect.stringMatching(/^task_/) } } });
    return json.data.task_id as string;
  };
  const native = async (key: string, id: string) =>
    (await (await fetch(`${base}/v1/artgen/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json;
  const unified = async (key: string, id: string) =>
    (await (await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json;
  const waitStatus = (key: string, id: string, statuses: string[]) =>
    waitFor(
      async () => {
        const v = await native(key, id);
        return statuses.includes(v.status) ? v : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `art task ${id} to reach ${statuses.join('|')}` },
    );
  const succeeded = async (key: string, id: string) => {
    const v = await waitStatus(key, id, ['SUCCESS', 'FAILURE']);
    expect({ id, status: v.status, fail_reason: v.fail_reason }).toEqual({ id, status: 'SUCCESS', fail_reason: undefined });
    return v;
  };
  /** Hold then capture (or release) of exactly `amount` for the task. */
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
  const simRequests = async (): Promise<Array<{ phase: string; method: string; path: string; headers: Record<string, string>; body: Json }>> =>
    ((await (await fetch(`${stack.simUrl}/__sim/vendor-requests`)).json()) as Json).requests;
  /** What the client was shown never names the proxy: no link of its host, no customId of its buttons. */
  const expectOnlyOurs = (shown: unknown, proxyHashes: string[] = []) => {
    const text = JSON.stringify(shown);
    expect(text).not.toContain(stack.simUrl);
    expect(text).not.toContain('/vendor-files/');
    for (const h of proxyHashes) expect(text).not.toContain(h);
  };
  const ours = (url: string) => expect(url.startsWith(`${base}/v1/results/`)).toBe(true);

  beforeAll(async () => {
    stack = await startSimStack({
      database: 'gmg_e2e_mjproxy',
      timeScale: '0.2',
      simEnv: { SIM_VENDOR_LINK_TTL_MS: String(LINK_TTL_MS) },
      // the simulator's own `gateway` channel serves the default group only: the groups below reach their proxy
      channel: { groups: ['default'] },
    });
    db = stack.db;
    base = (await stack.start('api-edge', { ADMIN_TOKEN })).url;
    await Promise.all([
      stack.start('worker-artgen', { POLL_INTERVAL_SCALE: '0.05', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '5000' }),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    mask = `data:image/png;base64,${png.toString('base64')}`;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('imagine → U2 (our customId) → zoom → inpaint + modal: the proxy gets its own customIds, the client ours; each billed; served after the proxy links died', async () => {
    const key = await keyIn('mj-chain');
    await channel('mj-a', 'mj-chain');

    const imagine = await post(key, 'imagine', { prompt: 'a red fox in snow', size: '3:2', speed: 'fast' });
    const grid = await succeeded(key, imagine);
    expect(grid.image_urls).toHaveLength(4);
    grid.image_urls.forEach(ours);
    ours(grid.grid_image_url);
    const imagineSubmit = (await simRequests()).find((r) => r.method === 'POST' && r.path === '/mj-proxy/mj-fast/mj/submit/imagine')!;
    expect(imagineSubmit.headers['mj-api-secret']).toBe('mj-secret-mj-a');
    expect(imagineSubmit.body.prompt).toBe('a red fox in snow --ar 3:2 --v 7');
    await expectSettled(imagine, 'capture', expectedMicros('imagine', 'v7', 'fast'));

    // U2 with the customId of OUR button
    const u2 = grid.buttons.find((b: Json) => b.label === 'U2').customId as string;
    const upscale = await post(key, 'action', { task_id: imagine, customId: u2 });
    const single = await succeeded(key, upscale);
    expect(single.image_urls).toHaveLength(1);
    ours(single.image_urls[0]);
    const pressed = (await simRequests()).filter((r) => r.method === 'POST' && r.path.endsWith('/mj/submit/action'));
    const proxyU2 = pressed.at(-1)!.body.customId as string;
    expect(proxyU2).toMatch(/^MJ::JOB::upsample::2::[0-9a-f-]{36}$/);
    expect(proxyU2).not.toBe(u2);
    const proxyImagineId = pressed.at(-1)!.body.taskId as string;
    // the proxy's own view of the imagine: its buttons' hashes are nowhere in ours
    const proxyView = (await (await fetch(`${stack.simUrl}/mj-proxy/mj/task/${proxyImagineId}/fetch`, { headers: { 'mj-api-secret': 'x' } })).json()) as Json;
    const proxyHashes = [
      ...new Set(
        (proxyView.buttons as Json[]).map((b) =>
          String(b.customId)
            .split('::')
            .find((p) => /^[0-9a-f-]{36}$/.test(p))!,
        ),
      ),
    ];
    expect(proxyHashes).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    expectOnlyOurs([grid, await unified(key, imagine)], proxyHashes);
    await expectSettled(upscale, 'capture', expectedMicros('upscale', 'v7'));

    // what the protocol cannot carry is a 400 naming the field, before any money: Zoom Out exists on an upscale only
    const balance = async () =>
      (await db.dataSource.query(`SELECT available, held FROM accounts WHERE id = (SELECT account_id FROM tasks WHERE id = $1)`, [imagine]))[0];
    const before = await balance();
    const refused = await fetch(`${base}${BASE}/zoom`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ task_id: imagine }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Json).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('`task_id`') });
    expect(await balance()).toEqual(before);

    const zoom = await post(key, 'zoom', { task_id: upscale, zoom_ratio: 2 });
    const zoomed = await succeeded(key, zoom);
    expect(zoomed.image_urls).toHaveLength(4);
    expect((await simRequests()).filter((r) => r.path.endsWith('/mj/submit/action')).at(-1)!.body.customId).toMatch(
      /^MJ::Outpaint::50::1::[0-9a-f-]{36}::SOLO$/,
    );
    await expectSettled(zoom, 'capture', expectedMicros('zoom', 'v7'));

    const inpaint = await post(key, 'inpaint', { task_id: upscale });
    await waitStatus(key, inpaint, ['MODAL']);
    expect((await simRequests()).filter((r) => r.path.endsWith('/mj/submit/action')).at(-1)!.body.customId).toMatch(/^MJ::Inpaint::1::[0-9a-f-]{36}::SOLO$/);
    const modal = await post(key, 'modal', { task_id: inpaint, prompt: 'a red hat', mask_url: mask });
    const [painted, modalDone] = await Promise.all([succeeded(key, inpaint), succeeded(key, modal)]);
    expect(painted.image_urls).toHaveLength(4);
    expect(modalDone.image_urls).toHaveLength(4);
    const modalSubmit = (await simRequests()).filter((r) => r.path.endsWith('/mj/submit/modal')).at(-1)!;
    expect(modalSubmit.body).toMatchObject({ prompt: 'a red hat', maskBase64: mask });
    await expectSettled(inpaint, 'capture', expectedMicros('inpaint', 'v7'));
    await expectSettled(modal, 'capture', expectedMicros('modal', 'v7'));
    expectOnlyOurs([single, zoomed, painted, modalDone, await unified(key, modal)], proxyHashes);
    // the account paid exactly the five prices (the refused zoom above charged nothing)
    const spent = ['imagine', 'upscale', 'zoom', 'inpaint', 'modal'].reduce(
      (sum, a) => sum + (a === 'imagine' ? expectedMicros(a, 'v7', 'fast') : expectedMicros(a, 'v7')),
      0n,
    );
    const [account] = await db.dataSource.query(`SELECT spent, held FROM accounts WHERE id = (SELECT account_id FROM tasks WHERE id = $1)`, [imagine]);
    expect({ spent: String(account.spent), held: String(account.held) }).toEqual({ spent: spent.toString(), held: '0' });

    // the proxy's links die; ours still serve the files
    const proxyFile = (await simRequests()).find((r) => r.path.startsWith('/vendor-files/'))!;
    await waitFor(async () => ((await fetch(`${stack.simUrl}${proxyFile.path}`)).status === 403 ? true : undefined), {
      timeoutMs: LINK_TTL_MS * 4,
      intervalMs: 100,
      what: 'the proxy link to expire',
    });
    for (const url of [grid.grid_image_url, grid.image_urls[1], single.image_urls[0]]) {
      const r = await fetch(url);
      expect(r.status).toBe(200);
      expect((await sharp(Buffer.from(await r.arrayBuffer())).metadata()).format).toBe('png');
    }
  });

  it('a banned prompt (code 24) fails with `Banned prompt detected` and is refunded', async () => {
    const key = await keyIn('mj-banned');
    await channel('mj-b', 'mj-banned');
    const id = await post(key, 'imagine', { prompt: 'a forbidden thing [sim:moderation]' });
    const v = await waitStatus(key, id, ['SUCCESS', 'FAILURE']);
    expect(v).toMatchObject({ status: 'FAILURE', fail_reason: 'Banned prompt detected' });
    expect(await unified(key, id)).toMatchObject({ data: { status: 'failed', cost: 0 } });
    await expectSettled(id, 'release', expectedMicros('imagine', 'v7'));
  });

  it('a proxy whose queue is full (code 23) is left for the next channel at once', async () => {
    const key = await keyIn('mj-failover');
    const full = await channel('mj-full', 'mj-failover', { priority: 10, settings: { headers: { 'x-sim-queue': 'full' } } });
    const spare = await channel('mj-spare', 'mj-failover', { priority: 0 });
    const id = await post(key, 'imagine', { prompt: 'a lighthouse in fog' });
    await succeeded(key, id);
    const submits = (await simRequests()).filter(
      (r) => r.method === 'POST' && r.path === '/mj-proxy/mj/submit/imagine' && r.body.prompt?.startsWith('a lighthouse'),
    );
    expect(submits.map((r) => r.headers['mj-api-secret'])).toEqual(['mj-secret-mj-full', 'mj-secret-mj-spare']);
    const [row] = await db.dataSource.query(`SELECT channel_id FROM tasks WHERE id = $1`, [id]);
    expect(row.channel_id).toBe(spare.id);
    expect(row.channel_id).not.toBe(full.id);
    await expectSettled(id, 'capture', expectedMicros('imagine', 'v7'));
  });
});
