import type { Response } from 'express';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';

/** An answer as a replay sends it: status, the replayed headers (lower-case names, in the order sent), the body bytes. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/**
 * Rebuilds the first answer of a task-creating route from immutable fields of its task (id, request id, trace id,
 * the action it was created for) and `arg`, the one value the reference carries besides the task id (a response
 * version). A pure function: a replay up to 24 h later, on another replica or release, must send these exact bytes,
 * so a shape's layout never changes under its name (a new layout is a new name).
 */
export type TaskAnswerShape = (task: TaskRecord, arg: string) => Answer;

export interface TaskAnswers {
  /** The task by id (Postgres): read on a replay only. */
  get(id: string): Promise<TaskRecord | null>;
  /** By name: a short token without `:` or `@`, stored in every reference. */
  shapes: Readonly<Record<string, TaskAnswerShape>>;
}

interface DeclaredAnswer {
  shape: string;
  arg: string;
  task: TaskRecord;
}

/** A stored reference: `T:<fingerprint>:<status>:<shape>[@<arg>]:<task id>`. */
export interface StoredReference {
  fp: string;
  status: number;
  shape: string;
  arg: string;
  taskId: string;
}

const ANSWER_LOCAL = 'idempotencyTaskAnswer';
const TOKEN = /^[^:@]*$/;

/**
 * Said by a route whose answer names the task it created: the answer is `shape` of `task` (the row as written, or
 * as found by the database backstop). The idempotency middleware then stores a reference instead of the bytes
 * when rebuilding the shape from the task gives exactly what was sent.
 */
export function answeredWithTask(res: Response, shape: string, task: TaskRecord, arg = ''): void {
  res.locals[ANSWER_LOCAL] = { shape, arg, task } satisfies DeclaredAnswer;
}

/**
 * The reference to store for `sent`, or undefined to keep the full answer: only when the route declared its task
 * and shape, and that shape rebuilt from the task is byte for byte what was sent, status and replayed headers
 * included. Anything the shape does not reproduce (a backstop answer quoting another request's id, a header the
 * shape does not know) keeps the full answer.
 */
export function referenceFor(res: Response, answers: TaskAnswers | undefined, fp: string, sent: Answer): string | undefined {
  const declared = res.locals[ANSWER_LOCAL] as DeclaredAnswer | undefined;
  const shape = declared && answers?.shapes[declared.shape];
  if (!declared || !shape || !TOKEN.test(declared.shape) || !TOKEN.test(declared.arg) || declared.task.id.includes(':')) return undefined;
  let rebuilt: Answer;
  try {
    rebuilt = shape(declared.task, declared.arg);
  } catch {
    return undefined; // a task the shape cannot read: the full answer is kept
  }
  if (!sameAnswer(rebuilt, sent)) return undefined;
  return `T:${fp}:${sent.status}:${declared.shape}${declared.arg ? `@${declared.arg}` : ''}:${declared.task.id}`;
}

export function parseReference(value: string): StoredReference {
  const [tag, fp, status, spec, taskId, ...rest] = value.split(':');
  if (tag !== 'T' || !fp || !spec || !taskId || rest.length > 0) throw new Error('idempotency: malformed stored reference');
  const at = spec.indexOf('@');
  return { fp, status: Number(status), shape: at < 0 ? spec : spec.slice(0, at), arg: at < 0 ? '' : spec.slice(at + 1), taskId };
}

/**
 * The first answer again, from its task. A task that is no longer there (moved to tasks_archive after
 * TASK_RETENTION_DAYS, or removed) cannot give it: 422, rather than running the request again, which would create
 * and charge a second task under a key the client was told protects it (docs/idempotency.md).
 */
export async function rebuildReferenced(answers: TaskAnswers | undefined, ref: StoredReference, apiKeyId: string): Promise<Answer> {
  const shape = answers?.shapes[ref.shape];
  if (!answers || !shape) throw new Error(`idempotency: stored reference of unknown answer shape '${ref.shape}'`);
  const task = await answers.get(ref.taskId);
  if (!task) {
    throw new DomainError(
      'idempotency_task_gone',
      `This Idempotency-Key created task ${ref.taskId}, which is no longer kept, so its answer cannot be replayed; use a new key for a new request`,
      {
        field: 'Idempotency-Key',
      },
    );
  }
  // the reference lives under this API key's record and names that key's own task: anything else is a bug
  if (task.apiKeyId !== apiKeyId) throw new Error(`idempotency: stored reference names task ${ref.taskId} of another API key`);
  const answer = shape(task, ref.arg);
  if (answer.status !== ref.status) throw new Error(`idempotency: shape '${ref.shape}' rebuilt status ${answer.status}, ${ref.status} was sent`);
  return answer;
}

const sameAnswer = (a: Answer, b: Answer): boolean => a.status === b.status && a.body.equals(b.body) && JSON.stringify(a.headers) === JSON.stringify(b.headers);
