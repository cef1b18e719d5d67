/**
 * Channels per (model, group), re-read at most every `ttlMs`: the messages path and the task submit do not query
 * Postgres for their channels on every call. A channel change applies within that time.
 */
export class ChannelListCache<T> {
  private readonly entries = new Map<string, { at: number; value: Promise<T[]> }>();

  constructor(
    private readonly load: (model: string, group: string) => Promise<T[]>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(model: string, group: string): Promise<T[]> {
    const key = `${model}\u0000${group}`;
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < this.ttlMs) return hit.value;
    const value = this.load(model, group);
    this.entries.set(key, { at: this.now(), value });
    // a failed load is not cached
    value.catch(() => this.entries.delete(key));
    return value;
  }
}
