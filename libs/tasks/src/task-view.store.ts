import type { Redis } from 'ioredis';
import type { TaskView } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { toUnifiedTask } from './unified-task';

/** How long a task view stays in Redis after its last change; Postgres stays the record after that. */
export const TASK_VIEW_TTL_SECONDS = 3 * 24 * 3600;

/**
 * The Redis task view read by `GET /v1/tasks/<id>`: written at every change, so polling never touches
 * Postgres while the view is warm. Key: `<prefix>:task:<id>`.
 */
export class TaskViewStore {
  constructor(private readonly redis: Redis, private readonly prefix: string) {}

  key(id: string): string {
    return `${this.prefix}:task:${id}`;
  }

  toView(t: TaskRecord): TaskView {
    return { accountId: t.accountId, pool: t.pool, task: toUnifiedTask(t) };
  }

  /** Writes the view of a task row. Callers treat a failure as non-fatal: Postgres is the record, reads fall back to it. */
  async write(t: TaskRecord): Promise<TaskView> {
    const view = this.toView(t);
    await this.redis.set(this.key(t.id), JSON.stringify(view), 'EX', TASK_VIEW_TTL_SECONDS);
    return view;
  }

  async read(id: string): Promise<TaskView | null> {
    const raw = await this.redis.get(this.key(id));
    return raw ? (JSON.parse(raw) as TaskView) : null;
  }
}
