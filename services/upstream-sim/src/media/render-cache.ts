import type { LRUCache } from 'lru-cache';

/** A bounded cache of rendered files where concurrent requests for the same key share one render. */
export class RenderCache {
  private readonly inFlight = new Map<string, Promise<Buffer>>();

  constructor(private readonly cache: LRUCache<string, Buffer>) {}

  get(key: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const hit = this.cache.get(key);
    if (hit) return Promise.resolve(hit);
    let p = this.inFlight.get(key);
    if (!p) {
      p = render()
        .then((buf) => {
          this.cache.set(key, buf);
          return buf;
        })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    return p;
  }
}
