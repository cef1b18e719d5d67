import type { Redis } from './connection';

/**
 * The steady poll path of a pool shard, outside BullMQ (issue 22 item 3). A task that is polling its upstream waits
 * here between polls instead of in BullMQ's delayed set: BullMQ's move-to-delayed and move-to-active scripts cost
 * ~28 Redis commands per poll; a claim of a whole batch here costs ~6 and a settle of a batch ~3.
 *
 * Four keys, in the slot of the shard's queue (its hash tag), so every script touches one slot:
 * - `<queue prefix>:polls`          sorted set, member task id, score = when its next poll is due (ms);
 * - `<queue prefix>:polls:claimed`  sorted set, member task id, score = when a worker claimed it (ms): a claim older
 *                                   than the lease is taken again by any worker (a killed worker's polls come back);
 * - `<queue prefix>:polls:failures` hash, task id → consecutive failed polls, only for tasks with some;
 * - `<queue prefix>:polls:trace`    hash, task id → the W3C trace context its steps continue (JSON), only when
 *                                   tracing is on (one trace from the edge to billing, as the BullMQ job carried it);
 * - `<queue prefix>:polls:nudged`   hash, task id → when a vendor callback came while the task's poll was running
 *                                   (claimed): its settle makes the next poll due by then (`nudge`), only for such.
 * A task is in one of the two sets while it polls (at-least-once: a claim is removed only by its settle, which
 * re-adds the task as due unless it ended). Every set is bounded by the pool's open tasks; the orphan sweep finds a
 * polling task in neither set and re-adds its BullMQ job (pool-sweeper), as after any Redis loss.
 */
const duePollKeys = (queuePrefix: string) => ({
  due: `${queuePrefix}:polls`,
  claimed: `${queuePrefix}:polls:claimed`,
  failures: `${queuePrefix}:polls:failures`,
  trace: `${queuePrefix}:polls:trace`,
  nudged: `${queuePrefix}:polls:nudged`,
});

/** Largest batch one claim takes, or one settle script carries (Lua's unpack is bounded; a claim is one Postgres read). */
const MAX_CLAIM_BATCH = 500;

// KEYS: due, claimed, failures, trace. ARGV: now, limit, leaseMs.
// Returns { flat [id, dueAt or claimedAt, ...], nextDueAt or false, failures per id, how many were due (the rest:
// lapsed claims), trace context per id }.
const CLAIM_LUA = `
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local flat = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local ids, due = {}, {}
for i = 1, #flat, 2 do ids[#ids + 1] = flat[i]; due[#due + 1] = flat[i + 1] end
local fresh = #ids
if fresh < limit then
  local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]), 'WITHSCORES', 'LIMIT', 0, limit - fresh)
  for i = 1, #stale, 2 do ids[#ids + 1] = stale[i]; due[#due + 1] = stale[i + 1] end
end
local nextDue = false
if #ids < limit then
  local first = redis.call('ZRANGE', KEYS[1], fresh, fresh, 'WITHSCORES')
  if first[2] then nextDue = first[2] end
end
if #ids == 0 then return {{}, nextDue, {}, 0, {}} end
if fresh > 0 then redis.call('ZREM', KEYS[1], unpack(ids, 1, fresh)) end
local za = {}
for i = 1, #ids do za[#za + 1] = now; za[#za + 1] = ids[i] end
redis.call('ZADD', KEYS[2], unpack(za))
local out = {}
for i = 1, #ids do out[#out + 1] = ids[i]; out[#out + 1] = due[i] end
return {out, nextDue, redis.call('HMGET', KEYS[3], unpack(ids)), fresh, redis.call('HMGET', KEYS[4], unpack(ids))}`;

// KEYS: due, claimed, failures, trace, nudged. ARGV: quadruples id, dueAt ('' = ended: its fields go), failures ('' =
// leave, '0' = clear, n = set), trace ('' = leave, else set). A task nudged while claimed is due by its nudge instead
// (the nudged hash is read only when it holds something: one HLEN per batch otherwise).
const SETTLE_LUA = `
local za, zr, hs, hd, ts, td = {}, {}, {}, {}, {}, {}
local nudges = redis.call('HLEN', KEYS[5]) > 0
for i = 1, #ARGV, 4 do
  local id, dueAt, f, t = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  zr[#zr + 1] = id
  if nudges then
    local n = redis.call('HGET', KEYS[5], id)
    if n then
      redis.call('HDEL', KEYS[5], id)
      if dueAt ~= '' and tonumber(n) < tonumber(dueAt) then dueAt = n end
    end
  end
  if dueAt ~= '' then za[#za + 1] = dueAt; za[#za + 1] = id else td[#td + 1] = id end
  if f == '0' then hd[#hd + 1] = id elseif f ~= '' then hs[#hs + 1] = id; hs[#hs + 1] = f end
  if t ~= '' then ts[#ts + 1] = id; ts[#ts + 1] = t end
end
redis.call('ZREM', KEYS[2], unpack(zr))
if #za > 0 then redis.call('ZADD', KEYS[1], unpack(za)) end
if #hs > 0 then redis.call('HSET', KEYS[3], unpack(hs)) end
if #hd > 0 then redis.call('HDEL', KEYS[3], unpack(hd)) end
if #ts > 0 then redis.call('HSET', KEYS[4], unpack(ts)) end
if #td > 0 then redis.call('HDEL', KEYS[4], unpack(td)) end
return #za`;

