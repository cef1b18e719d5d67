/**
 * The load driver: an open-loop arrival process (requests start on schedule whether or not earlier ones have
 * answered, as independent clients do) following the compressed day's rate curve, spread over the edges the way a
 * Kubernetes Service spreads connections (round robin; an edge that refuses connections is skipped until it answers
 * again). Clients without a callback_url poll their task until it ends; the others wait for their webhook.
 * Every loop is bounded in count and in time.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { pick, requestOf, taskIdOf, type Kind } from './mix';

export interface Account {
  id: string;
  key: string;
  hot: boolean;
}

export interface DriverOptions {
  edges: string[];
  accounts: Account[];
  hotShare: number;
  mix: Record<Kind, number>;
  /** Requests per second at time t (ms since the start). */
  rate: (tMs: number) => number;
  durationMs: number;
  pollEveryMs: number;
  webhookShare: number;
  webhookUrl: string;
  /** Requests in flight at most (a bound, not a target: the arrival process is open-loop below it). */
  maxInFlight: number;
}

export interface SubmittedTask {
  id: string;
  kind: Kind;
  accountId: string;
  webhook: boolean;
  submittedAt: number;
  /** Terminal status seen by a polling client. */
  seen?: string;
}

/** What one reporting window (a minute) saw from the clients' side. */
export class Window {
  accepted = 0;
  refused: Record<string, number> = {};
  submitMs: number[] = [];
  polls = 0;
  pollErrors = 0;
  pollMs: number[] = [];
  messages = 0;
  messagesMs: number[] = [];
  /** Requests not started because maxInFlight was reached (the driver itself fell behind). */
  skipped = 0;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Driver {
  readonly tasks = new Map<string, SubmittedTask>();
  /** Chat calls answered 200 (each must be captured once). */
  messagesOk = 0;
  /** Submissions whose answer was lost (a connection cut mid-request, not idempotent): the task may exist. */
  ambiguous = 0;
  /** Chat calls among them: the gateway may have recorded (and charged) a call whose answer the client never got. */
  ambiguousMessages = 0;
  private win = new Window();
  private inFlight = 0;
  private seq = 0;
  private rr = 0;
  private readonly pools: Pool[];
  private readonly downUntil: number[];
  private readonly pollTimers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly o: DriverOptions) {
    this.pools = o.edges.map((u) => new Pool(u, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: 30_000, bodyTimeout: 30_000 }));
    this.downUntil = o.edges.map(() => 0);
  }

  /** Requests on the wire now. */
  inFlightNow(): number {
    return this.inFlight;
  }

  /** Swaps the current window for a fresh one. */
  take(): Window {
    const w = this.win;
    this.win = new Window();
    return w;
  }

  /** Runs the arrival process for durationMs; polls continue until `stop()`. */
  async run(): Promise<void> {
    const t0 = Date.now();
    let due = 0;
    let last = t0;
    for (let tick = 0; tick < 1_000_000 && !this.stopped; tick++) {
      const now = Date.now();
      if (now - t0 >= this.o.durationMs) break;
      due += (this.o.rate(now - t0) * (now - last)) / 1000;
      last = now;
      for (; due >= 1; due--) {
        if (this.inFlight >= this.o.maxInFlight) {
          this.win.skipped++;
          continue;
        }
        void this.one();
      }
      await sleep(10);
    }
  }

  private edge(): number {
    const n = this.pools.length;
    for (let k = 0; k < n; k++) {
      const i = (this.rr++ + k) % n;
      if (this.downUntil[i]! <= Date.now()) return i;
    }
    return this.rr++ % n;
  }

  /** One HTTP call on an edge; a refused or reset connection marks that edge down for a second and tries the next. */
  private async call(
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    retryable: boolean,
  ): Promise<{ status: number; json: unknown }> {
    let lastErr: unknown;
    for (let attempt = 0; attempt < (retryable ? 6 : 1); attempt++) {
      const i = this.edge();
      try {
        const r = await this.pools[i]!.request({ method, path, headers, body });
        const text = await r.body.text();
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        return { status: r.statusCode, json };
      } catch (e) {
        lastErr = e;
        this.downUntil[i] = Date.now() + 1000;
        if (attempt > 0) await sleep(200 * attempt);
      }
    }
    throw lastErr;
  }

  private async one(): Promise<void> {
    const i = ++this.seq;
    const kind = pick(this.o.mix, Math.random());
    const hot = Math.random() < this.o.hotShare;
    const pool = this.o.accounts.filter((a) => a.hot === hot);
    const acc = (pool.length ? pool : this.o.accounts)[Math.floor(Math.random() * (pool.length || this.o.accounts.length))]!;
    const webhook = kind !== 'messages' && Math.random() < this.o.webhookShare;
    const req = requestOf(kind, i, webhook ? this.o.webhookUrl : undefined);
    const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${acc.key}` };
    if (kind === 'messages') headers['anthropic-version'] = '2023-06-01';
    if (req.idempotent) headers['idempotency-key'] = randomUUID();
    this.inFlight++;
    const s = performance.now();
    try {
      let r = await this.call('POST', req.path, headers, JSON.stringify(req.body), req.idempotent);
      // 409 = the same key still running on the other edge (a retry after a cut connection): ask again shortly
      for (let k = 0; k < 20 && r.status === 409 && req.idempotent; k++) {
        await sleep(250);
        r = await this.call('POST', req.path, headers, JSON.stringify(req.body), true);
      }
      const ms = performance.now() - s;
      if (r.status !== 200) {
        this.win.refused[String(r.status)] = (this.win.refused[String(r.status)] ?? 0) + 1;
        return;
      }
      if (kind === 'messages') {
        this.messagesOk++;
        this.win.messages++;
        this.win.messagesMs.push(ms);
        return;
      }
      const id = taskIdOf(r.json);
      if (!id) {
        this.win.refused['no-task-id'] = (this.win.refused['no-task-id'] ?? 0) + 1;
        return;
      }
      this.win.accepted++;
      this.win.submitMs.push(ms);
      const t: SubmittedTask = { id, kind, accountId: acc.id, webhook, submittedAt: Date.now() };
      this.tasks.set(id, t);
      if (!webhook) this.schedulePoll(t, acc.key, 0);
    } catch {
      if (req.idempotent) this.win.refused.connection = (this.win.refused.connection ?? 0) + 1;
      else {
        this.ambiguous++;
        if (kind === 'messages') this.ambiguousMessages++;
      }
    } finally {
      this.inFlight--;
    }
  }

  private schedulePoll(t: SubmittedTask, key: string, n: number): void {
    // a client gives up after 600 polls (10 minutes at 1 s): the end-of-run checks read the database, not this
    if (this.stopped || n >= 600) return;
    const timer = setTimeout(() => {
      this.pollTimers.delete(timer);
      void this.poll(t, key, n);
    }, this.o.pollEveryMs);
    this.pollTimers.add(timer);
  }

  private async poll(t: SubmittedTask, key: string, n: number): Promise<void> {
    const s = performance.now();
    try {
      const r = await this.call('GET', `/v1/tasks/${t.id}`, { authorization: `Bearer ${key}` }, undefined, true);
      this.win.polls++;
      this.win.pollMs.push(performance.now() - s);
      const status = (r.json as { data?: { status?: string } } | undefined)?.data?.status;
      if (r.status === 200 && (status === 'completed' || status === 'failed')) {
        t.seen = status;
        return;
      }
      if (r.status !== 200) this.win.pollErrors++;
    } catch {
      this.win.pollErrors++;
    }
    this.schedulePoll(t, key, n + 1);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.pollTimers) clearTimeout(t);
    this.pollTimers.clear();
    await Promise.all(this.pools.map((p) => p.close().catch(() => undefined)));
  }
}
