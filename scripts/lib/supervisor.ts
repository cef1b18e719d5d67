import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface SupervisorOptions {
  /** SIGTERM, then SIGKILL after this long. Workers drain in-flight jobs in that window. */
  stopTimeoutMs: number;
  /** Restarts allowed in a row before giving up on a child. */
  maxRestarts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A child that ran this long before dying counts as healthy: its restart counter starts over. */
  stableAfterMs: number;
  /** Writes one already-prefixed line. */
  write: (line: string) => void;
  color: boolean;
}

/** Delay before restart number `attempt` (1-based): exponential, capped. */
export function restartDelay(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

type ChildState = 'running' | 'backoff' | 'stopped' | 'gave-up';

interface Managed {
  spec: ChildSpec;
  proc?: ChildProcess;
  state: ChildState;
  attempts: number;
  startedAt: number;
  timer?: NodeJS.Timeout;
  exited?: Promise<void>;
}

const COLORS = [36, 33, 35, 32, 34, 96, 93, 95, 92];

/**
 * Runs each service as its own child process (own process group, so Ctrl-C reaches only the orchestrator), prefixes
 * its output with the service name, restarts it with bounded exponential backoff when it dies unexpectedly, and
 * stops it with SIGTERM → wait → SIGKILL.
 */
export class Supervisor {
  private readonly children = new Map<string, Managed>();
  private stopping = false;
  private width = 8;

  constructor(private readonly o: SupervisorOptions) {}

  /** Safety net for process 'exit': kills every live process group synchronously. */
  killAllNow(): void {
    for (const m of this.children.values()) if (m.proc?.pid && m.state === 'running') signalGroup(m.proc, 'SIGKILL');
  }

  state(name: string): ChildState | undefined {
    return this.children.get(name)?.state;
  }

  log(name: string, line: string): void {
    const i = [...this.children.keys()].indexOf(name);
    const label = name.padEnd(this.width);
    const prefix = this.o.color ? `\x1b[${COLORS[(i < 0 ? 0 : i) % COLORS.length]}m${label} |\x1b[0m` : `${label} |`;
    this.o.write(`${prefix} ${line}`);
  }

  start(spec: ChildSpec): void {
    this.width = Math.max(this.width, spec.name.length);
    const m: Managed = { spec, state: 'running', attempts: 0, startedAt: 0 };
    this.children.set(spec.name, m);
    this.spawn(m);
  }

  private spawn(m: Managed): void {
    const { spec } = m;
    m.startedAt = Date.now();
    m.state = 'running';
    const proc = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    m.proc = proc;
    for (const stream of [proc.stdout, proc.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.log(spec.name, line));
    }
    m.exited = new Promise<void>((resolve) => {
      let done = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (done) return;
        done = true;
        this.onExit(m, code, signal);
        resolve();
      };
      proc.once('error', (e) => {
        this.log(spec.name, `could not start: ${e.message}`);
        // No pid: it never ran, so no 'exit' will follow.
        if (proc.pid === undefined) finish(null, null);
      });
      proc.once('exit', finish);
    });
  }

  private onExit(m: Managed, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping || m.state === 'stopped') {
      m.state = 'stopped';
      return;
    }
    const ranMs = Date.now() - m.startedAt;
    if (ranMs >= this.o.stableAfterMs) m.attempts = 0;
    m.attempts += 1;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (m.attempts > this.o.maxRestarts) {
      m.state = 'gave-up';
      this.log(m.spec.name, `exited unexpectedly (${how}) after ${this.o.maxRestarts} restarts in a row; giving up on it`);
      return;
    }
    const delay = restartDelay(m.attempts, this.o.backoffBaseMs, this.o.backoffMaxMs);
    this.log(m.spec.name, `exited unexpectedly (${how}) after ${(ranMs / 1000).toFixed(1)} s; restart ${m.attempts}/${this.o.maxRestarts} in ${delay} ms`);
    m.state = 'backoff';
    m.timer = setTimeout(() => {
      if (!this.stopping && m.state === 'backoff') this.spawn(m);
    }, delay);
  }

  /** Stops the named children in parallel; resolves when all have exited. */
  async stop(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((n) => this.stopOne(n)));
  }

  private async stopOne(name: string): Promise<void> {
    const m = this.children.get(name);
    if (!m) return;
    if (m.timer) clearTimeout(m.timer);
    const wasRunning = m.state === 'running' && m.proc && m.proc.exitCode === null && m.proc.signalCode === null;
    m.state = 'stopped';
    if (!wasRunning || !m.proc) return;
    const proc = m.proc;
    signalGroup(proc, 'SIGTERM');
    const killer = setTimeout(() => {
      this.log(name, `still running ${this.o.stopTimeoutMs} ms after SIGTERM; sending SIGKILL`);
      signalGroup(proc, 'SIGKILL');
    }, this.o.stopTimeoutMs);
    await m.exited;
    clearTimeout(killer);
  }

  /** Stops everything, phase by phase (e.g. edge first so no new work arrives, simulator last). */
  async stopAll(phases: ReadonlyArray<readonly string[]>): Promise<void> {
    this.stopping = true;
    const named = new Set(phases.flat());
    for (const phase of phases) await this.stop(phase);
    await this.stop([...this.children.keys()].filter((n) => !named.has(n)));
  }
}

function signalGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (!proc.pid) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    try {
      proc.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
