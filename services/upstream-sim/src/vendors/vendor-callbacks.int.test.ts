import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { createUpstreamAdapters } from '@gmg/upstream';
import { waitFor } from '@gmg/testing';
import { failure, listenVendorSim, type VendorSim } from './vendor-sim.test-kit';

/**
 * Vendor callbacks (issue 35 item 8) against the simulator's strict vendor modes over real HTTP: each adapter sends
 * the callback URL it is given the way its vendor documents it, the simulator refuses a malformed one, and when the
 * task ends it posts the vendor's own callback body there. Real clock at a small time scale (tasks end in well under a
 * second); the receiver below stands in for the edge.
 */
const adapters = createUpstreamAdapters({ timeoutMs: 5000 });
const got: Array<{ path: string; body: Record<string, unknown> }> = [];
let receiver: Server;
let hookBase: string;
const sims: VendorSim[] = [];

const readJson = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    void readJson(req).then((body) => {
      got.push({ path: req.url ?? '', body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/upstream-callbacks`;
});
afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

function request(body: Record<string, unknown>): NormalizedRequest {
  const model = String(body.model);
  const v = validateRequest(resolveModel(model)!, body, model);
  if (!v.ok) throw new Error(v.violation.message);
  return v.value;
}
async function sim(protocol: string, apiKey: string): Promise<VendorSim> {
  const s = await listenVendorSim(protocol, { apiKey, now: Date.now, timeScale: 0.05 });
  sims.push(s);
  return s;
}
const callbackTo = async (path: string) => {
  await waitFor(() => got.some((g) => g.path === path), { timeoutMs: 10_000, intervalMs: 20, what: `a callback to ${path}` });
  return got.filter((g) => g.path === path);
};

describe('vendor callbacks against upstream-sim', () => {
  it('fal: fal_webhook on the queue submit; the webhook body {request_id, status OK, payload} once the request ends', async () => {
    const s = await sim('fal', 'fal-key-0123456789');
    const fal = adapters.getAdapter('fal')!;
    expect(fal.callbacks).toBe(true);
    const url = `${hookBase}/fal-1.image.9999999999.sig`;
    const { upstreamTaskId } = await fal.submit(s.channel, request({ model: 'lumen-2-flex', prompt: 'a harbour', resolution: '1MP' }), {
      taskId: 't1',
      callbackUrl: url,
    });
    const post = (await s.seen()).find((r) => r.method === 'POST')!;
    expect(new URL(post.path, s.origin).searchParams.get('fal_webhook')).toBe(url);
    const [hook] = await callbackTo('/v1/upstream-callbacks/fal-1.image.9999999999.sig');
    expect(upstreamTaskId.endsWith(`/requests/${String(hook!.body.request_id)}`)).toBe(true);
    expect(hook!.body).toMatchObject({ status: 'OK', error: null, payload: { images: [expect.objectContaining({ url: expect.any(String) })] } });
    expect((await fal.poll(s.channel, upstreamTaskId)).status).toBe('completed');
    // a malformed webhook is refused as fal refuses a request (422), before any task exists
    const bad = await failure(
      fal.submit(s.channel, request({ model: 'lumen-2-flex', prompt: 'x', resolution: '1MP' }), { taskId: 't2', callbackUrl: 'not a url' }),
    );
    expect(bad?.status).toBe(422);
  });

  it('replicate: webhook + webhook_events_filter [completed]; the webhook body is the ended prediction', async () => {
    const s = await sim('replicate', 'r8_key_0123456789');
    const rep = adapters.getAdapter('replicate')!;
    const url = `${hookBase}/rep-1.image.9999999999.sig`;
    const { upstreamTaskId } = await rep.submit(
      s.channel,
      request({ model: 'lumen-2-flex', prompt: 'a quiet harbour [sim:fail]', size: '1:1', resolution: '1MP' }),
      {
        taskId: 't3',
        callbackUrl: url,
      },
    );
    const post = (await s.seen()).find((r) => r.method === 'POST')!;
    expect(post.body).toMatchObject({ webhook: url, webhook_events_filter: ['completed'] });
    const [hook] = await callbackTo('/v1/upstream-callbacks/rep-1.image.9999999999.sig');
    expect(hook!.body).toMatchObject({ id: upstreamTaskId, status: 'failed' });
    const bad = await failure(
      rep.submit(s.channel, request({ model: 'lumen-2-flex', prompt: 'x', size: '1:1', resolution: '1MP' }), { taskId: 't4', callbackUrl: 'ftp://x' }),
    );
    expect(bad?.status).toBe(422);
  });

  it('kling: callback_url in the body; the callback carries the task as the query does (task_status succeed)', async () => {
    const s = await sim('kling', 'kling-access-key|kling-secret-key-0123456789');
    const kling = adapters.getAdapter('kling')!;
    const url = `${hookBase}/kl-1.video.9999999999.sig`;
    const { upstreamTaskId } = await kling.submit(s.channel, request({ model: 'kinetic-video-o1', prompt: 'a kite', aspect_ratio: '16:9' }), {
      taskId: 't5',
      callbackUrl: url,
    });
    const post = (await s.seen()).find((r) => r.method === 'POST')!;
    expect(post.body.callback_url).toBe(url);
    const [hook] = await callbackTo('/v1/upstream-callbacks/kl-1.video.9999999999.sig');
    expect(`omni-video:${String(hook!.body.task_id)}`).toBe(upstreamTaskId);
    expect(hook!.body).toMatchObject({ task_status: 'succeed', task_result: { videos: [expect.objectContaining({ url: expect.any(String) })] } });
    const bad = await failure(
      kling.submit(s.channel, request({ model: 'kinetic-video-o1', prompt: 'x', aspect_ratio: '16:9' }), { taskId: 't6', callbackUrl: 'nope' }),
    );
    expect(bad?.status).toBe(400);
  });

  it('ark: callback_url on a Seedance task; the callback carries the task object (status succeeded)', async () => {
    const s = await sim('ark', 'ark-key-0123456789');
    const ark = adapters.getAdapter('ark')!;
    const url = `${hookBase}/ark-1.video.9999999999.sig`;
    const { upstreamTaskId } = await ark.submit(s.channel, request({ model: 'motion-1-0-pro-fast', prompt: 'a heron', duration: 5 }), {
      taskId: 't7',
      callbackUrl: url,
    });
    const post = (await s.seen()).find((r) => r.method === 'POST')!;
    expect(post.body.callback_url).toBe(url);
    const [hook] = await callbackTo('/v1/upstream-callbacks/ark-1.video.9999999999.sig');
    expect(hook!.body).toMatchObject({ id: upstreamTaskId, status: 'succeeded', content: { video_url: expect.any(String) } });
    const bad = await failure(
      ark.submit(s.channel, request({ model: 'motion-1-0-pro-fast', prompt: 'x', duration: 5 }), { taskId: 't8', callbackUrl: '/relative' }),
    );
    expect(bad?.status).toBe(400);
  });
});
