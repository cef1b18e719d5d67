import type { ChannelWithSecret } from '@gmg/db';
import { ChannelSecretCache } from './channel-secret-cache';

const channel = (id: string, apiKey: string): ChannelWithSecret => ({ id, name: id, apiKey }) as unknown as ChannelWithSecret;

function repo(rows: Map<string, ChannelWithSecret>) {
  const reads: string[] = [];
  return {
    reads,
    getWithSecret: async (id: string) => {
      reads.push(id);
      return rows.get(id) ?? null;
    },
  };
}

describe('ChannelSecretCache (the channel a poll step needs)', () => {
  it('reads a channel once while it is fresh, and each channel on its own', async () => {
    const r = repo(
      new Map([
        ['ch1', channel('ch1', 'k1')],
        ['ch2', channel('ch2', 'k2')],
      ]),
    );
    const cache = new ChannelSecretCache(r, 60_000);
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('k1');
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('k1');
    expect((await cache.getWithSecret('ch2'))?.apiKey).toBe('k2');
    expect(r.reads).toEqual(['ch1', 'ch2']);
  });

  it('does not remember a missing channel', async () => {
    const rows = new Map<string, ChannelWithSecret>();
    const r = repo(rows);
    const cache = new ChannelSecretCache(r, 60_000);
    expect(await cache.getWithSecret('ch1')).toBeNull();
    rows.set('ch1', channel('ch1', 'k1'));
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('k1');
    expect(r.reads).toEqual(['ch1', 'ch1']);
  });

  it('sees an edit (a rotated key) once the entry is older than its ttl', async () => {
    const rows = new Map([['ch1', channel('ch1', 'old')]]);
    const r = repo(rows);
    let t = 1_000;
    const cache = new ChannelSecretCache(r, 30, 1_000, () => t); // an injected clock: no assertion races the wall clock
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('old');
    rows.set('ch1', channel('ch1', 'rotated'));
    t += 29;
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('old'); // still fresh
    t += 2;
    expect((await cache.getWithSecret('ch1'))?.apiKey).toBe('rotated');
    expect(r.reads).toEqual(['ch1', 'ch1']);
  });
});
