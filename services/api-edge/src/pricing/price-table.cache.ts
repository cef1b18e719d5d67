import type { PriceTable } from '@gmg/contracts';

export interface PriceSource {
  table(): Promise<PriceTable>;
}

/**
 * The price table, re-read at most every `ttlMs` (one query at a time): a price change applies within that
 * time, and a submit burst does not read the table once per request.
 */
export class PriceTableCache {
  private value: PriceTable | undefined;
  private loadedAt = 0;
  private loading: Promise<PriceTable> | undefined;

  constructor(
    private readonly source: PriceSource,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<PriceTable> {
    if (this.value && this.now() - this.loadedAt < this.ttlMs) return this.value;
    if (!this.loading) {
      this.loading = this.source
        .table()
        .then((t) => {
          this.value = t;
          this.loadedAt = this.now();
          return t;
        })
        .finally(() => {
          this.loading = undefined;
        });
    }
    return this.loading;
  }

  invalidate(): void {
    this.loadedAt = 0;
  }
}
