import { dayCurve, loadFleetConfig } from '../../scripts/fleet/config';
import { REDIS_CMDS_PER_STEP, coresAt, redisCmdsAt, size, stepsFor, type Costs } from '../../scripts/fleet/capacity-model';
import { constrainedPlane, fitWindows, measureCosts, modelCheck } from '../../scripts/fleet/costs';
import type { Driver } from '../../scripts/fleet/driver';
import type { Snapshot } from '../../scripts/fleet/sampler';
import { DEFAULT_MIX, KINDS, parseMix, pick, taskIdOf } from '../../scripts/fleet/mix';

const costs: Costs = {
  measuredAt: '2026-11-25T00:00:00.000Z',
  machine: 'test',
  edgeMsPerSubmit: 4,
  edgeMsPerPoll: 1,
  workerMsPerStep: { image: 2, video: 2, artgen: 2, avatar: 2 },
  stepsPerTask: { image: 3, video: 5, artgen: 3, avatar: 2 },
  billingMsPerSettlement: 3,
  webhookShare: 0.5,
  redisCmdsPerTask: 40,
  redisCmdsPerPoll: 2,
  redisUsPerCmd: 5,
  redisBytesPerTask: 1000,
  pgTxPerTask: 4,
  pgMsPerTask: 2,
  pgWalBytesPerTask: 2000,
  pgStorageBytesPerTask: 4000,
  pgMsPerTx: 2,
  bouncerMsPerTx: 0.05,
  mix: { image: 70, video: 12, artgen: 10, avatar: 3 },
  pollsPerTask: 3,
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

describe('per-operation costs of a fleet run', () => {
  const snap = (
    at: number,
    o: {
      cpu: Record<string, number>;
      steps: Record<string, number>;
      settlements: number;
      redis: number;
      pgX: number;
      bx: number;
      wal: number;
      mem: number;
      db: number;
    },
  ): Snapshot => ({
    at,
    cpu: o.cpu,
    rss: {},
    redisCommands: { '7000': o.redis },
    redisMasters: ['7000'],
    redisMemory: o.mem,
    pgXacts: o.pgX,
    pgWalBytes: o.wal,
    pgBackends: 0,
    bouncerClients: 0,
    bouncerServers: 0,
    bouncerWaiting: 0,
    bouncerXacts: o.bx,
    completed: 0,
    failed: 0,
    bouncerActive: 2,
    dbBytes: o.db,
    steps: o.steps,
    settlements: o.settlements,
    lateness: { buckets: [], count: 0, sum: 0 } as unknown as Snapshot['lateness'],
  });

  it('divides every resource of the load phase by what drove it in the same phase, so the costs reproduce their own run', () => {
    // 100 s, 1000 tasks (800 image, 200 video), 600 client polls, 50 messages calls; settlements count 1.5 attempts per
    // task, PgBouncer pools fewer transactions than the server counts, and the drain after the phase keeps billing busy
    const zero = { 'api-edge#1': 0, 'api-edge#2': 0, 'billing#1': 0, 'worker-image#1': 0, 'worker-video#1': 0, pgbouncer: 0, 'redis:7000': 0, postgres: 0 };
    const a = snap(0, { cpu: zero, steps: { image: 0, video: 0 }, settlements: 0, redis: 0, pgX: 0, bx: 0, wal: 0, mem: 0, db: 0 });
    const b = snap(100_000, {
      cpu: { 'api-edge#1': 12, 'api-edge#2': 8, 'billing#1': 15, 'worker-image#1': 9, 'worker-video#1': 4, pgbouncer: 3, 'redis:7000': 10, postgres: 25 },
      steps: { image: 900, video: 210 },
      settlements: 1500,
      redis: 300_000,
      pgX: 25_000,
      bx: 20_000,
      wal: 9e6,
      mem: 5e6,
      db: 4e6,
    });
    const end = snap(160_000, {
      ...{ cpu: { ...b.cpu, 'billing#1': 40 }, steps: { image: 990, video: 240 }, settlements: 1700, redis: 0, pgX: 0, bx: 0, wal: 0, mem: 0, db: 6e6 },
    });
    const tasks = new Map(Array.from({ length: 1000 }, (_, i) => [`t${i}`, { id: `t${i}`, kind: i < 800 ? 'image' : 'video' }]));
    const fixed = { seconds: 10, coresPerProcess: {}, rssMiBPerProcess: {}, redisCmdsPerSPerProcess: 0, pgTxPerS: 0, walBytesPerS: 0 };
    const cal = { edgeMsPerSubmit: 2, edgeMsPerPoll: 0.5, edgeMsPerMessage: 4, redisCmdsPerPoll: 2, edgeIdleCores: 0.01, messagesAnswered: 0, fixed };
    const cfg = { webhookShare: 0.5 } as Parameters<typeof measureCosts>[5];
    const m = measureCosts(a, b, end, { tasks } as unknown as Driver, cal, cfg, 'test', 2, { tasks: 1000, polls: 600, messages: 50 });
    // the edge's 20 CPU s in the calibration's ratios 2 : 0.5 : 4 over 1000 submits, 600 polls, 50 messages calls
    const level = 20_000 / (1000 * 2 + 600 * 0.5 + 50 * 4);
    expect(m.edgeMsPerSubmit).toBeCloseTo(2 * level, 9);
    expect(m.edgeMsPerMessage).toBeCloseTo(4 * level, 9);
    expect(m.billingMsPerSettlement).toBeCloseTo(10, 9);
    expect(m.settlementsPerTask).toBeCloseTo(1.5, 9);
    expect(m.bouncerMsPerTx).toBeCloseTo(0.15, 9);
    expect(m.bouncerTxPerTask).toBeCloseTo(20, 9);
    expect(m.pgMsPerTx).toBeCloseTo(10, 9);
    expect(m.pgStorageBytesPerTask).toBeCloseTo(6000, 9);
    const { derivation, ...costs } = m;
    expect(derivation.edgeCpuS).toBeCloseTo(20, 9);
    const self = modelCheck(costs, costs, 'phase');
    expect(self.of).toBe(12);
    expect(self.within).toBe(12);
    for (const line of self.text.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| quantity'))) expect(line).toMatch(/\| -?0\.0 % \| yes \|$/);
  });

  it('counts messages calls on the edge, settlement attempts on billing and pooled transactions on PgBouncer', () => {
    const c: Costs = { ...costs, edgeMsPerMessage: 10, messagesPerTask: 0.1, settlementsPerTask: 2, bouncerTxPerTask: 2 };
    const cores = coresAt(c, 100, c.mix, 3);
    // 100 tasks/s × (4 + 3 × 1 + 0.1 × 10 ms) = 0.8 cores; billing 100 × 2 × 3 ms; PgBouncer 100 × 2 × 0.05 ms
    expect(cores['api-edge']).toBeCloseTo(0.8, 9);
    expect(cores.billing).toBeCloseTo(0.6, 9);
    expect(cores.pgbouncer).toBeCloseTo(0.01, 9);
    expect(coresAt(c, 100, c.mix, 3, 0)['api-edge']).toBeCloseTo(0.7, 9);
  });

  it('pays each process its fixed cost once, whatever the rate, and only the per-operation part grows with the load', () => {
    const c: Costs = {
      ...costs,
      fixed: {
        seconds: 10,
        coresPerProcess: { 'api-edge': 0.01, 'worker-image': 0.02, redis: 0.005 },
        rssMiBPerProcess: {},
        redisCmdsPerSPerProcess: 50,
        pgTxPerS: 1,
        walBytesPerS: 0,
      },
    };
    const processes = { 'api-edge': 2, 'worker-image': 2, redis: 6, billing: 2 };
    const at = (rate: number): Record<string, number> => coresAt(c, rate, c.mix, 3, 0, { processes });
    expect(at(0)['api-edge']).toBeCloseTo(0.02, 9);
    expect(at(200)['api-edge']! - 0.02).toBeCloseTo(2 * (at(100)['api-edge']! - 0.02), 9);
    expect(at(100)['worker-image']).toBeCloseTo(0.04 + (100 * (70 / 95) * 3 * 2) / 1000, 9);
    // 6 service processes × 50 commands/s of background, at any rate; without processes, none
    expect(redisCmdsAt(c, 0, c.mix, 3, { processes })).toBeCloseTo(300, 9);
    expect(redisCmdsAt(c, 0, c.mix, 3)).toBe(0);
    expect(coresAt(c, 100, c.mix, 3, 0)['api-edge']).toBeCloseTo(0.7, 9);
  });

  it('takes steps per task from the upstream (time open ÷ cadence) and sizes the pools by CPU and by slots, listing every limit', () => {
    // an image open 20 s polled every 4 s: its submit, 5 polls and the half poll of the renewal mean
    expect(stepsFor({ durationS: 20, cadenceS: 4 })).toBeCloseTo(6.5, 9);
    const load = { tasksPerDay: 10_000_000, peakFactor: 3, mix: costs.mix, pollsPerTask: 3 };
    const quick = size(costs, { ...load, upstream: { image: { durationS: 2, cadenceS: 4 } } });
    const slow = size(costs, { ...load, upstream: { image: { durationS: 60, cadenceS: 4 } } });
    expect(slow.stepsPerTask.image).toBeCloseTo(16.5, 9);
    expect(slow.cores['worker-image']! / quick.cores['worker-image']!).toBeCloseTo(16.5 / 2, 6);
    expect(slow.openTasks).toBeGreaterThan(quick.openTasks);
    expect(slow.redisCmdsPerS - quick.redisCmdsPerS).toBeCloseTo(slow.peakTasksPerS * (70 / 95) * 14.5 * REDIS_CMDS_PER_STEP, 3);
    // a slow round trip holds the slots: more pods than the CPU asks for
    const rtt = size(costs, { ...load, upstreamRttS: 30 });
    expect(rtt.slotPods.image).toBeGreaterThan(size(costs, load).slotPods.image);
    expect(rtt.pods['worker-image']).toBe(Math.max(2, rtt.slotPods.image, size(costs, load).pods['worker-image']!));
    const names = size(costs, load)
      .limits.map((l) => l.what)
      .join('\n');
    for (const part of [
      'Postgres primary',
      'PgBouncer CPU',
      'server connections',
      'image queue',
      'billing queue',
      'webhook queue',
      'api-edge at its HPA cap',
      'billing at its maxReplicaCount',
      'worker-video at its maxReplicaCount',
      'retention',
    ])
      expect(names).toContain(part);
    const l = size(costs, load).limits;
    expect(l.map((x) => x.maxRate)).toEqual([...l.map((x) => x.maxRate)].sort((a, b) => a - b));
  });

  it('fits the fixed cost while serving and the cost per step as a line through windows at different rates', () => {
    // worker-image: 2 processes costing 30 millicores each whatever the load, plus 1.5 ms a step; 4 windows of 10 s
    const rates = [10, 40, 70, 40, 10];
    // the workers fall behind in the 4th window: its tasks come without their steps
    const stepsPerTask = [7, 7, 7, 3, 9];
    let cpu = 0;
    let steps = 0;
    let cmds = 0;
    let done = 0;
    const snaps: Snapshot[] = [];
    const mk = (at: number): Snapshot =>
      ({
        at,
        cpu: { 'worker-image#1': cpu / 2, 'worker-image#2': cpu / 2 },
        rss: {},
        redisCommands: { '7000': cmds },
        redisMasters: ['7000'],
        pgXacts: 0,
        pgWalBytes: 0,
        bouncerXacts: 0,
        settlements: 0,
        completed: done,
        failed: 0,
        steps: { image: steps },
      }) as unknown as Snapshot;
    snaps.push(mk(0));
    rates.forEach((r, i) => {
      const st = r * stepsPerTask[i]!;
      steps += st * 10;
      done += r * 10;
      // Redis: 2 worker processes × 600 commands/s while serving, 16 a task, 30 a step
      cmds += 10 * (1200 + 16 * r + 30 * st);
      cpu += 10 * (0.06 + (st * 1.5) / 1000);
      snaps.push(mk((i + 1) * 10_000));
    });
    const idle = { seconds: 10, coresPerProcess: { 'worker-image': 0.01 }, rssMiBPerProcess: {}, redisCmdsPerSPerProcess: 0, pgTxPerS: 0, walBytesPerS: 0 };
    const cal = { edgeMsPerSubmit: 1, edgeMsPerPoll: 0, edgeMsPerMessage: 0, redisCmdsPerPoll: 0, edgeIdleCores: 0, messagesAnswered: 0, fixed: idle };
    const m = { ...costs, processes: { 'worker-image': 2 }, run: {} } as unknown as Parameters<typeof fitWindows>[0];
    const out = fitWindows(
      m,
      snaps,
      rates.map((r) => ({ accepted: r * 10, polls: 0, messages: 0 })),
      cal,
    );
    expect(out.fitted).toContain('worker-image');
    expect(out.fitted).toContain('Redis commands (plane)');
    expect(out.redisCmdsPerTask).toBeCloseTo(16, 6);
    expect(out.redisCmdsPerStep).toBeCloseTo(30, 6);
    expect(out.fixed!.redisCmdsPerSPerProcess).toBeCloseTo(600, 6);
    expect(out.workerMsPerStep.image).toBeCloseTo(1.5, 6);
    expect(out.fixed!.coresPerProcess['worker-image']).toBeCloseTo(0.03, 6);
    // fewer than 4 windows: nothing fitted, the whole-phase costs stay
    expect(fitWindows(m, snaps.slice(0, 3), [], cal).fitted).toEqual([]);
  });

  it('keeps a fitted plane physical: no negative cost per task or per step, no fixed cost below the idle one', () => {
    // tasks and steps move together; the exact plane would be 200 + 30 a step − 5 a task
    const xs = [10, 20, 30, 40, 25];
    const zs = [70, 150, 200, 290, 160];
    const ys = xs.map((x, i) => 200 + 30 * zs[i]! - 5 * x);
    const free = constrainedPlane(xs, zs, ys, -Infinity);
    expect(free).toBeDefined();
    const p = constrainedPlane(xs, zs, ys, 100)!;
    expect(p.how).not.toBe('plane');
    expect(p.a).toBeGreaterThanOrEqual(100 - 1e-9);
    expect(p.b).toBeGreaterThanOrEqual(0);
    expect(p.c).toBeGreaterThanOrEqual(0);
    // an exact plane within the bounds is taken as it is
    const q = constrainedPlane(
      xs,
      zs,
      xs.map((x, i) => 300 + 16 * x + 30 * zs[i]!),
      100,
    )!;
    expect(q.how).toBe('plane');
    expect(q.a).toBeCloseTo(300, 6);
    expect(q.b).toBeCloseTo(16, 6);
    expect(q.c).toBeCloseTo(30, 6);
  });
});
