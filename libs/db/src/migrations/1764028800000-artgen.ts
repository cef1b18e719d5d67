import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.native`: the upstream's own view of a task where it says more than the unified status (the art suite:
 * SUBMITTED / IN_PROGRESS / SUCCESS / FAILURE / MODAL, action, grid, image and video URLs, description). Written
 * by the worker from each poll; the art suite's native view (`GET /v1/artgen/<id>`) is built from it and the row.
 * Nullable: every other task has none.
 */
export class Artgen1764028800000 implements MigrationInterface {
  name = 'Artgen1764028800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN native jsonb NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS native`);
  }
}
