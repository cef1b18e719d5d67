import type { TaskStatus, TaskView } from '@gmg/contracts';
import { taskViewKey, type Redis } from '@gmg/queue';
import type { TaskRecord } from '@gmg/db';
import { toUnifiedTask } from '@gmg/db';
import { toArtgenNativeTask } from './artgen-native-task';

/**
 * How long a view stays in Redis after its last change; Postgres answers a miss (and the edge re-warms the view).
 * Open: beyond any task's life (the deadline fails it after 30 minutes), so a polled open task never misses.
 * Terminal: clients poll a task until it ends and fetch its result once or twice soon after, so an hour covers
 * the reads that matter while a terminal view — most of the views at any moment — costs memory for an hour, not
 * days (docs/operations.md, "Redis memory").
 */
export const TASK_VIEW_TTL_SECONDS = Object.freeze({ open: 2 * 3600, terminal: 3600 });

/** A task only moves forward through these ranks; a terminal view is never replaced by an open one. */
const STATUS_RANK: Record<TaskStatus, number> = { pending: 0, processing: 1, completed: 2, failed: 2 };

/** [status rank, progress, updated_at ms], compared in order. */
type ViewVersion = [number, number, number];

/** What is stored under the key: the view plus its version (read() strips the version). */
interface StoredView extends TaskView {
  version: ViewVersion;
}

const WRITE_COMMAND = 'gmgTaskViewWrite';

/**
 * KEYS[1] view key; ARGV[1] stored JSON, ARGV[2..4] version, ARGV[5] TTL seconds, ARGV[6] '1' = only if absent.
 * Replaces the stored view only when the new version is >= the stored one (equal is accepted: billing rewrites a
 * terminal view after settlement with the same version). A stored value without a readable version (written before
 * versions existed) is replaced. Returns nil when written, else the stored value that won.
 */
const WRITE_LUA = `
local cur = redis.call('GET', KEYS[1])
if cur and ARGV[6] == '1' then return cur end
if cur then
  local ok, old = pcall(cjson.decode, cur)
  if ok and type(old) == 'table' and type(old.version) == 'table' then
    for i = 1, 3 do
      local n = tonumber(ARGV[i + 1])
      local o = tonumber(old.version[i])
      if o == nil then break end
      if n > o then break end
      if n < o then return cur end
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[5])
return false
`;

type WriteCommand = (key: string, json: string, rank: string, progress: string, updatedMs: string, ttl: string, ifAbsent: '0' | '1') => Promise<string | null>;

export interface TaskViewWriteOptions {
  /**
   * Write only when no view is stored (a re-warm after a Postgres fallback): whatever a worker wrote after the
   * reader's row was read stays.
   */
  ifAbsent?: boolean;
}

/**
 * The Redis task view read by `GET /v1/tasks/<id>`: written at every change, so polling never touches
 * Postgres while the view is warm. Key: taskViewKey (`{<prefix>:task:<id>}`), a JSON string of the TaskView plus its version.
 * Writers build views from rows read at different moments, so every write is a compare-and-set on the version:
 * a view built from an older row never replaces a newer one.
 */
export class TaskViewStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    if (!(WRITE_COMMAND in redis)) redis.defineCommand(WRITE_COMMAND, { numberOfKeys: 1, lua: WRITE_LUA });
  }

  key(id: string): string {
    return taskViewKey(this.prefix, id);
  }

  toView(t: TaskRecord): TaskView {
    const view: TaskView = { accountId: t.accountId, pool: t.pool, task: toUnifiedTask(t) };
    // the art suite is read in two shapes; both come from the same row, in one write
    if (t.model === 'artgen') view.artgen = toArtgenNativeTask(t);
    return view;
  }

  static versionOf(t: TaskRecord): ViewVersion {
    return [STATUS_RANK[t.status], t.progress, t.updatedAt.getTime()];
  }

  /**
   * Writes the view of a task row unless the stored view is newer (see WRITE_LUA), or with `ifAbsent` unless any
   * view is stored. Returns the view stored afterwards: this row's, or the one that won. Callers treat a failure as
   * non-fatal: Postgres is the record, reads fall back to it.
   */
  async write(t: TaskRecord, opts: TaskViewWriteOptions = {}): Promise<TaskView> {
    const view = this.toView(t);
    const version = TaskViewStore.versionOf(t);
    // Object.assign, not `{ ...view, version }`: a property added after a leading spread is slow on Node 20
    const stored: StoredView = Object.assign({}, view, { version });
    const run = (this.redis as unknown as Record<typeof WRITE_COMMAND, WriteCommand>)[WRITE_COMMAND];
    const winner = await run.call(
      this.redis,
      this.key(t.id),
      JSON.stringify(stored),
      String(version[0]),
      String(version[1]),
      String(version[2]),
      String(version[0] === STATUS_RANK.completed ? TASK_VIEW_TTL_SECONDS.terminal : TASK_VIEW_TTL_SECONDS.open),
      opts.ifAbsent ? '1' : '0',
    );
    return winner ? TaskViewStore.parse(winner) : view;
  }

  async read(id: string): Promise<TaskView | null> {
    const raw = await this.redis.get(this.key(id));
    return raw ? TaskViewStore.parse(raw) : null;
  }

  private static parse(raw: string): TaskView {
    const { accountId, pool, task, artgen } = JSON.parse(raw) as StoredView;
    return artgen ? { accountId, pool, task, artgen } : { accountId, pool, task };
  }
}
