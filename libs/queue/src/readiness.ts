export type HealthCheck = () => Promise<unknown>;

export interface ReadinessOptions {
  /** Named dependency checks (e.g. postgres: SELECT 1, redis: PING); each must settle within `timeoutMs`. */
  checks: Record<string, HealthCheck>;
  /**
   * Dependencies the process works around for a while, probed and reported the same way but never a reason to be
   * unready: Postgres, which every replica shares — a slow or restarting Postgres (or PgBouncer) taken as "not
   * ready" would take the whole fleet out of its Service at once, while the edge can still answer polls from the
   * Redis task view and workers retry their steps. Operators see the state in the body, the log and the metrics.
   */
  degradable?: Record<string, HealthCheck>;
  /** Default 2000. */
  timeoutMs?: number;
  /** True once shutdown began: not ready, so traffic and scaling stop counting this replica. */
  isDraining?: () => boolean;
  /**
   * True while start-up work still runs (a consumer's Redis-loss rebuild): not ready yet, while the health server
   * already answers — liveness stays green, so a long rebuild is not killed (issue 38).
   */
  isStarting?: () => boolean;
  /** Where a failing check's detail goes (hosts and addresses are not for unauthenticated callers). */
  onCheckFailed?: (name: string, err: Error) => void;
}

export interface Readiness {
  status: 200 | 503;
  body: { status: 'ready' | 'not_ready'; checks: Record<string, string>; degraded?: string[] };
}

const within = <T>(p: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });

/**
 * The one readiness rule of every service (the edge's /readyz and the consumers' health port): each check answers
 * within the timeout and the process is neither starting nor draining. The answer names each check `ok`, `error`, `timeout` or the
 * state its error names (`full`: a Redis at its maxmemory); the error itself goes to `onCheckFailed` (the log),
 * never to the caller.
 */
export async function evaluateReadiness(opts: ReadinessOptions): Promise<Readiness> {
  const timeoutMs = opts.timeoutMs ?? 2000;
  const checks: Record<string, string> = {};
  const soft = new Set(Object.keys(opts.degradable ?? {}));
  await Promise.all(
    Object.entries({ ...opts.checks, ...opts.degradable }).map(async ([name, check]) => {
      try {
        await within(Promise.resolve().then(check), timeoutMs);
        checks[name] = 'ok';
      } catch (e) {
        const err = e instanceof Error ? e : new Error(String(e));
        // an error may name its own state (RedisFullError: `full`): a reason an operator can act on
        const own = (err as { readiness?: unknown }).readiness;
        checks[name] = err.message.startsWith('no answer within') ? 'timeout' : typeof own === 'string' ? own : 'error';
        opts.onCheckFailed?.(name, err);
      }
    }),
  );
  const draining = opts.isDraining?.() ?? false;
  if (draining) checks.draining = 'yes';
  const starting = opts.isStarting?.() ?? false;
  if (starting) checks.starting = 'yes';
  const ready = !draining && !starting && Object.entries(checks).every(([name, v]) => v === 'ok' || soft.has(name));
  const degraded = [...soft].filter((name) => checks[name] !== 'ok').sort();
  const body: Readiness['body'] = { status: ready ? 'ready' : 'not_ready', checks };
  if (degraded.length) body.degraded = degraded;
  return { status: ready ? 200 : 503, body };
}
