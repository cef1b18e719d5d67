/**
 * Vendor callbacks end to end (issue 35 item 8): fal channels made through `POST /api/channels`, api-edge and
 * worker-image as processes with UPSTREAM_CALLBACK_* set, the simulator's strict fal mode as the vendor posting its
 * webhook to the edge. A task on a channel that takes callbacks is polled at the safety-net cadence and completes when
 * the webhook nudges its poll; the same task on a channel with `settings.callbacks: false` is polled at the normal
 * cadence — the vendor's request log counts both. A forged callback to the public edge is refused.
 */
import { sumSamples } from '@gmg/observability';
import { adminApi, fundedKeyInGroup, startSimStack, waitFor, type SimStack } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const SIGNING_KEY = 'e2e-upstream-callback-key-0123456789abcdef';

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
}

describe('vendor callbacks e2e: a fal webhook nudges the poll, a forged one is refused', () => {
  let stack: SimStack;
  let base: string;

  const admin = adminApi(() => base, ADMIN_TOKEN);
  const keyIn = async (group: string) => (await fundedKeyInGroup(stack.db.dataSource, group)).key;
  const falChannel = async (name: string, group: string, settings?: Record<string, unknown>) => {
    const r = await admin('POST', '/api/channels', {
      name,
      protocol: 'fal',
      base_url: `${stack.simUrl}/fal`,
      api_key: `vendor-key-${name}`,
      groups: [group],
      ...(settings ? { settings } : {}),
    });
    expect(r.status).toBe(201);
  };
  const submit = async (key: string) => {
    const r = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-2-flex', prompt: 'a harbour at dusk', resolution: '1MP' }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as any).data[0].task_id as string;
  };
  const waitTerminal = (key: string, id: string) =>
    waitFor(
      async () => {
        const t = ((await (await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data;
        return ['completed', 'failed'].includes(t?.status) ? t : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `task ${id} to end` },
    );
  /** What fal saw from one channel (its key is in every request's Authorization header). */
  const seenBy = async (channel: string): Promise<{ submits: Seen[]; statusPolls: Seen[] }> => {
    const all = ((await (await fetch(`${stack.simUrl}/__sim/vendor-requests`)).json()) as { requests: Seen[] }).requests.filter(
      (r) => r.path.startsWith('/fal/') && r.headers.authorization === `Key vendor-key-${channel}`,
    );
    return { submits: all.filter((r) => r.method === 'POST'), statusPolls: all.filter((r) => r.method === 'GET' && r.path.endsWith('/status')) };
  };
  const callbackMetric = async (outcome: string) =>
    sumSamples(await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text(), 'gmg_upstream_callbacks_total', {
      name: 'outcome',
      value: outcome,
    }) ?? 0;

  beforeAll(async () => {
    stack = await startSimStack({
      database: 'gmg_e2e_callbacks',
      // fal images take 6-9 s: long enough for the normal cadence to poll many times
      timeScale: '3',
      channel: { groups: ['default'] },
      env: { UPSTREAM_CALLBACK_SIGNING_KEY: SIGNING_KEY },
    });
    const edge = await stack.start('api-edge', { ADMIN_TOKEN });
    base = edge.url;
    // polls every 0.4-1 s; a task whose vendor calls back every 2.4-6 s (the default factor 6)
    await stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.2', UPSTREAM_CALLBACK_BASE_URL: base });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the task whose vendor calls back completes after far fewer polls than the one polled alone', async () => {
    const [keyOn, keyOff] = await Promise.all([keyIn('cb-on'), keyIn('cb-off')]);
    await falChannel('cbon', 'cb-on');
    await falChannel('cboff', 'cb-off', { callbacks: false });
    const accepted0 = await callbackMetric('accepted');
    const [on, off] = await Promise.all([submit(keyOn), submit(keyOff)]);
    const [doneOn, doneOff] = await Promise.all([waitTerminal(keyOn, on), waitTerminal(keyOff, off)]);
    expect(doneOn.status).toBe('completed');
    expect(doneOff.status).toBe('completed');

    const [withHook, without] = await Promise.all([seenBy('cbon'), seenBy('cboff')]);
    // the callback-on submit named the edge's signed URL of this very task; the other channel's named none
    expect(withHook.submits).toHaveLength(1);
    const hook = new URL(withHook.submits[0]!.path, stack.simUrl).searchParams.get('fal_webhook');
    expect(hook?.startsWith(`${base}/v1/upstream-callbacks/${on}.image.`)).toBe(true);
    expect(without.submits.map((r) => r.path).join()).not.toContain('fal_webhook');
    // the 6-9 s render: polled every 0.4-1 s without callbacks (at least 6 times), every 2.4-6 s with them plus
    // the nudged poll (at most 4)
    expect(without.statusPolls.length).toBeGreaterThanOrEqual(6);
    expect(withHook.statusPolls.length).toBeLessThanOrEqual(4);
    expect(withHook.statusPolls.length * 2).toBeLessThanOrEqual(without.statusPolls.length);
    // the webhook reached the edge and was taken as a nudge
    expect(await callbackMetric('accepted')).toBeGreaterThan(accepted0);
  }, 90_000);

  it('a forged callback to the public edge is refused with 401 and nudges nothing', async () => {
    const forged = await fetch(`${base}/v1/upstream-callbacks/task_forged1.image.9999999999.${'A'.repeat(43)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'x', status: 'OK', payload: { images: [] } }),
    });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as any).error.type).toBe('authentication_error');
    expect(await callbackMetric('forged')).toBeGreaterThanOrEqual(1);
  });
});
