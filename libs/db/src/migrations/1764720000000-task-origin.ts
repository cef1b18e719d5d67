import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a task came from (issue 12): the edge's request id (`X-Request-Id`) and the trace id (`X-Trace-Id`, when
 * tracing is on), so a support request quoting either finds the task (GET /api/tasks?request_id= | trace_id=).
 * Nullable: tasks from before this migration have neither. Partial indexes keep the lookups cheap.
 */
export class TaskOrigin1764720000000 implements MigrationInterface {
  name = 'TaskOrigin1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN request_id text NULL, ADD COLUMN trace_id text NULL`);
    await q.query(`CREATE INDEX tasks_request_id_idx ON tasks (request_id) WHERE request_id IS NOT NULL`);
    await q.query(`CREATE INDEX tasks_trace_id_idx ON tasks (trace_id) WHERE trace_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS tasks_trace_id_idx`);
    await q.query(`DROP INDEX IF EXISTS tasks_request_id_idx`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS trace_id, DROP COLUMN IF EXISTS request_id`);
  }
}
