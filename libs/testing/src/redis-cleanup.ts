import { redisPrimaries, type Redis } from '@gmg/queue';

/**
 * Deletes every key of a test run: its prefix starts each key (`<prefix>:...`) or each hash tag (`{<prefix>:...}`,
 * libs/queue keys.ts). On a cluster every primary is scanned (SCAN is per node) and keys are deleted one by one
 * (a multi-key DEL would cross slots). Bounded: at most `maxRounds` SCAN rounds per node.
 */
export async function deleteRedisPrefix(redis: Redis, prefix: string, maxRounds = 10_000): Promise<number> {
  let deleted = 0;
  for (const node of redisPrimaries(redis)) {
    for (const pattern of [`${prefix}:*`, `{${prefix}:*`]) {
      let cursor = '0';
      for (let round = 0; round < maxRounds; round++) {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        const counts = await Promise.all(keys.map((k) => redis.del(k)));
        deleted += counts.reduce((a, b) => a + b, 0);
        cursor = next;
        if (cursor === '0') break;
      }
    }
  }
  return deleted;
}
