import { routeOf, renderMetrics } from './http-metrics';
import { recordSweep } from './metrics';
import { cached, reportChannelHealth, trackBreaker } from './scrape-gauges';
import { currentTraceId, traceCarrier, withSpan } from './tracing';

describe('routeOf', () => {
  it('labels a request with the route pattern that answered, joined to its router mount path', () => {
    expect(routeOf({ baseUrl: '', route: { path: '/v1/tasks/:id' } } as never)).toBe('/v1/tasks/:id');
    expect(routeOf({ baseUrl: '/api', route: { path: '/keys/:id' } } as never)).toBe('/api/keys/:id');
  });
  it('labels a request no route answered `unmatched`, never its raw path', () => {
    expect(routeOf({ baseUrl: '', route: undefined } as never)).toBe('unmatched');
  });
});

describe('cached', () => {
  it('loads once per period, shares the pending load, and retries after a failure', async () => {
    let t = 0;
    let calls = 0;
    let fail = false;
    const get = cached(
      async () => {
        calls++;
        if (fail) throw new Error('down');
        return calls;
      },
      1000,
      () => t,
    );
    expect(await Promise.all([get(), get()])).toEqual([1, 1]);
    t = 999;
    expect(await get()).toBe(1);
    t = 1000;
    fail = true;
    await expect(get()).rejects.toThrow('down');
    fail = false;
    expect(await get()).toBe(3);
    expect(calls).toBe(3);
  });
});

describe('scrape output', () => {
  it('exports sweeps by action with the last run time, and each tracked breaker by channel name', async () => {
    recordSweep('unit-pool', { requeued: 2, timed_out: 0 });
    let state: 'closed' | 'open' | 'half_open' = 'open';
    trackBreaker({ state: () => state }, { id: 'ch-1', name: 'unit-channel' });
    let { body } = await renderMetrics();
    expect(body).toContain('gmg_sweeper_actions_total{sweeper="unit-pool",action="requeued"} 2');
    expect(body).not.toContain('sweeper="unit-pool",action="timed_out"');
    expect(body).toMatch(/gmg_sweeper_last_run_timestamp_seconds\{sweeper="unit-pool"\} \d+/);
    expect(body).toContain('gmg_circuit_breaker_state{channel="unit-channel"} 2');
    state = 'closed';
    ({ body } = await renderMetrics());
    expect(body).toContain('gmg_circuit_breaker_state{channel="unit-channel"} 0');
  });

  it('exports the shared channel health: 1 for each row\'s current status, 0 for the others; the channel itself as key=""', async () => {
    reportChannelHealth(async () => [
      { channel: 'health-ch', key: null, status: 'cooling' },
      { channel: 'health-ch', key: 'k-1', status: 'disabled' },
    ]);
    const { body } = await renderMetrics();
    expect(body).toContain('gmg_channel_health{channel="health-ch",key="",status="cooling"} 1');
    expect(body).toContain('gmg_channel_health{channel="health-ch",key="",status="active"} 0');
    expect(body).toContain('gmg_channel_health{channel="health-ch",key="k-1",status="disabled"} 1');
    expect(body).toContain('gmg_channel_health{channel="health-ch",key="k-1",status="cooling"} 0');
  });
});

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('runs the work, injects no context into job data and has no trace id', async () => {
    const out = await withSpan('x', {}, async () => ({ carrier: traceCarrier(), traceId: currentTraceId() }));
    expect(out).toEqual({ carrier: undefined, traceId: undefined });
  });
  it('rethrows what the work throws', async () => {
    await expect(
      withSpan('x', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });
});
