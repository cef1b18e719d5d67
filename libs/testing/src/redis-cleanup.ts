import type { Redis } from 'ioredis';

/** Deletes every key under `<prefix>:` (a test run's own keys). Bounded: at most `maxRounds` SCAN rounds. */
export async function deleteRedisPrefix(redis: Redis, prefix: string, maxRounds = 10_000): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  for (let round = 0; round < maxRounds; round++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) deleted += await redis.del(...keys);
    cursor = next;
    if (cursor === '0') break;
  }
  return deleted;
}
