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
  simScale: number;
  pollScale: number;
  maxInFlight: number;
  calibrateS: number;
  /** Markdown tables also written here. */
  reportFile?: string;
  /** The measured per-operation costs written here (the capacity model's input, scripts/fleet/costs.json). */
  costsOut?: string;
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
    simScale: num(env, 'FLEET_SIM_SCALE', 0.05, 0.01, 1, p),
    pollScale: num(env, 'FLEET_POLL_SCALE', 0.2, 0.01, 1, p),
    maxInFlight: Math.round(num(env, 'FLEET_MAX_IN_FLIGHT', 2000, 10, 20_000, p)),
    calibrateS: num(env, 'FLEET_CALIBRATE_S', 10, 0, 120, p),
    ...(env.FLEET_REPORT ? { reportFile: env.FLEET_REPORT } : {}),
    ...(env.FLEET_COSTS_OUT ? { costsOut: env.FLEET_COSTS_OUT } : {}),
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
