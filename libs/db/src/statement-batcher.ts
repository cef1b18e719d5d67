/**
 * One item waiting for its batch, with its answer. Function properties, not methods: they are the promise's own
 * resolve/reject, passed on unbound.
 */
export interface Pending<T, R> {
  readonly item: T;
  readonly resolve: (answer: R) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Items written together, a statement per batch, with no timer: an item that finds a slot free goes at once (alone:
 * a quiet process adds no wait), and the items that arrive while the slots are busy wait in the process and go
 * together, up to `maxBatch`, when a slot is free again. At most `slots` runs at once (default 1: two batches of one
 * process would otherwise wait on each other's rows).
 *
 * `run(batch)` answers every item of its batch (at once or later, off the slot: the slot is free again when `run`'s
 * promise settles). If it throws, the items of its batch it has not answered yet are rejected with its error; the
 * other batches go on.
 */
export class StatementBatcher<T, R> {
  private readonly waiting: Array<Pending<T, R>> = [];
  private inFlight = 0;
  private idlers: Array<() => void> = [];
  private readonly maxBatch: number;
  private readonly slots: number;

  constructor(
    private readonly run: (batch: Array<Pending<T, R>>) => Promise<void>,
    opts: { maxBatch?: number; slots?: number } = {},
  ) {
    this.maxBatch = opts.maxBatch ?? Infinity;
    this.slots = opts.slots ?? 1;
  }

  /** Queues `item`; resolves with the answer its batch's run gives it. */
  push(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.inFlight < this.slots) void this.drain();
    });
  }

  /** Resolves once nothing waits and no run is in flight (the work a run left off its slot is not awaited). */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idlers.push(resolve));
  }

  /** One slot: runs the waiting items, a batch at a time, until none is left. */
  private async drain(): Promise<void> {
    this.inFlight++;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.maxBatch);
        try {
          await this.run(batch);
        } catch (err) {
          // an answered item keeps its answer: a settled promise ignores a later reject
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.inFlight--;
      if (this.inFlight === 0 && this.waiting.length === 0) {
        const idlers = this.idlers;
        this.idlers = [];
        for (const resolve of idlers) resolve();
      }
    }
  }
}
