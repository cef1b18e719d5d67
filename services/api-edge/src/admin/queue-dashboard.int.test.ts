import request from 'supertest';
import { QUEUES } from '@gmg/contracts';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const ADMIN_TOKEN = 'dashboard-admin-token-0123456789abcdef';
const DASHBOARD = '/admin/queues';
const POOL_QUEUES = [QUEUES.image, QUEUES.video, QUEUES.artgen, QUEUES.avatar];

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

interface DashboardQueue {
  name: string;
  readOnlyMode: boolean;
  counts: Record<string, number>;
}
const queuesOf = (body: { queues: DashboardQueue[] }) => new Map(body.queues.map((q) => [q.name, q]));

describe('queue dashboard (/admin/queues), read-only by default', () => {
  let h: EdgeHarness;
  let key: string;
  beforeAll(async () => {
    h = await startEdgeHarness({ env: { ADMIN_TOKEN } });
    ({ key } = await h.newCustomer({ balance: 5 }));
  });
  afterAll(async () => {
    await h?.close();
  });
  const api = () => request(h.baseUrl);

  it.each([
    ['no credentials', undefined],
    ['an API key as bearer', 'key'],
    ['a wrong admin token', `Bearer ${ADMIN_TOKEN}x`],
    ['Basic with a wrong password', basic('ops', 'nope')],
    ['Basic with the token as the user name', basic(ADMIN_TOKEN, '')],
  ])('refuses %s with 401 and asks browsers for Basic credentials', async (_what, auth) => {
    for (const path of [DASHBOARD, `${DASHBOARD}/api/queues`, `${DASHBOARD}/static/js/main.js`]) {
      let r = api().get(path);
      if (auth) r = r.set('Authorization', auth === 'key' ? `Bearer ${key}` : auth);
      const res = await r;
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
      expect(res.body).toEqual({ error: { code: 401, type: 'authentication_error', message: expect.stringContaining('Admin token') } });
    }
  });

  it('lists the four pools and billing’s two queues (settlements, webhook deliveries), with live counts, to the admin token (bearer)', async () => {
    const sub = await api().post('/v1/images/generations').set('Authorization', `Bearer ${key}`).send({ model: 'lumen-2-pro', prompt: 'a lighthouse' });
    expect(sub.status).toBe(200);
    const res = await api().get(`${DASHBOARD}/api/queues`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    const queues = queuesOf(res.body);
    expect([...queues.keys()].sort()).toEqual([...POOL_QUEUES, QUEUES.billing, QUEUES.webhook].sort());
    for (const q of queues.values()) expect({ name: q.name, readOnly: q.readOnlyMode }).toEqual({ name: q.name, readOnly: true });
    // the submitted task is the one job waiting in the image pool (no worker runs here)
    expect(queues.get(QUEUES.image)!.counts.waiting).toBe(1);
    expect(queues.get(QUEUES.video)!.counts.waiting).toBe(0);
  });

  it('serves the UI page and its assets to a browser with Basic auth (any user, the admin token as password)', async () => {
    const page = await api().get(DASHBOARD).set('Authorization', basic('ops', ADMIN_TOKEN));
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.text).toContain(`<base href="${DASHBOARD}/"`);
    expect(page.text).toContain('<title>gmg queues</title>');
    const script = /src="(static\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const asset = await api().get(`${DASHBOARD}/${script}`).set('Authorization', basic('ops', ADMIN_TOKEN));
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
  });

  it('refuses write actions in read-only mode: the queue stays as it was', async () => {
    const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const pause = await api().put(`${DASHBOARD}/api/queues/${QUEUES.image}/pause`).set(auth);
    expect(pause.status).toBe(405);
    const clean = await api().put(`${DASHBOARD}/api/queues/${QUEUES.image}/clean/waiting`).set(auth);
    expect(clean.status).toBe(405);
    await api().put(`${DASHBOARD}/api/queues/pause`).set(auth);
    const image = h.queue('image');
    expect(await image.isPaused()).toBe(false);
    expect(await image.getWaitingCount()).toBe(1);
  });
});

describe('queue dashboard with ADMIN_QUEUES_WRITE=true', () => {
  let h: EdgeHarness;
  beforeAll(async () => {
    h = await startEdgeHarness({ env: { ADMIN_TOKEN, ADMIN_QUEUES_WRITE: 'true' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('lets the admin pause and resume a pool', async () => {
    const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const listed = await request(h.baseUrl).get(`${DASHBOARD}/api/queues`).set(auth);
    expect(queuesOf(listed.body).get(QUEUES.video)!.readOnlyMode).toBe(false);
    expect((await request(h.baseUrl).put(`${DASHBOARD}/api/queues/${QUEUES.video}/pause`).set(auth)).status).toBe(200);
    expect(await h.queue('video').isPaused()).toBe(true);
    expect((await request(h.baseUrl).put(`${DASHBOARD}/api/queues/${QUEUES.video}/resume`).set(auth)).status).toBe(200);
    expect(await h.queue('video').isPaused()).toBe(false);
  });
});
