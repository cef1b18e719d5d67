/** The fleet run's knobs (env), each bounded; a bad value stops the run before anything starts. */
import { parseMix, type Kind } from './mix';

export interface FleetConfig {
  minutes: number;
  /** Mean requests per second over the run (tasks + messages calls). */
  rate: number;
  /** Peak ÷ mean of the compressed day's curve (1 = flat). */
  peak: number;
  accounts: number;
  hotShare: number;
  mix: Record<Kind, number>;
  pollEveryMs: number;
  webhookShare: number;
  redis: 'auto' | 'cluster' | 'standalone';
  faults: boolean;
  drainS: number;
  windowS: number;
  /**
   * The upstream (SIM_TIME_SCALE) and the poll cadence (POLL_INTERVAL_SCALE). Task times are compressed by
   * `pollScale` in both, so steps per task stay those of the real upstream: real time open = the simulator's
   * (images 2.3 s, videos 6.6 s, art and avatars 2 s at scale 1) × simScale ÷ pollScale.
   */
  simScale: number;
  pollScale: number;
  maxInFlight: number;
  calibrateS: number;
  /** The idle window before the calibration: each process's fixed cost. */
  idleS: number;
  /** The reference costs the model predicts this run from (scripts/fleet/costs.json by default). */
  costsRef?: string;
  /** Exit 1 when a quantity of the model's check is off by more than 25 % (the end-of-run checks always do). */
  strictModel: boolean;
  /** Markdown tables also written here. */
  reportFile?: string;
  /** The measured per-operation costs written here (the capacity model's input, scripts/fleet/costs.json). */
  costsOut?: string;
  /** The model's check of this run (its load, machine, load average, the table) written here as JSON (docs/capacity.md). */
  checkOut?: string;
}

function num(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) problems.push(`${name}=${raw}: a number from ${min} to ${max}`);
  return n;
}

export function loadFleetConfig(env: NodeJS.ProcessEnv = process.env): FleetConfig {
  const p: string[] = [];
  const redis = (env.FLEET_REDIS ?? 'auto') as FleetConfig['redis'];
  if (!['auto', 'cluster', 'standalone'].includes(redis)) p.push(`FLEET_REDIS=${redis}: auto, cluster or standalone`);
  let mix: Record<Kind, number> = parseMix(undefined);
  try {
    mix = parseMix(env.FLEET_MIX);
  } catch (e) {
    p.push((e as Error).message);
  }
  const cfg: FleetConfig = {
    minutes: num(env, 'FLEET_MINUTES', 2, 0.25, 60, p),
    rate: num(env, 'FLEET_RATE', 40, 1, 2000, p),
    peak: num(env, 'FLEET_PEAK', 1.5, 1, 1.9, p),
    accounts: Math.round(num(env, 'FLEET_ACCOUNTS', 100, 1, 10_000, p)),
    hotShare: num(env, 'FLEET_HOT_SHARE', 0.2, 0, 1, p),
    mix,
    pollEveryMs: num(env, 'FLEET_POLL_MS', 1000, 100, 60_000, p),
    webhookShare: num(env, 'FLEET_WEBHOOK_SHARE', 0.5, 0, 1, p),
    redis,
    faults: /^(1|true|yes)$/i.test(env.FLEET_FAULTS ?? ''),
    drainS: num(env, 'FLEET_DRAIN_S', 180, 10, 1800, p),
    windowS: num(env, 'FLEET_WINDOW_S', 60, 5, 600, p),
    // a realistic upstream compressed 8×: real images 18.7 s (lumen-2-flex), videos 53 s (clipq3-turbo), art and
    // avatars 16 s, polled at their models' cadence ÷ 8 — about 7, 11, 8 and 6 steps per task (docs/capacity.md)
    simScale: num(env, 'FLEET_SIM_SCALE', 1, 0.01, 20, p),
    pollScale: num(env, 'FLEET_POLL_SCALE', 0.125, 0.01, 1, p),
    maxInFlight: Math.round(num(env, 'FLEET_MAX_IN_FLIGHT', 2000, 10, 20_000, p)),
    calibrateS: num(env, 'FLEET_CALIBRATE_S', 10, 0, 120, p),
    idleS: num(env, 'FLEET_IDLE_S', 10, 2, 120, p),
    strictModel: /^(1|true|yes)$/i.test(env.FLEET_MODEL_STRICT ?? ''),
    ...(env.FLEET_COSTS_REF ? { costsRef: env.FLEET_COSTS_REF } : {}),
    ...(env.FLEET_REPORT ? { reportFile: env.FLEET_REPORT } : {}),
    ...(env.FLEET_COSTS_OUT ? { costsOut: env.FLEET_COSTS_OUT } : {}),
    ...(env.FLEET_CHECK_OUT ? { checkOut: env.FLEET_CHECK_OUT } : {}),
  };
  if (p.length) throw new Error(`fleet: bad environment:\n  - ${p.join('\n  - ')}`);
  return cfg;
}

/** The compressed day: a night trough, a peak mid-run, mean `rate` over the run (a cosine over one period). */
export function dayCurve(cfg: Pick<FleetConfig, 'rate' | 'peak' | 'minutes'>): (tMs: number) => number {
  const period = cfg.minutes * 60_000;
  const a = cfg.peak - 1;
  return (t) => cfg.rate * (1 - a * Math.cos((2 * Math.PI * t) / period));
}
