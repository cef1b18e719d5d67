import { UpstreamError } from '@gmg/errors';
import { waitFor, normalizedRequest } from '@gmg/testing';
import { createGatewayAdapter, type ChannelTarget, type UpstreamPoll } from '@gmg/upstream';
import { listenSimChannel, type SimChannel } from './sim-channel.test-kit';

const KEY = 'sim-channel-key-42';

const normalized = normalizedRequest;

describe('gateway adapter against upstream-sim (SIM_TIME_SCALE 0.05)', () => {
  let sim: SimChannel;
  let ch: ChannelTarget;
  const adapter = createGatewayAdapter({ timeoutMs: 5000 });

  beforeAll(async () => {
    sim = await listenSimChannel(KEY);
    ch = sim.channel;
  });
  afterAll(() => sim.close());

  const untilTerminal = (id: string): Promise<UpstreamPoll> =>
    waitFor(
      async () => {
        const p = await adapter.poll(ch, id);
        return p.status === 'completed' || p.status === 'failed' ? p : undefined;
      },
      { timeoutMs: 5000, what: `sim task ${id} terminal` },
    );

  const errorOf = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as UpstreamError,
    );

  it('submits a lumen task and polls it to a completed result with the expected image link', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'a lighthouse', resolution: '1MP', size: '3:2' });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 'task_ours_a' });
    expect(upstreamTaskId).toMatch(/^task_/);
    const done = await untilTerminal(upstreamTaskId);
    expect(done.status).toBe('completed');
    expect(done.progress).toBe(100);
    expect(done.result?.images?.[0].url).toMatch(/\/files\/task_\w+-0-1248x832\.jpg$/);
  });

  it('resubmitting with the same task id returns the same upstream task (idempotency key)', async () => {
    const req = normalized({ model: 'lumen-2-flex', prompt: 'same', resolution: '1MP' });
    const a = await adapter.submit(ch, req, { taskId: 'task_ours_idem' });
    const b = await adapter.submit(ch, req, { taskId: 'task_ours_idem' });
    expect(b.upstreamTaskId).toBe(a.upstreamTaskId);
  });

  it('[sim:error503once]: the first submit is a retryable error, the retry succeeds', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'flaky [sim:error503once]', resolution: '1MP' });
    const e = await errorOf(adapter.submit(ch, req, { taskId: 'task_ours_503' }));
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ retryable: true, status: 503 });
    await expect(adapter.submit(ch, req, { taskId: 'task_ours_503' })).resolves.toEqual({ upstreamTaskId: expect.stringMatching(/^task_/) });
  });

  it('[sim:moderation] polls to a failed task flagged as moderation', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'bad [sim:moderation]', resolution: '1MP' });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 'task_ours_mod' });
    const p = await untilTerminal(upstreamTaskId);
    expect(p).toMatchObject({ status: 'failed', error: { message: 'Banned prompt detected', type: 'moderation', moderation: true } });
  });

  it('[sim:fail] polls to a failed task that is not moderation', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'oops [sim:fail]', resolution: '1MP' });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 'task_ours_fail' });
    const p = await untilTerminal(upstreamTaskId);
    expect(p).toMatchObject({ status: 'failed', error: { message: 'Generation failed (simulated)', moderation: false } });
  });

  it('a wrong channel key is a retryable channel error that never shows the key', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'x', resolution: '1MP' });
    const e = await errorOf(adapter.submit({ ...ch, apiKey: 'wrong-key-123' }, req, { taskId: 't' }));
    expect(e).toMatchObject({ retryable: true, kind: 'channel', status: 401 });
    expect(e?.message).not.toContain('wrong-key-123');
  });

  it('a body the upstream rejects is a final error', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'x', resolution: '1MP' });
    const e = await errorOf(adapter.submit(ch, { ...req, upstreamBody: { ...req.upstreamBody, steps: 3 } }, { taskId: 't2' }));
    expect(e).toMatchObject({ retryable: false, kind: 'bad_request', status: 400 });
  });

  it('polling an id the upstream does not know is a final not_found error', async () => {
    await expect(adapter.poll(ch, 'task_unknown')).rejects.toMatchObject({ retryable: false, kind: 'not_found' });
  });
  it('cancels a running sim task: it ends failed with type cancelled; a second cancel (409) is not an error', async () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'a lighthouse [sim:never]', resolution: '1MP', size: '3:2' });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 'task_ours_cancel' });
    expect((await adapter.poll(ch, upstreamTaskId)).status).not.toBe('failed');
    await adapter.cancel!(ch, upstreamTaskId, req);
    const p = await adapter.poll(ch, upstreamTaskId);
    expect(p.status).toBe('failed');
    expect(p.error).toMatchObject({ type: 'cancelled' });
    await expect(adapter.cancel!(ch, upstreamTaskId, req)).resolves.toBeUndefined();
    const missing = await errorOf(adapter.cancel!(ch, 'task_nope', req));
    expect(missing).toBeInstanceOf(UpstreamError);
    expect(missing?.status).toBe(404);
  });
});
