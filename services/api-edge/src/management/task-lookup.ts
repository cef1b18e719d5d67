import Joi from 'joi';
import type { TaskRecord, TaskRepository } from '@gmg/db';
import { validate } from './management.schemas';

/** Exactly one of the two ids a support request may quote. */
const taskLookupQuerySchema = Joi.object({
  request_id: Joi.string().trim().min(1).max(200),
  trace_id: Joi.string()
    .trim()
    .lowercase()
    .pattern(/^[0-9a-f]{32}$/, 'trace id (32 hex digits)'),
}).xor('request_id', 'trace_id');

export interface TaskLookupItem {
  task_id: string;
  account_id: string;
  model: string;
  pool: string;
  status: string;
  request_id: string | null;
  trace_id: string | null;
  created_at: number;
  completed_at: number | null;
  settled: boolean;
  error: string | null;
}

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);

const item = (t: TaskRecord): TaskLookupItem => ({
  task_id: t.id,
  account_id: t.accountId,
  model: t.model,
  pool: t.pool,
  status: t.status,
  request_id: t.requestId ?? null,
  trace_id: t.traceId ?? null,
  created_at: secs(t.createdAt),
  completed_at: t.completedAt ? secs(t.completedAt) : null,
  settled: Boolean(t.settledAt),
  error: t.error?.message ?? null,
});

/** GET /api/tasks?request_id=… | ?trace_id=… (admin): the tasks a request or a trace made, newest first. */
export async function lookupTasks(tasks: Pick<TaskRepository, 'findByOrigin'>, query: unknown): Promise<TaskLookupItem[]> {
  const q = validate<{ request_id?: string; trace_id?: string }>(taskLookupQuerySchema, query, 'query');
  return (await tasks.findByOrigin({ requestId: q.request_id, traceId: q.trace_id })).map(item);
}
