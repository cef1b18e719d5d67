import type { ChatCallRepository, CreditLeaseRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';

/**
 * Closes credit leases their edge stopped renewing (it died, or lost Postgres): what they did not record goes back
 * to the account. Also releases, in full, chat calls charged directly (a batch whose lease was closed) that were
 * left open past their deadline. Driven by `poke()` from the messages route (no timer inside the
 * app) and by `start()` from main.ts. Settling is exactly-once in the repository, so replicas sweeping at the same
 * time, or a late edge settling the same call, are harmless.
 */
export class ChatCallSweeper {
  private last = 0;
  private running: Promise<number> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly calls: Pick<ChatCallRepository, 'findOverdue' | 'settle'>,
    private readonly leases: Pick<CreditLeaseRepository, 'findExpired' | 'close'>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  poke(): void {
    if (this.running || this.now() - this.last < this.intervalMs) return;
    void this.sweep();
  }

  /** One sweep now; resolves to the number of leases and calls it released. */
  sweep(): Promise<number> {
    if (this.running) return this.running;
    this.last = this.now();
    this.running = this.releaseOverdue()
      .catch((err: unknown) => {
        this.logger.warn({ err }, 'chat call sweep failed');
        return 0;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  start(): void {
    this.timer ??= setInterval(() => this.poke(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async releaseOverdue(): Promise<number> {
    let released = 0;
    for (const id of await this.leases.findExpired()) {
      const rest = await this.leases.close(id);
      if (rest !== null) {
        released++;
        this.logger.warn({ leaseId: id, released: rest.toString() }, 'expired credit lease closed (its edge stopped renewing it)');
      }
    }
    for (const id of await this.calls.findOverdue()) {
      const won = await this.calls.settle(id, {
        status: 'failed',
        cost: 0n,
        result: { charge_rule: 'abandoned', reason: 'edge_lost' },
        error: { code: 'task_failed', message: 'The call was not settled by its edge before its deadline' },
        channelId: null,
      });
      if (won) released++;
    }
    if (released > 0) this.logger.warn({ released }, 'abandoned chat calls released in full');
    return released;
  }
}
