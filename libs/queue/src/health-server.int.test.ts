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
  it('serves the process metrics on GET /metrics in the Prometheus text format', async () => {
    const base = await start({ port: 0, checks: {} });
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const body = await r.text();
    expect(body).toMatch(/^# TYPE gmg_tasks_finished_total counter$/m);
    expect(body).toMatch(/^# TYPE gmg_sweeper_last_run_timestamp_seconds gauge$/m);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('answers /healthz 200 and /readyz 200 when every check passes', async () => {
    const base = await start({ port: 0, checks: { postgres: async () => 1, redis: async () => 'PONG' } });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('answers /readyz 503 naming the failing and the hanging dependency, with the detail in the log only', async () => {
    const failures: string[] = [];
    const base = await start({
      port: 0,
      checkTimeoutMs: 100,
      checks: {
        postgres: async () => {
          throw new Error('connection refused 10.0.0.7:5432');
        },
        redis: () => new Promise(() => undefined),
      },
      onCheckFailed: (name, err) => failures.push(`${name}: ${err.message}`),
    });
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: 'not_ready', checks: { postgres: 'error', redis: 'timeout' } });
    expect(failures.sort()).toEqual(['postgres: connection refused 10.0.0.7:5432', 'redis: no answer within 100 ms']);
  });

  it('answers /readyz 503 while draining, /healthz still 200', async () => {
    const base = await start({ port: 0, checks: {}, isDraining: () => true });
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: 'not_ready', checks: { draining: 'yes' } });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('answers while start-up work runs (issue 38): /healthz 200, /readyz 503 `starting` until it is done', async () => {
    let starting = true;
    const base = await start({ port: 0, checks: { redis: async () => 'PONG' }, isStarting: () => starting, liveness: { worker: () => true } });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: 'not_ready', checks: { redis: 'ok', starting: 'yes' } });
    starting = false;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('stays ready while a degradable dependency (Postgres) hangs, naming it degraded; a required one still fails it', async () => {
    const failures: string[] = [];
    const base = await start({
      port: 0,
      checkTimeoutMs: 100,
      checks: { redis: async () => 'PONG' },
      degradable: { postgres: () => new Promise(() => undefined) },
      onCheckFailed: (name) => failures.push(name),
    });
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready', checks: { postgres: 'timeout', redis: 'ok' }, degraded: ['postgres'] });
    expect(failures).toEqual(['postgres']);
    const hard = await start({ port: 0, checkTimeoutMs: 100, checks: { redis: () => new Promise(() => undefined) }, degradable: { postgres: async () => 1 } });
    expect((await fetch(`${hard}/readyz`)).status).toBe(503);
  });

  it('answers /healthz 503 naming the liveness checks that fail (a worker that stopped running), 200 otherwise', async () => {
    let running = true;
    const base = await start({ port: 0, checks: {}, liveness: { worker: () => running, redis: () => true } });
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
    running = false;
    const r = await fetch(`${base}/healthz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: 'failing', failing: ['worker'] });
  });
});
