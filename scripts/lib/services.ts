/** The processes `npm start` runs, in start order (simulator first: the demo channel points at it). */
export interface LocalService {
  name: string;
  /** Env var the service listens on: `PORT` (HTTP services) or `HEALTH_PORT` (queue consumers). */
  portVar: 'PORT' | 'HEALTH_PORT';
  defaultPort: number;
  /** Path answering 200 once the service can do its job. */
  readyPath: string;
}

export const LOCAL_SERVICES: readonly LocalService[] = Object.freeze([
  { name: 'upstream-sim', portVar: 'PORT', defaultPort: 9090, readyPath: '/healthz' },
  { name: 'billing', portVar: 'HEALTH_PORT', defaultPort: 9105, readyPath: '/readyz' },
  { name: 'worker-image', portVar: 'HEALTH_PORT', defaultPort: 9101, readyPath: '/readyz' },
  { name: 'worker-video', portVar: 'HEALTH_PORT', defaultPort: 9102, readyPath: '/readyz' },
  { name: 'worker-artgen', portVar: 'HEALTH_PORT', defaultPort: 9103, readyPath: '/readyz' },
  { name: 'worker-avatar', portVar: 'HEALTH_PORT', defaultPort: 9104, readyPath: '/readyz' },
  { name: 'api-edge', portVar: 'PORT', defaultPort: 8080, readyPath: '/readyz' },
] as const);

/** Stop order: the edge first (no new work), then consumers (they drain), the simulator last. */
export const STOP_PHASES: ReadonlyArray<readonly string[]> = [
  ['api-edge'],
  ['worker-image', 'worker-video', 'worker-artgen', 'worker-avatar', 'billing'],
  ['upstream-sim'],
];

/** `worker-image` → `WORKER_IMAGE_PORT`: the env var that overrides a service's port under `npm start`. */
export const portOverrideVar = (service: string): string => `${service.toUpperCase().replace(/-/g, '_')}_PORT`;

export function portOf(s: LocalService, env: NodeJS.ProcessEnv): number {
  const raw = env[portOverrideVar(s.name)];
  if (raw === undefined || raw === '') return s.defaultPort;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${portOverrideVar(s.name)}=${raw} is not a port`);
  return n;
}
