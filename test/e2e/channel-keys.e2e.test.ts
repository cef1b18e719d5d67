/**
 * Several keys per channel and health that recovers (issue 37), end to end: a channel of three keys created through
 * `POST /api/channels`; the simulator as the vendor, which revokes one key and rate-limits another mid-run (POST
 * /__sim/keys); api-edge, the image pool and billing as processes; real Postgres and Redis. No task fails, the revoked
 * key is disabled with the vendor's message, and once the simulator heals the keys all three are back in use without
 * an operator — after a restart of every service, which keeps the health it had.
 */
import { adminApi, fundedKeyInGroup, startSimStack, waitFor, type SimStack, type StackService } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-keys-0123456789';
const KEYS = ['sim-key-one-000000000000aaaa', 'sim-key-two-000000000000bbbb', 'sim-key-three-0000000000cccc'];
const REVOCATION = 'This key was revoked by the account owner';
const GROUP = 'three-keys';

interface KeyView {
  id: string;
  hint: string;
  status: string;
  disabled_reason: string | null;
  last_error: string | null;
}

describe('channel keys e2e: three keys, one revoked and one rate limited mid-run, healed without an operator', () => {
  let stack: SimStack;
  let base: string;
  let services: StackService[];
  let key: string;
  let channelId: string;

  const admin = adminApi(() => base, ADMIN_TOKEN);
  const vendorKey = async (k: string, state: 'ok' | 'revoked' | 'rate_limited') => {
    const r = await fetch(`${stack.simUrl}/__sim/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: k, state, message: REVOCATION }),
    });
    expect(r.status).toBe(200);
  };
  const keysOfChannel = async (): Promise<KeyView[]> => (await admin('GET', `/api/channels/${channelId}/keys`)).body.data;
  const byHint = (keys: KeyView[], secret: string) => keys.find((k) => k.hint === `…${secret.slice(-4)}`)!;

  /** Submits `n` image tasks and waits for every one to end; answers their ids. */
  const runTasks = async (n: number, label: string): Promise<string[]> => {
    const ids = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const r = await fetch(`${base}/v1/images/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'lumen-2-flex', prompt: `${label} ${i}`, size: '1:1', resolution: '1MP' }),
        });
        const json = (await r.json()) as any;
        expect(r.status).toBe(200);
        return json.data[0].task_id as string;
      }),
    );
    for (const id of ids)
      await waitFor(
        async () => {
          const t = ((await (await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data;
          return ['completed', 'failed'].includes(t?.status) ? t : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100, what: `task ${id} to end` },
      );
    return ids;
  };
  const statusesOf = async (ids: string[]): Promise<string[]> =>
    ((await stack.db.dataSource.query(`SELECT status FROM tasks WHERE id = ANY($1)`, [ids])) as Array<{ status: string }>).map((r) => r.status);
  const keysUsedBy = async (ids: string[]): Promise<Set<string>> =>
    new Set(
      ((await stack.db.dataSource.query(`SELECT channel_key_id::text AS k FROM tasks WHERE id = ANY($1)`, [ids])) as Array<{ k: string | null }>).map(
        (r) => r.k ?? 'none',
      ),
    );

  beforeAll(async () => {
    stack = await startSimStack({
      database: 'gmg_e2e_keys',
      timeScale: '0.1',
      simEnv: { SIM_API_KEY: KEYS[0]!, SIM_API_KEYS: KEYS.slice(1).join(',') },
      channel: { groups: ['default'], apiKey: KEYS[0] },
    });
    const edge = await stack.start('api-edge', { ADMIN_TOKEN, MESSAGES_CHANNEL_CACHE_TTL_MS: '0' });
    base = edge.url;
    const health = { CHANNEL_PROBE_INTERVAL_MS: '300', CHANNEL_COOLDOWN_MS: '500', CHANNEL_COOLDOWN_MAX_MS: '2000' };
    services = [
      edge,
      ...(await Promise.all([
        stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.05', SWEEP_INTERVAL_MS: '1000', WORKER_LOCK_MS: '3000', ...health }),
        stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
      ])),
    ];
    ({ key } = await fundedKeyInGroup(stack.db.dataSource, GROUP));
    const ch = await admin('POST', '/api/channels', { name: 'three-keys', protocol: 'gateway', base_url: stack.simUrl, api_keys: KEYS, groups: [GROUP] });
    expect(ch.status).toBe(201);
    for (const s of KEYS) expect(JSON.stringify(ch.body)).not.toContain(s);
    channelId = ch.body.data.id;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('no task fails while one key is revoked and another rate limited; the revoked key is disabled with the vendor message', async () => {
    const before = runTasks(9, 'before');
    await vendorKey(KEYS[0]!, 'revoked');
    await vendorKey(KEYS[1]!, 'rate_limited');
    const during = await runTasks(15, 'during');
    const all = [...(await before), ...during];
    expect(await statusesOf(all)).toEqual(all.map(() => 'completed'));
    const keys = await keysOfChannel();
    expect(byHint(keys, KEYS[0]!)).toMatchObject({ status: 'disabled', disabled_reason: expect.stringContaining(REVOCATION) });
    expect(byHint(keys, KEYS[1]!).last_error).toContain('Rate limit reached');
    // the shared health as a metric on the worker's /metrics
    const metrics = await (await fetch(`${services[1]!.url}/metrics`)).text();
    const revoked = byHint(keys, KEYS[0]!).id;
    expect(metrics).toMatch(new RegExp(`gmg_channel_health\\{channel="three-keys",key="${revoked}",status="disabled"[^}]*\\} 1`));
    expect(metrics).toMatch(new RegExp(`gmg_channel_health\\{channel="three-keys",key="${revoked}",status="active"[^}]*\\} 0`));
    const listed = await admin('GET', '/api/channels');
    expect(listed.body.data.find((c: { id: string }) => c.id === channelId).keys).toEqual(keys);
  }, 120_000);

  it('after a restart of every service the key is still set aside; healed by the vendor, all three are back in use without an operator', async () => {
    await Promise.all(services.map((s) => s.proc.stop()));
    services = await Promise.all(services.map((s) => stack.restart(s)));
    expect(byHint(await keysOfChannel(), KEYS[0]!).status).toBe('disabled');
    await vendorKey(KEYS[0]!, 'ok');
    await vendorKey(KEYS[1]!, 'ok');
    await waitFor(async () => ((await keysOfChannel()).every((k) => k.status === 'active') ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the probe to bring every key back',
    });
    const after = await runTasks(24, 'after');
    expect(await statusesOf(after)).toEqual(after.map(() => 'completed'));
    expect(await keysUsedBy(after)).toEqual(new Set((await keysOfChannel()).map((k) => k.id)));
  }, 120_000);
});
