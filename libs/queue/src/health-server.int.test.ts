import { startHealthServer, type HealthServer } from './health-server';

let servers: HealthServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const start = async (...args: Parameters<typeof startHealthServer>): Promise<string> => {
  const s = await startHealthServer({ host: '127.0.0.1', ...args[0] });
  servers.push(s);
  return `http://127.0.0.1:${s.port}`;
};

describe('health server', () => {
  it('answers /healthz 200 and /readyz 200 when every check passes', async () => {
    const base = await start({ port: 0, checks: { postgres: async () => 1, redis: async () => 'PONG' } });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('answers /readyz 503 naming the failing and the hanging dependency', async () => {
    const base = await start({
      port: 0, checkTimeoutMs: 100,
      checks: { postgres: async () => { throw new Error('connection refused'); }, redis: () => new Promise(() => undefined) },
    });
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    const body = (await r.json()) as { checks: Record<string, string> };
    expect(body.checks.postgres).toContain('connection refused');
    expect(body.checks.redis).toContain('timed out');
  });

  it('answers /readyz 503 while draining, /healthz still 200', async () => {
    const base = await start({ port: 0, checks: {}, isDraining: () => true });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
