/**
 * The gateway's processes as the fleet runs them: each service from its bundle (`npm run build`, plain node with the
 * production flags — what the image runs), N replicas of each, every one on its own free port.
 */
import path from 'node:path';
import { POOLS } from '@gmg/contracts';
import { freePort, startService, type ServiceProcess } from '@gmg/testing';

/** Thirteen processes starting at once on two shared cores take a while; bounded all the same. */
const START_TIMEOUT_MS = 240_000;

export interface Replica {
  /** e.g. `api-edge#1`, `worker-image#2`. */
  id: string;
  service: string;
  port: number;
  env: Record<string, string>;
  health: string;
  sp: ServiceProcess;
  /** Restarts after a kill (the fault run's "the Deployment brings a new pod"). */
  restarts: number;
}

export interface FleetShape {
  edges: number;
  workersPerPool: number;
  billing: number;
}

export class FleetServices {
  readonly replicas: Replica[] = [];
  sim!: Replica;

  constructor(private readonly root: string) {}

  /** The simulator first (the channels point at it), then billing, the pools and the edges, in parallel per service. */
  async start(
    shape: FleetShape,
    common: Record<string, string>,
    extra: { sim: Record<string, string>; edge: Record<string, string>; worker: Record<string, string>; billing: Record<string, string> },
    /** Runs once the simulator answers (the channels are seeded with its URL), before any gateway service starts. */
    afterSim: (simUrl: string) => Promise<void>,
  ): Promise<void> {
    this.sim = await this.one('upstream-sim', 1, 'PORT', { LOG_LEVEL: 'error', ...extra.sim }, '/healthz');
    await afterSim(`http://127.0.0.1:${this.sim.port}`);
    const starts: Array<Promise<Replica>> = [];
    for (let i = 1; i <= shape.billing; i++) starts.push(this.one('billing', i, 'HEALTH_PORT', { ...common, ...extra.billing }, '/readyz'));
    for (const pool of POOLS)
      for (let i = 1; i <= shape.workersPerPool; i++) starts.push(this.one(`worker-${pool}`, i, 'HEALTH_PORT', { ...common, ...extra.worker }, '/readyz'));
    for (let i = 1; i <= shape.edges; i++) {
      starts.push(this.one('api-edge', i, 'PORT', { ...common, ...extra.edge, UPLOAD_DIR: path.join(this.root, `uploads-${i}`) }, '/readyz'));
    }
    this.replicas.push(...(await Promise.all(starts)));
  }

  private async one(service: string, n: number, portVar: 'PORT' | 'HEALTH_PORT', env: Record<string, string>, healthPath: string): Promise<Replica> {
    const port = await freePort();
    const full = { ...env, [portVar]: String(port) };
    if (service === 'api-edge') full.PUBLIC_BASE_URL = `http://127.0.0.1:${port}`;
    const health = `http://127.0.0.1:${port}${healthPath}`;
    const sp = await startService(service, full, health, START_TIMEOUT_MS, 'dist');
    return { id: `${service}#${n}`, service, port, env: full, health, sp, restarts: 0 };
  }

  edges(): Replica[] {
    return this.replicas.filter((r) => r.service === 'api-edge');
  }

  /** Every process, simulator included, with its pid now (a restarted replica has a new one). */
  all(): Replica[] {
    return [this.sim, ...this.replicas];
  }

  alive(r: Replica): boolean {
    return r.sp.proc.exitCode === null && r.sp.proc.signalCode === null;
  }

  /** kill -9, then a new process with the same environment; resolves with ms from the kill to healthy again. */
  async killAndReplace(r: Replica, onKilled?: () => void): Promise<number> {
    const t0 = Date.now();
    await r.sp.kill9();
    onKilled?.();
    r.sp = await startService(r.service, r.env, r.health, START_TIMEOUT_MS, 'dist');
    r.restarts++;
    return Date.now() - t0;
  }

  async stop(): Promise<void> {
    // the edges first (no new work), then the consumers, the simulator last
    const phase = async (list: Replica[]): Promise<void> => {
      await Promise.all(list.map((r) => r.sp.stop(15_000).catch(() => undefined)));
    };
    await phase(this.edges());
    await phase(this.replicas.filter((r) => r.service !== 'api-edge'));
    if (this.sim) await phase([this.sim]);
  }

  /** The last lines a process printed (for a failure report). */
  tail(r: Replica, chars = 2000): string {
    return r.sp.output().slice(-chars);
  }
}
