/**
 * The rebuild claim (issue 38): a rebuilder renews its claim while it works and sets the sentinel for good when done;
 * a rebuilder that dies mid-way (no renewals any more) lets the claim expire, and another process takes over.
 */
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from './connection';
import { healSentinelKey, queueKeyPrefix } from './keys';
import { TEST_REDIS_TARGET, deleteRedisPrefix, uniqueRedisPrefix, waitFor } from '@gmg/testing';
import { SweepKeeper } from './sweep-keeper';

const logger = createLogger({ service: 'test', level: 'silent' });
// the heartbeat renews every third of it: a TTL of 300 ms lost the claim on a loaded CI machine (an event-loop or
// Redis stall over 200 ms); 1 s keeps the test about the claim, not about the machine's load
const TTL_MS = 1000;
let prefix: string;
let key: string;
let redis: Redis;
const extra: Redis[] = [];
const keepers: SweepKeeper[] = [];

beforeEach(() => {
  redis = createRedis(TEST_REDIS_TARGET, 'worker');
  prefix = uniqueRedisPrefix();
  key = healSentinelKey(queueKeyPrefix(prefix, 'gmg-image', 0));
});
afterEach(async () => {
  await Promise.all(keepers.splice(0).map((k) => k.stop(100)));
  for (const r of extra.splice(0)) r.disconnect();
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
});

/** A keeper on its own connection (a process of its own); ticks run by hand. */
function keeper(rebuild: () => Promise<unknown>): { keeper: SweepKeeper; connection: Redis } {
  const connection = createRedis(TEST_REDIS_TARGET, 'worker');
  extra.push(connection);
  const k = new SweepKeeper({
    name: 'test',
    redis: connection,
    intervalMs: 60_000,
    sentinelKey: key,
    claimTtlMs: TTL_MS,
    ensureSchedule: async () => 1,
    rebuild,
    logger,
  });
  keepers.push(k);
  return { keeper: k, connection };
}

describe('sweep keeper: the rebuild claim has a TTL and a heartbeat', () => {
  it('a long rebuild keeps its claim past many TTLs (no second rebuilder), then sets the sentinel without a TTL', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let rebuildsA = 0;
    let rebuildsB = 0;
    const a = keeper(async () => {
      rebuildsA++;
      await gate;
    });
    const b = keeper(async () => {
      rebuildsB++;
    });
    const ticked = a.keeper.tick();
    await waitFor(() => rebuildsA === 1 || undefined, { timeoutMs: 5000, what: 'A rebuilding' });
    const t0 = Date.now();
    // still A's claim after 4 TTLs: the heartbeat renewed it
    await waitFor(async () => Date.now() - t0 > 4 * TTL_MS && (await redis.get(key))?.startsWith('rebuilding'), {
      timeoutMs: 4 * TTL_MS + 5000,
      what: '4 TTLs under claim',
    });
    expect(await b.keeper.tick()).toBe('healthy');
    expect(rebuildsB).toBe(0);
    release();
    expect(await ticked).toBe('rebuilt');
    expect(await redis.get(key)).not.toMatch(/^rebuilding/);
    expect(await redis.pttl(key)).toBe(-1); // the sentinel for good
  }, 30_000);

  it('a rebuilder that dies mid-way lets its claim expire: the next check elsewhere rebuilds', async () => {
    let rebuildsB = 0;
    const a = keeper(() => new Promise<never>(() => undefined)); // never ends: it dies before
    const b = keeper(async () => {
      rebuildsB++;
    });
    void a.keeper.tick();
    await waitFor(async () => (await redis.get(key))?.startsWith('rebuilding'), { timeoutMs: 5000, what: 'A claimed' });
    expect(await b.keeper.tick()).toBe('healthy');
    // A is gone (SIGKILL: no renewal reaches Redis any more)
    a.connection.disconnect();
    // what was left of A's claim when it died: its last heartbeat renewed it up to a third of a TTL before
    const left = await redis.pttl(key);
    const died = Date.now();
    await waitFor(async () => ((await b.keeper.tick()) === 'rebuilt' ? true : undefined), {
      timeoutMs: 10 * TTL_MS + 5000,
      intervalMs: 50,
      what: 'B rebuilding',
    });
    // B rebuilt only once A's claim had expired (not at once, not on A's word)
    expect(left).toBeGreaterThan(0);
    expect(Date.now() - died).toBeGreaterThanOrEqual(left - 50);
    expect(rebuildsB).toBe(1);
    expect(await redis.pttl(key)).toBe(-1);
  }, 30_000);
});
