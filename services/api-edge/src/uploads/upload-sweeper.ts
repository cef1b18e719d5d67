import type { Logger } from '@gmg/logger';
import type { UploadStorage } from './upload-storage';

/**
 * Removes expired uploads. Two ways to drive it: `poke()` from request handlers (at most once per interval) and the
 * timer of `start()`, which edge-timers.ts runs from main.ts (and the test harness) so an idle replica sweeps too;
 * createApp itself starts nothing. Never more than one sweep at a time; a failed sweep is logged and retried at the
 * next interval.
 */
export class UploadSweeper {
  private last = 0;
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `what`: the store's name in the log lines (the result store's sweep runs on this class too). */
  constructor(
    private readonly storage: Pick<UploadStorage, 'sweepExpired'>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
    private readonly what = 'uploads',
  ) {}

  /** Starts a sweep in the background when the last one is older than the interval. */
  poke(): void {
    if (this.running || this.now().getTime() - this.last < this.intervalMs) return;
    void this.sweep();
  }

  /** One sweep now (waits for a running one instead of starting a second). */
  sweep(): Promise<void> {
    if (this.running) return this.running;
    this.last = this.now().getTime();
    this.running = this.storage
      .sweepExpired(this.now())
      .then((removed) => {
        if (removed > 0) this.logger.info({ removed }, `expired ${this.what} removed`);
      })
      .catch((err: unknown) => this.logger.warn({ err }, `${this.what} sweep failed`))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** A sweep every interval (not `poke`: a tick a millisecond early would skip a whole interval). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a running sweep: nothing touches the store after it resolves. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
