import { listenVendorSim, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The simulator's strict midjourney-proxy mode on its own (no adapter): what the proxies answer to bad requests,
 * auth, the speed prefixes, buttons under the simulator's own hash, MODAL until /modal, expiring links.
 */
const KEY = 'mj-sim-key-1';
let offset = 0;
const now = () => Date.now() + offset;
let sim: VendorSim;
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = { 'mj-api-secret': KEY }) => {
  const r = await fetch(`${sim.origin}/mj-proxy${p}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any };
};
const imagine = async (prompt: string, prefix = '/mj') => (await call('POST', `${prefix}/submit/imagine`, { prompt })).body.result as string;
const fetchTask = async (id: string) => (await call('GET', `/mj/task/${id}/fetch`)).body;

beforeAll(async () => {
  sim = await listenVendorSim('mj-proxy', { apiKey: KEY, now, timeScale: 10 });
});
afterAll(() => sim.close());

describe('upstream-sim /mj-proxy (strict)', () => {
  it('refuses a missing or wrong mj-api-secret with 401 and takes a Bearer token', async () => {
    expect((await call('POST', '/mj/submit/imagine', { prompt: 'a' }, {})).status).toBe(401);
    expect((await call('POST', '/mj/submit/imagine', { prompt: 'a' }, { 'mj-api-secret': 'nope' })).status).toBe(401);
    expect((await call('POST', '/mj/submit/imagine', { prompt: 'a' }, { authorization: `Bearer ${KEY}` })).body).toMatchObject({ code: 1 });
  });

  it("answers the proxies' validation codes", async () => {
    expect((await call('POST', '/mj/submit/imagine', { prompt: '  ' })).body).toEqual({ code: 4, description: 'prompt不能为空', result: null, properties: {} });
    expect((await call('POST', '/mj/submit/imagine', { prompt: 'a', base64Array: ['not-base64'] })).body).toMatchObject({
      code: 4,
      description: 'base64格式错误',
    });
    expect((await call('POST', '/mj/submit/blend', { base64Array: [PNG] })).body).toMatchObject({ code: 4, description: 'base64List参数错误' });
    expect((await call('POST', '/mj/submit/blend', { base64Array: [PNG, PNG], dimensions: 'WIDE' })).body).toMatchObject({
      code: 4,
      description: 'dimensions参数错误',
    });
    expect((await call('POST', '/mj/submit/describe', {})).body).toMatchObject({ code: 4 });
    expect((await call('POST', '/mj/submit/action', { taskId: '1' })).body).toMatchObject({ code: 4, description: '参数错误' });
    expect(await call('POST', '/mj/submit/action', { taskId: '404', customId: 'MJ::JOB::upsample::1::x' })).toMatchObject({ status: 404, body: { code: 3 } });
    expect(await call('GET', '/mj/task/404/fetch')).toMatchObject({ status: 404, body: { code: 3 } });
    expect((await call('POST', '/mj/submit/imagine', { prompt: 'x [sim:moderation]' })).body).toMatchObject({ code: 24, result: null });
  });

  it('runs SUBMITTED → IN_PROGRESS ("NN%") → SUCCESS under every speed prefix, with buttons under its own hash and expiring links', async () => {
    const id = await imagine('a fox --v 7', '/mj-turbo/mj');
    expect(id).toMatch(/^\d{16}$/);
    expect(await fetchTask(id)).toMatchObject({ id, action: 'IMAGINE', status: 'SUBMITTED', progress: '0%', buttons: [] });
    // time scale 10: the run takes 30 s of the simulator's clock, the first 15 % of it SUBMITTED — seconds of slack on
    // either side of each step for a loaded machine (the clock is the wall's plus the test's offset)
    offset += 15_000;
    expect(await fetchTask(id)).toMatchObject({ status: 'IN_PROGRESS', progress: expect.stringMatching(/^\d{1,2}%$/) });
    offset += 600_000;
    const done = await fetchTask(id);
    expect(done).toMatchObject({ status: 'SUCCESS', progress: '100%', imageUrl: expect.stringContaining('/vendor-files/') });
    expect(done.imageUrls).toHaveLength(4);
    expect(done.buttons.map((b: any) => b.label)).toEqual(['U1', 'U2', 'U3', 'U4', '🔄', 'V1', 'V2', 'V3', 'V4']);
    expect(done.buttons[0].customId).toMatch(/^MJ::JOB::upsample::1::[0-9a-f-]{36}$/);
    expect((await fetch(done.imageUrls[0].url)).status).toBe(200);
    offset += 25 * 3600_000;
    expect((await fetch(done.imageUrl)).status).toBe(403);
  });

  it("presses only a button its parent shows (another task's hash is not one); Vary (Region) waits in MODAL until /modal", async () => {
    const a = await imagine('a');
    const b = await imagine('b');
    offset += 600_000;
    const [ta, tb] = [await fetchTask(a), await fetchTask(b)];
    const foreign = tb.buttons[0].customId.replace('::1::', '::2::');
    expect((await call('POST', '/mj/submit/action', { taskId: a, customId: foreign })).body).toMatchObject({ code: 4, description: '未知的 Action 类型' });
    const up = (await call('POST', '/mj/submit/action', { taskId: a, customId: ta.buttons[1].customId })).body;
    expect(up).toMatchObject({ code: 1, result: expect.any(String) });
    expect((await call('POST', '/mj/submit/action', { taskId: up.result, customId: ta.buttons[1].customId })).body).toMatchObject({ code: 4 });
    offset += 600_000;
    const single = await fetchTask(up.result);
    expect(single).toMatchObject({ action: 'UPSCALE', status: 'SUCCESS', width: expect.any(Number) });
    expect(single.imageUrls).toBeUndefined();
    const region = single.buttons.find((x: any) => x.label === 'Vary (Region)').customId;
    const vary = (await call('POST', '/mj/submit/action', { taskId: up.result, customId: region })).body;
    expect(vary).toMatchObject({ code: 21, description: 'Waiting for window confirm' });
    offset += 600_000;
    expect(await fetchTask(vary.result)).toMatchObject({ status: 'MODAL' });
    expect((await call('POST', '/mj/submit/modal', { taskId: vary.result, prompt: 'a hat', maskBase64: 'x' })).body).toMatchObject({ code: 4 });
    expect((await call('POST', '/mj/submit/modal', { taskId: vary.result, prompt: 'a hat', maskBase64: PNG })).body).toMatchObject({
      code: 1,
      result: vary.result,
    });
    offset += 600_000;
    expect(await fetchTask(vary.result)).toMatchObject({ status: 'SUCCESS' });
    expect((await call('POST', '/mj/submit/modal', { taskId: vary.result, prompt: 'again', maskBase64: PNG })).body).toMatchObject({ code: 4 });
  });

  it('answers code 23 once for [sim:429once] and always with x-sim-queue: full', async () => {
    const prompt = `a boat [sim:429once] ${Date.now()}`;
    expect((await call('POST', '/mj/submit/imagine', { prompt })).body).toMatchObject({ code: 23 });
    expect((await call('POST', '/mj/submit/imagine', { prompt })).body).toMatchObject({ code: 1 });
    const full = { 'mj-api-secret': KEY, 'x-sim-queue': 'full' };
    for (let i = 0; i < 2; i++) expect((await call('POST', '/mj/submit/imagine', { prompt: 'b' }, full)).body).toMatchObject({ code: 23 });
  });
});
