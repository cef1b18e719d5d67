import type { Redis } from './connection';

export interface RedisReachabilityOptions {
  /** How often this process PINGs its own connection. Default 500 ms. */
  intervalMs?: number;
  /** A PING unanswered this long means Redis does not answer now (black-holed, stalled). Default 1000 ms. */
  staleMs?: number;
}

/**
 * Whether this process's Redis answers now, known without a round trip of the caller's own (issue 38): a PING every
 * `intervalMs` through the process's connection. A black-holed Redis (packets dropped: the client stays `ready`,
 * nothing errors) shows as a PING outstanding longer than `staleMs`; a refused or closed one as a client not ready
 * or a failed PING. The edge refuses a submit while Redis does not answer, before any money moves (a 503 the client
 * retries), instead of committing a hold whose task cannot be queued now.
 */
export class RedisReachability {
  private timer: NodeJS.Timeout | undefined;
  private sentAt: number | undefined;
  private failed = false;
  private readonly staleMs: number;

  constructor(
    private readonly redis: Pick<Redis, 'status' | 'ping'>,
    private readonly o: RedisReachabilityOptions = {},
  ) {
    this.staleMs = o.staleMs ?? 1000;
  }

  start(): this {
    if (!this.timer) {
      this.timer = setInterval(() => void this.probe(), this.o.intervalMs ?? 500);
      this.timer.unref();
      void this.probe();
    }
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One PING (none while one is outstanding); resolves when it is answered or has failed. */
  async probe(): Promise<void> {
    if (this.sentAt !== undefined) return;
    this.sentAt = Date.now();
    try {
      await this.redis.ping();
      this.failed = false;
    } catch {
      this.failed = true;
    } finally {
      this.sentAt = undefined;
    }
  }

  /** True unless the client is not connected, the last PING failed, or one is outstanding for longer than `staleMs`. */
  answering(now = Date.now()): boolean {
    if (this.redis.status !== 'ready' || this.failed) return false;
    return this.sentAt === undefined || now - this.sentAt <= this.staleMs;
  }
}