// KEYS: due, claimed, nudged. ARGV: now, id. A waiting poll moves earlier to now (XX LT: never later, never added);
// a claimed one (its poll running: it may just have missed the end) is marked so its settle makes it due by now.
const NUDGE_LUA = `
if redis.call('ZADD', KEYS[1], 'XX', 'LT', 'CH', ARGV[1], ARGV[2]) == 1 then return 'moved' end
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 'waiting' end
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
  return 'claimed'
end
return 'absent'`;

export interface ClaimedPoll {
  taskId: string;
  /** When it was due (ms); for a claim taken over from a lapsed lease, when that claim was made. */
  dueAt: number;
  /** Consecutive failed polls so far. */
  failures: number;
  /** Taken over from a claim whose lease lapsed (a killed or stuck worker). */
  reclaimed: boolean;
  /** The W3C trace context its steps continue; absent when tracing was off at its hand-off. */
  trace?: Record<string, string>;
}

export interface PollSettlement {
  taskId: string;
  /** When the next poll is due (ms); undefined: the task ended (or left the poll path), drop it. */
  dueAt?: number;
  /** Consecutive failed polls after this one. */
  failures: number;
  /** What the claim said (so a zero is not written, nor an absent field deleted). */
  previousFailures: number;
  /** Stored with it (at the hand-off); undefined leaves what is stored (dropped when the task ends). */
  trace?: Record<string, string>;
}

export type NudgeOutcome = 'moved' | 'waiting' | 'claimed' | 'absent';

type ClaimReply = [string[], string | null, Array<string | null>, number, Array<string | null>];

/** The scripts, sent once per connection and then called by SHA (ioredis defineCommand). */
interface PollScripts {
  gmgClaimPolls(due: string, claimed: string, failures: string, trace: string, now: string, limit: string, leaseMs: string): Promise<ClaimReply>;
  gmgSettlePolls(due: string, claimed: string, failures: string, trace: string, nudged: string, ...argv: string[]): Promise<number>;
  gmgNudgePoll(due: string, claimed: string, nudged: string, now: string, taskId: string): Promise<NudgeOutcome>;
}

function scriptsOn(redis: Redis): PollScripts {
  const r = redis as Redis & Partial<PollScripts>;
  if (typeof r.gmgClaimPolls !== 'function') {
    redis.defineCommand('gmgClaimPolls', { numberOfKeys: 4, lua: CLAIM_LUA });
    redis.defineCommand('gmgSettlePolls', { numberOfKeys: 5, lua: SETTLE_LUA });
    redis.defineCommand('gmgNudgePoll', { numberOfKeys: 3, lua: NUDGE_LUA });
  }
  return r as unknown as PollScripts;
}

function parseTrace(raw: string | null | undefined): Record<string, string> | undefined {
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : undefined;
  } catch {
    return undefined;
  }
}

/** One shard's due polls; `redis` is any client (standalone, Sentinel or Cluster: every call is one slot). */
export class DuePolls {
  readonly keys: ReturnType<typeof duePollKeys>;

  private readonly scripts: PollScripts;

  /** `leaseMs`: a claim not settled this long is taken again by any worker (WORKER_LOCK_MS). */
  constructor(
    private readonly redis: Redis,
    queuePrefix: string,
    private readonly leaseMs: number,
  ) {
    this.keys = duePollKeys(queuePrefix);
    this.scripts = scriptsOn(redis);
  }

