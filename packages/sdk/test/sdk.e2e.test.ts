/**
 * The SDK against the real gateway: api-edge, worker-image, worker-video, worker-artgen and billing as processes,
 * the upstream simulator as a process, real Postgres and Redis. Only the SDK talks to the edge.
 */
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository, ChannelRepository } from '@gmg/db';
import { startSimStack, type SimStack, type TestDatabase } from '@gmg/testing';
import {
  ArtgenNotFoundError,
  AuthenticationError,
  GatewayClient,
  GatewayError,
  InvalidRequestError,
  NotFoundError,
  PaymentRequiredError,
  RateLimitError,
  TaskFailedError,
  WaitTimeoutError,
  type RetryInfo,
  type Task,
} from '../src/index.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
/** Fast polling for tests: the simulator runs at 0.2× time, so tasks end in seconds. */
const FAST = { minIntervalMs: 100, maxIntervalMs: 500, timeoutMs: 60_000 };

describe('sdk e2e: every endpoint family through the real gateway', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let base: string;
  let key: string;
  let gmg: GatewayClient;

  const newKey = async (balanceMinor: bigint, extra: { rpsLimit?: number } = {}) => {
    const accounts = new AccountRepository(db.dataSource);
    const a = await accounts.create({ name: `sdk-e2e-${balanceMinor}` });
    if (balanceMinor > 0n) await accounts.topup(a.id, balanceMinor);
    return (await new ApiKeyRepository(db.dataSource).create({ accountId: a.id, ...extra })).secret;
  };
  const download = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_sdk', timeScale: '0.2' });
    db = stack.db;
    await new ChannelRepository(db.dataSource).create({ name: 'sim-chat', protocol: 'messages', baseUrl: stack.simUrl, models: ['lumen-chat-1'], priority: 0 });
    const worker = { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000' };
    const [edge] = await Promise.all([
      stack.start('api-edge', (url) => ({ ADMIN_TOKEN, PUBLIC_BASE_URL: url })),
      stack.start('worker-image', worker),
      stack.start('worker-video', worker),
      stack.start('worker-artgen', worker),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000', UNSETTLED_AFTER_MS: '1000' }),
    ]);
    base = edge.url;
    key = await newKey(1_000_000_000n);
    gmg = new GatewayClient({ baseUrl: base, apiKey: key });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('generates a lumen-2-pro image, waits for it (progress reported) and downloads it', async () => {
    const { taskId, httpStatus } = await gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse at dusk', size: '16:9', resolution: '1MP' });
    expect(httpStatus).toBe(200);
    const seen: Task[] = [];
    const task = await gmg.tasks.wait(taskId, { ...FAST, onProgress: (t) => seen.push(t) });
    expect(task).toMatchObject({ id: taskId, status: 'completed', progress: 100 });
    expect(task.cost).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.at(-1)!.status).toBe('completed');
    expect(seen.every((t) => typeof t.estimated_time === 'number')).toBe(true);
    const meta = await sharp(await download(task.result!.images![0]!.url)).metadata();
    expect(meta.format).toBe('jpeg');
    expect(meta.width! / meta.height!).toBeCloseTo(16 / 9, 1);
  });

  it('generates a pixel-v6 video and reads its file link', async () => {
    const { taskId } = await gmg.videos.generate({ model: 'pixel-v6', prompt: 'waves on a shore', duration: 5, resolution: '540p' });
    const task = await gmg.waitForTask(taskId, FAST);
    expect(task.status).toBe('completed');
    const file = await download(task.result!.videos![0]!.url[0]!);
    expect(file.subarray(4, 8).toString('latin1')).toBe('ftyp'); // an MP4 container
  });

  it('sends an Idempotency-Key on every submit: the same key answers the same task, a new call a new task', async () => {
    const body = { model: 'lumen-2-flex', prompt: 'idempotent fox' } as const;
    const a = await gmg.images.generate(body, { idempotencyKey: 'sdk-e2e-same-key' });
    const b = await gmg.images.generate(body, { idempotencyKey: 'sdk-e2e-same-key' });
    const c = await gmg.images.generate(body);
    expect(b.taskId).toBe(a.taskId);
    expect(c.taskId).not.toBe(a.taskId);
  });

  it('a retry after a lost answer reuses the Idempotency-Key: one task, not two', async () => {
    const created: string[] = [];
    const keys: string[] = [];
    let calls = 0;
    // the first answer is received by the "network" and then lost: the server created a task the caller never saw
    const lossy: typeof fetch = async (input, init) => {
      calls++;
      keys.push(new Headers(init?.headers).get('idempotency-key') ?? '');
      const res = await fetch(input, init);
      if (calls === 1) {
        created.push(((await res.json()) as { data: Array<{ task_id: string }> }).data[0]!.task_id);
        throw new TypeError('socket hang up');
      }
      return res;
    };
    const client = new GatewayClient({ baseUrl: base, apiKey: key, fetch: lossy, retryBaseDelayMs: 50 });
    const { taskId } = await client.images.generate({ model: 'lumen-2-flex', prompt: 'a task created once' });
    expect(calls).toBe(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(taskId).toBe(created[0]);
  });

  it('throws a typed error per spec type, naming the field', async () => {
    const bad = await gmg.images.generate({ model: 'lumen-2-pro', prompt: 'x', size: 'sideways' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidRequestError);
    expect(bad).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'size' });
    expect((bad as Error).message).toMatch(/size/);

    const stranger = new GatewayClient({ baseUrl: base, apiKey: 'sk-not-a-key-of-ours' });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(AuthenticationError);

    const broke = new GatewayClient({ baseUrl: base, apiKey: await newKey(0n) });
    await expect(broke.images.generate({ model: 'lumen-2-pro', prompt: 'no money' })).rejects.toMatchObject({ constructor: PaymentRequiredError, status: 402 });

    const missing = await gmg.tasks.get('task_doesnotexist000000000000').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).not.toBeInstanceOf(ArtgenNotFoundError);
    expect(missing).toMatchObject({ status: 404, type: 'not_found_error' });
    await expect(gmg.artgen.get('task_doesnotexist000000000000')).rejects.toMatchObject({ constructor: ArtgenNotFoundError, type: 'not_found' });
    expect(bad).toBeInstanceOf(GatewayError);
  });

  it('retries a 429 after its Retry-After (bounded), and throws it when retries are off', async () => {
    const limitedKey = await newKey(1_000_000_000n, { rpsLimit: 1 });
    const noRetry = new GatewayClient({ baseUrl: base, apiKey: limitedKey, maxRetries: 0 });
    const body = { model: 'lumen-2-flex', prompt: 'rate limited' } as const;
    const outcomes = await Promise.allSettled([noRetry.images.generate(body), noRetry.images.generate(body), noRetry.images.generate(body)]);
    const limited = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as unknown);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited[0]).toBeInstanceOf(RateLimitError);
    const retryAfter = (limited[0] as RateLimitError).retryAfter!;
    expect(retryAfter).toBeGreaterThanOrEqual(1);

    const retries: RetryInfo[] = [];
    const patient = new GatewayClient({ baseUrl: base, apiKey: limitedKey, maxRetries: 3, onRetry: (r) => retries.push(r) });
    // three at once within at most two one-second windows: at least one is refused and retried
    const results = await Promise.all([patient.images.generate(body), patient.images.generate(body), patient.images.generate(body)]);
    expect(new Set(results.map((r) => r.taskId)).size).toBe(3);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const r of retries) {
      // each refused one paused for the window the server named before trying again
      expect(r.error).toBeInstanceOf(RateLimitError);
      const named = (r.error as RateLimitError).retryAfter!;
      expect(named).toBeGreaterThanOrEqual(1);
      expect(r.delayMs).toBe(named * 1000);
    }
  });

  it('waitForTask: a failed task rejects with TaskFailedError (cost 0), a slow one with WaitTimeoutError, an abort with its reason', async () => {
    const failed = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'doomed [sim:fail]' });
    const err = await gmg.tasks.wait(failed.taskId, FAST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskFailedError);
    expect((err as TaskFailedError).task).toMatchObject({ status: 'failed', cost: 0, error: { code: 'task_failed' } });

    const never = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'forever [sim:never]' });
    // the wait's clock is the test's: each poll moves it 300 ms, so polls at 0, 300 and 600 ms see the task open and
    // the one at 900 ms is past the 800 ms timeout: three polls, then WaitTimeoutError (a wait that kept polling
    // would be stopped by the signal at the tenth)
    let clock = 0;
    const polls: Task[] = [];
    const runaway = new AbortController();
    const timedOut = await gmg.tasks
      .wait(never.taskId, {
        ...FAST,
        timeoutMs: 800,
        now: () => clock,
        signal: runaway.signal,
        onProgress: (t) => {
          polls.push(t);
          clock += 300;
          if (polls.length >= 10) runaway.abort(new Error('still polling past the timeout'));
        },
      })
      .catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WaitTimeoutError);
    expect(timedOut).toMatchObject({ taskId: never.taskId, timeoutMs: 800 });
    expect(polls).toHaveLength(3);
    expect(polls.every((t) => t.status !== 'completed' && t.status !== 'failed')).toBe(true);

    const controller = new AbortController();
    const waiting = gmg.tasks.wait(never.taskId, { ...FAST, signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
  });

  it('tasks.cancel ends an open task as failed/cancelled at no cost; a second cancel is a typed 409, a foreign id a NotFoundError', async () => {
    const open = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'to be cancelled [sim:never]' });
    const cancelled = await gmg.tasks.cancel(open.taskId);
    expect(cancelled).toMatchObject({ id: open.taskId, status: 'failed', cost: 0, error: { type: 'cancelled' } });
    const waited = await gmg.tasks.wait(open.taskId, FAST).catch((e: unknown) => e);
    expect(waited).toBeInstanceOf(TaskFailedError);

    const again = await gmg.tasks.cancel(open.taskId).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(GatewayError);
    expect((again as GatewayError).status).toBe(409);
    await expect(gmg.tasks.cancel('task_doesnotexist000000000000')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lists models with their JSON Schema and uploads an image usable in image_urls', async () => {
    const models = await gmg.models.list({ expand: 'parameters', category: 'image' });
    const lumen = models.find((m) => m.id === 'lumen-2-pro');
    expect(lumen?.parameters?.input_schema).toMatchObject({ type: 'object', properties: { prompt: { type: 'string' } } });
    expect(models.every((m) => m.category === 'image')).toBe(true);
    const schema = await gmg.models.schema('lumen-2-pro');
    expect(schema).toMatchObject({ id: 'lumen-2-pro', idempotency: { header: 'Idempotency-Key' } });

    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a6' } })
      .png()
      .toBuffer();
    const upload = await gmg.uploads.image(new Blob([new Uint8Array(png)], { type: 'image/png' }), { filename: 'ref.png' });
    expect(upload).toMatchObject({ mime: 'image/png', width: 64, height: 48, url: expect.stringContaining(`${base}/v1/uploads/`) });
    const viaBase64 = await gmg.uploads.image(png.toString('base64'));
    expect(viaBase64.url).not.toBe(upload.url);
    const { taskId } = await gmg.images.generate({ model: 'lumen-2-pro', prompt: 'restyle this', image_urls: [upload.url] });
    expect((await gmg.tasks.wait(taskId, FAST)).status).toBe('completed');
  });

  it('art suite: imagine, wait, then a follow-up by method and by button', async () => {
    const imagine = await gmg.artgen.imagine({ prompt: 'a red fox in snow --ar 3:2', speed: 'fast' });
    expect(imagine.ack).toMatchObject({ code: 200, data: { action: 'IMAGINE', status: 'SUBMITTED' } });
    expect((await gmg.tasks.wait(imagine.taskId, FAST)).status).toBe('completed');
    const grid = await gmg.artgen.get(imagine.taskId);
    expect(grid).toMatchObject({ status: 'SUCCESS', image_urls: expect.any(Array) });
    expect(grid.image_urls).toHaveLength(4);

    const upscale = await gmg.artgen.upscale({ task_id: imagine.taskId, index: 2 });
    const button = grid.buttons.find((b) => b.label === 'V1')!;
    const variation = await gmg.artgen.action({ task_id: imagine.taskId, customId: button.customId });
    await Promise.all([gmg.tasks.wait(upscale.taskId, FAST), gmg.tasks.wait(variation.taskId, FAST)]);
    expect((await gmg.artgen.get(upscale.taskId)).image_urls).toHaveLength(1);
    expect((await gmg.artgen.get(variation.taskId)).image_urls).toHaveLength(4);
  });

  it('avatars.submit and messages.create reach their endpoints (refusals come back typed, naming the field)', async () => {
    const both = await gmg.avatars
      .submit({ url: 'https://cdn.example.com/a.png', name: 'a', assets: [{ url: 'https://cdn.example.com/b.png', name: 'b' }] })
      .catch((e: unknown) => e);
    expect(both).toBeInstanceOf(InvalidRequestError);
    expect((both as InvalidRequestError).status).toBe(400);

    const chat = await gmg.messages.create({ model: 'lumen-chat-1', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(InvalidRequestError);
    expect(chat).toMatchObject({ status: 400, param: 'max_tokens' });
  });

  it('messages.create passes the protocol through: the parsed answer, or with stream the raw event stream', async () => {
    const messages = [{ role: 'user' as const, content: 'Say hello' }];
    const answer = await gmg.messages.create({ model: 'lumen-chat-1', max_tokens: 64, messages });
    expect(answer).toMatchObject({ type: 'message', role: 'assistant', usage: { output_tokens: expect.any(Number) } });

    const res = await gmg.messages.create({ model: 'lumen-chat-1', max_tokens: 64, messages, stream: true });
    expect(res).toBeInstanceOf(Response);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await res.text();
    expect(events).toContain('event: message_start');
    expect(events).toContain('event: message_stop');
  });

  it('chat.completions.create speaks chat-completions: the parsed completion, the raw chunk stream, refusals typed with their param', async () => {
    const messages = [{ role: 'user' as const, content: 'Say hello' }];
    const answer = await gmg.chat.completions.create({ model: 'lumen-chat-1', messages });
    expect(answer).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'Hello! You said: Say hello' }, finish_reason: 'stop' }],
    });
    expect(answer.usage.total_tokens).toBeGreaterThan(0);

    const res = await gmg.chat.completions.create({ model: 'lumen-chat-1', messages, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await res.text();
    expect(events).toContain('"object":"chat.completion.chunk"');
    expect(events.endsWith('data: [DONE]\n\n')).toBe(true);

    const two = await gmg.chat.completions.create({ model: 'lumen-chat-1', messages, n: 2 }).catch((e: unknown) => e);
    expect(two).toBeInstanceOf(InvalidRequestError);
    expect(two).toMatchObject({ status: 400, param: 'n' });
  });
});
