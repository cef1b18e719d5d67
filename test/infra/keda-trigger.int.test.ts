/**
 * Issue 38 item 1: a pool's KEDA trigger must see its backlog once, however many edges export it. Every edge
 * replica exports the same pool-wide count (gmg_queue_jobs, read from Redis on scrape), and Prometheus keeps one
 * series per scraped replica (its `instance` label): a trigger that sums over them sees the backlog times the number
 * of edges and scales the pool out that many times too far. This test scrapes the real exporter over a real
 * Redis with polls on two shards, gives Prometheus the same answer from three edges, evaluates each pool's
 * ScaledObject query over them, and wants exactly the due-poll count Redis holds.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { POOLS, QUEUES } from '@gmg/contracts';
import { renderMetrics, reportQueueDepth } from '@gmg/observability';
import { DuePolls, Producers, createRedis, createWebhookQueue, enqueueWebhook, queueKeyPrefix, shardOf, type Redis } from '@gmg/queue';
import { TEST_REDIS_TARGET, deleteRedisPrefix, uniqueRedisPrefix } from '@gmg/testing';

const ROOT = path.resolve(__dirname, '../..');
const EDGES = ['10.0.0.1:8080', '10.0.0.2:8080', '10.0.0.3:8080'];

type Series = { labels: Record<string, string>; value: number };

/** The samples of one metric in a Prometheus text exposition, each with the target's `instance` label added. */
function scrape(text: string, metric: string, instance: string): Series[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${metric}{`))
    .map((l) => {
      const m = /^[^{]+\{([^}]*)\}\s+(\S+)$/.exec(l)!;
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
      return { labels: { ...labels, instance }, value: Number(m[2]) };
    });
}

/**
 * A trigger query of the form `<agg>(<metric>{l="v",...})` (agg: sum, max, min, avg) evaluated over stored series;
 * any other form fails the test (it would need a real Prometheus to judge).
 */
function evaluate(query: string, stored: Series[]): number {
  const m = /^\s*(sum|max|min|avg)\s*\(\s*(\w+)\{([^}]*)\}\s*\)\s*$/.exec(query);
  if (!m) throw new Error(`trigger query not understood by this test: ${query}`);
  const want = Object.fromEntries([...m[3]!.matchAll(/(\w+)\s*=\s*"([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
  const values = stored.filter((s) => Object.entries(want).every(([k, v]) => s.labels[k] === v)).map((s) => s.value);
  if (values.length === 0) throw new Error(`no series for ${query}`);
  const sum = values.reduce((a, b) => a + b, 0);
  return { sum, max: Math.max(...values), min: Math.min(...values), avg: sum / values.length }[m[1] as 'sum' | 'max' | 'min' | 'avg'];
}

/** Each pool's ScaledObject prometheus triggers on the edge's queue gauge (k8s/base/worker-<pool>.yaml), by state. */
function queueTriggers(pool: string): Record<string, string> {
  const docs = YAML.parseAllDocuments(readFileSync(path.join(ROOT, `k8s/base/worker-${pool}.yaml`), 'utf8')).map((d) => d.toJS() as Record<string, any>);
  const so = docs.find((d) => d.kind === 'ScaledObject')!;
  const queries = (so.spec.triggers as Array<{ type: string; metadata: { query?: string } }>)
    .filter((t) => t.type === 'prometheus' && t.metadata.query!.includes('gmg_queue_jobs'))
    .map((t) => t.metadata.query!);
  return Object.fromEntries(queries.map((q) => [/state="(\w+)"/.exec(q)![1]!, q]));
}

let redis: Redis;
let prefix: string;
beforeAll(() => {
  redis = createRedis(TEST_REDIS_TARGET, 'client');
  prefix = uniqueRedisPrefix();
});
afterAll(async () => {
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
});

describe('KEDA pool triggers (issue 38)', () => {
  it('see each pool’s polls and overdue polls once, whatever the number of edges exporting them', async () => {
    const shards = { image: 2, video: 1, artgen: 1, avatar: 1 } as const;
    const producers = new Producers(redis, prefix, shards);
    // polls on the poll path of each pool, on every shard (a different count per pool)
    const truth: Record<string, number> = {};
    const overdue: Record<string, number> = {};
    for (const [n, pool] of POOLS.entries()) {
      const polls = Array.from({ length: shards[pool] }, (_, s) => new DuePolls(redis, queueKeyPrefix(prefix, QUEUES[pool], s), 30_000));
      truth[pool] = 3 + 2 * n;
      // the first n + 1 are due already (overdue: due, not claimed), the others in a minute
      overdue[pool] = n + 1;
      for (let i = 0; i < truth[pool]; i++) {
        const id = `${pool}-task-${i}`;
        await polls[shardOf(id, polls.length)]!.add(id, i < overdue[pool] ? Date.now() - 5_000 : Date.now() + 60_000, 0);
      }
      const read = await Promise.all(polls.map((p) => p.counts(Date.now())));
      expect(read.reduce((a, c) => a + c.waiting + c.claimed, 0)).toBe(truth[pool]);
      expect(read.reduce((a, c) => a + c.overdue, 0)).toBe(overdue[pool]);
    }
    expect(
      (await Promise.all([0, 1].map((s) => redis.zcard(new DuePolls(redis, queueKeyPrefix(prefix, QUEUES.image, s), 30_000).keys.due)))).every((c) => c > 0),
    ).toBe(true);

    // what each edge answers on /metrics (they all read the same Redis), stored once per scraped edge
    reportQueueDepth(() => producers.jobCounts(), 0);
    const text = (await renderMetrics()).body;
    const stored = EDGES.flatMap((instance) => scrape(text, 'gmg_queue_jobs', instance));
    expect(new Set(stored.map((s) => s.labels.instance)).size).toBe(EDGES.length);

    for (const pool of POOLS) {
      const queries = queueTriggers(pool);
      expect(Object.keys(queries).sort()).toEqual(['polling', 'polls_overdue']);
      expect({ pool, seen: evaluate(queries.polling!, stored) }).toEqual({ pool, seen: truth[pool] });
      expect({ pool, overdue: evaluate(queries.polls_overdue!, stored) }).toEqual({ pool, overdue: overdue[pool] });
    }
    await producers.close();
  });

  it('see billing’s settlements and webhook deliveries each as its own queue, once whatever the number of edges', async () => {
    const own = uniqueRedisPrefix();
    const producers = new Producers(redis, own);
    const webhooks = createWebhookQueue(redis, own, { attempts: 3, backoffMs: 1000 });
    try {
      for (let i = 0; i < 4; i++) await enqueueWebhook(webhooks, { taskId: `task-${i}`, event: 'completed' });
      for (let i = 0; i < 2; i++) await producers.requestSettlement(`task-${i}`);
      const truth = { [QUEUES.webhook]: await webhooks.getWaitingCount(), [QUEUES.billing]: await producers.billing[0]!.getWaitingCount() };
      expect(truth).toEqual({ [QUEUES.webhook]: 4, [QUEUES.billing]: 2 });

      reportQueueDepth(() => producers.jobCounts(), 0);
      const text = (await renderMetrics()).body;
      const stored = EDGES.flatMap((instance) => scrape(text, 'gmg_queue_jobs', instance));
      for (const queue of [QUEUES.webhook, QUEUES.billing]) {
        expect({ queue, seen: evaluate(`max(gmg_queue_jobs{queue="${queue}",state="waiting"})`, stored) }).toEqual({ queue, seen: truth[queue] });
      }
    } finally {
      await webhooks.close();
      await producers.close();
      await deleteRedisPrefix(redis, own);
    }
  });
});