  /**
   * Takes up to `limit` polls due by `now` (oldest first), then lapsed claims, in one script. `nextDueAt` is the
   * earliest remaining due time when fewer than `limit` were taken (null when none is waiting), so the caller
   * sleeps until then.
   */
  async claim(now: number, limit: number): Promise<{ polls: ClaimedPoll[]; nextDueAt: number | null }> {
    const n = Math.max(1, Math.min(MAX_CLAIM_BATCH, Math.floor(limit)));
    const [flat, nextDue, failures, fresh, traces] = await this.scripts.gmgClaimPolls(
      this.keys.due,
      this.keys.claimed,
      this.keys.failures,
      this.keys.trace,
      String(now),
      String(n),
      String(this.leaseMs),
    );
    const polls: ClaimedPoll[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const p: ClaimedPoll = { taskId: flat[i]!, dueAt: Number(flat[i + 1]), failures: Number(failures[i / 2] ?? 0) || 0, reclaimed: i / 2 >= Number(fresh) };
      const trace = parseTrace(traces[i / 2]);
      if (trace) p.trace = trace;
      polls.push(p);
    }
    return { polls, nextDueAt: nextDue === null ? null : Number(nextDue) };
  }

  /** Ends the claims of a batch: each task due again at `dueAt`, or dropped. One script per 500 of the batch. */
  async settle(batch: readonly PollSettlement[]): Promise<void> {
    for (let from = 0; from < batch.length; from += MAX_CLAIM_BATCH) {
      const argv: string[] = [];
      for (const s of batch.slice(from, from + MAX_CLAIM_BATCH)) {
        const f = s.failures === s.previousFailures ? '' : String(s.failures);
        argv.push(
          s.taskId,
          s.dueAt === undefined ? '' : String(Math.round(s.dueAt)),
          s.dueAt === undefined && s.previousFailures > 0 ? '0' : f,
          s.dueAt !== undefined && s.trace ? JSON.stringify(s.trace) : '',
        );
      }
      await this.scripts.gmgSettlePolls(this.keys.due, this.keys.claimed, this.keys.failures, this.keys.trace, this.keys.nudged, ...argv);
    }
  }

  /** Puts a task on the poll path (from its BullMQ job, after its submit or a resumed step), with its trace context. */
  async add(taskId: string, dueAt: number, failures: number, trace?: Record<string, string>): Promise<void> {
    await this.settle([{ taskId, dueAt, failures, previousFailures: 0, trace }]);
  }

  /**
   * Drops a task's due poll (its task ended outside a worker: cancelled); true when it was waiting. A claimed one is
   * left to its step, which re-reads the row, sees the terminal status and drops it.
   */
  async remove(taskId: string): Promise<boolean> {
    const res = await this.redis
      .multi()
      .zrem(this.keys.due, taskId)
      .hdel(this.keys.failures, taskId)
      .hdel(this.keys.trace, taskId)
      .hdel(this.keys.nudged, taskId)
      .exec();
    const [err, removed] = res?.[0] ?? [new Error('no reply'), 0];
    if (err) throw err;
    return removed === 1;
  }

  /**
   * A vendor callback's nudge (issue 35 item 8): makes the task's next poll due by `now`, in one script. `moved`: its
   * waiting poll is due now (only earlier, never added); `waiting`: it was due by then already; `claimed`: its poll
   * is running (and may just have missed the end), so its settle makes the next one due by `now`; `absent`: not on
   * this shard's poll path (ended, or never polled).
   */
  async nudge(taskId: string, now: number): Promise<NudgeOutcome> {
    return this.scripts.gmgNudgePoll(this.keys.due, this.keys.claimed, this.keys.nudged, String(Math.round(now)), taskId);
  }

  /** Which of these tasks are on this shard's poll path (due or claimed): one pipelined round trip. */
  async present(taskIds: readonly string[]): Promise<boolean[]> {
    if (taskIds.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const id of taskIds) {
      pipe.zscore(this.keys.due, id);
      pipe.zscore(this.keys.claimed, id);
    }
    const res = (await pipe.exec()) ?? [];
    const reply = (k: number): unknown => {
      const [err, value] = res[k] ?? [new Error('no pipeline reply'), null];
      if (err) throw err;
      return value;
    };
    return taskIds.map((_, i) => reply(2 * i) !== null || reply(2 * i + 1) !== null);
  }

  /** Polls waiting, polls due by `now` and not yet claimed, polls claimed, and the oldest due time (for metrics). */
  async counts(now = Date.now()): Promise<{ waiting: number; overdue: number; claimed: number; oldestDueAt: number | null }> {
    const pipe = this.redis.pipeline();
    pipe.zcard(this.keys.due);
    pipe.zcount(this.keys.due, '-inf', now);
    pipe.zcard(this.keys.claimed);
    pipe.zrange(this.keys.due, 0, 0, 'WITHSCORES');
    const res = (await pipe.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    const first = res[3]?.[1] as string[] | undefined;
    return {
      waiting: Number(res[0]?.[1] ?? 0),
      overdue: Number(res[1]?.[1] ?? 0),
      claimed: Number(res[2]?.[1] ?? 0),
      oldestDueAt: first && first[1] !== undefined ? Number(first[1]) : null,
    };
  }
}
