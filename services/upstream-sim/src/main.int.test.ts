import { freePort, startService, waitFor, type ServiceProcess } from '@gmg/testing';

describe('upstream-sim process', () => {
  let sim: ServiceProcess | undefined;
  afterAll(async () => {
    await sim?.stop(2000);
  });

  it('starts from its environment, serves a task, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    sim = await startService('upstream-sim', { PORT: String(port), SIM_TIME_SCALE: '0.05', SIM_API_KEY: 'proc-key' }, `${base}/healthz`);
    const headers = { Authorization: 'Bearer proc-key', 'Content-Type': 'application/json' };
    const sub = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'lumen-2-max', prompt: 'a boat', resolution: '1MP', size: '1:1' }),
    });
    expect(sub.status).toBe(200);
    const id = ((await sub.json()) as { data: Array<{ task_id: string }> }).data[0].task_id;
    const url = await waitFor(
      async () => {
        const t = (await (await fetch(`${base}/v1/tasks/${id}`, { headers })).json()) as {
          data: { status: string; result?: { images: Array<{ url: string }> } };
        };
        return t.data.status === 'completed' ? t.data.result!.images[0].url : undefined;
      },
      { timeoutMs: 10_000, what: 'task completed' },
    );
    expect(url.startsWith(`${base}/files/`)).toBe(true);
    const file = await fetch(url);
    expect(file.headers.get('content-type')).toBe('image/jpeg');
    expect(await sim.stop(5000)).toBe(0);
    sim = undefined;
  });
});
