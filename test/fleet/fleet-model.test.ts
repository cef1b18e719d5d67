import { dayCurve, loadFleetConfig } from '../../scripts/fleet/config';
import { coresAt, size, type Costs } from '../../scripts/fleet/capacity-model';
import { DEFAULT_MIX, KINDS, parseMix, pick, taskIdOf } from '../../scripts/fleet/mix';

const costs: Costs = {
  measuredAt: '2026-11-25T00:00:00.000Z', machine: 'test',
  edgeMsPerSubmit: 4, edgeMsPerPoll: 1,
  workerMsPerStep: { image: 2, video: 2, artgen: 2, avatar: 2 },
  stepsPerTask: { image: 3, video: 5, artgen: 3, avatar: 2 },
  billingMsPerSettlement: 3, webhookShare: 0.5,
  redisCmdsPerTask: 40, redisCmdsPerPoll: 2, redisUsPerCmd: 5, redisBytesPerTask: 1000,
  pgTxPerTask: 4, pgMsPerTask: 2, pgWalBytesPerTask: 2000, pgStorageBytesPerTask: 4000, pgMsPerTx: 2, bouncerMsPerTx: 0.05,
  mix: { image: 70, video: 12, artgen: 10, avatar: 3 }, pollsPerTask: 3,
};

describe('fleet traffic mix and the compressed day', () => {
  it('picks each kind in proportion to its share, and the day curve averages the mean rate with its peak mid-run', () => {
    const n = 20_000;
    const counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<string, number>;
    for (let i = 0; i < n; i++) counts[pick(DEFAULT_MIX, (i + 0.5) / n)]!++;
    for (const k of KINDS) expect(Math.abs(counts[k]! / n - DEFAULT_MIX[k] / 100)).toBeLessThan(0.001);
    const curve = dayCurve({ rate: 100, peak: 1.5, minutes: 2 });
    const samples = Array.from({ length: 1200 }, (_, i) => curve((i + 0.5) * 100));
    expect(samples.reduce((a, b) => a + b, 0) / samples.length).toBeCloseTo(100, 0);
    expect(curve(60_000)).toBeCloseTo(150, 5);
    expect(curve(0)).toBeCloseTo(50, 5);
  });

  it('refuses a bad mix or knob naming each one, and reads every acknowledgement shape', () => {
    expect(() => parseMix('image=70,pixels=3')).toThrow(/pixels=3/);
    expect(() => loadFleetConfig({ FLEET_MINUTES: '0', FLEET_RATE: 'x' })).toThrow(/FLEET_MINUTES=0[\s\S]*FLEET_RATE=x/);
    expect(parseMix('image=1')).toEqual({ image: 1, video: 0, artgen: 0, avatar: 0, messages: 0 });
    expect(taskIdOf({ data: [{ task_id: 'task_a' }] })).toBe('task_a');
    expect(taskIdOf({ code: 200, data: { task_id: 'task_b', action: 'imagine' } })).toBe('task_b');
    expect(taskIdOf({ code: 200, data: { id: 'task_c', object: 'motion.avatar.asset.task' } })).toBe('task_c');
  });
});

describe('capacity model', () => {
  it('scales cores linearly with the rate and sizes pods, shards and connections from the costs', () => {
    const one = coresAt(costs, 100, costs.mix, 3);
    const two = coresAt(costs, 200, costs.mix, 3);
    for (const k of Object.keys(one)) expect(two[k]).toBeCloseTo(2 * one[k]!, 9);
    // edge: 100 tasks/s × (4 ms + 3 polls × 1 ms) = 0.7 cores
    expect(one['api-edge']).toBeCloseTo(0.7, 9);
    const s = size(costs, { tasksPerDay: 10_000_000, peakFactor: 3, mix: costs.mix, pollsPerTask: 3 });
    expect(s.peakTasksPerS).toBeCloseTo(347.2, 1);
    expect(s.pods['api-edge']).toBe(Math.ceil((s.peakTasksPerS * 7) / 1000 / 0.6));
    expect(s.redisShards).toBeGreaterThanOrEqual(3);
    expect(s.storageGiBPerDay).toBeCloseTo((10_000_000 * 4000) / 2 ** 30, 6);
    expect(s.firstBottleneck).toMatch(/tasks\/s/);
    const total = Object.values(coresAt(costs, 1, costs.mix, 3)).reduce((a, b) => a + b, 0);
    expect(s.tasksPerSPerCore).toBeCloseTo(1 / total, 9);
  });
});
