import type { MigrationInterface, QueryRunner } from 'typeorm';

const OPEN = `('pending','processing')`;

/**
 * The in-flight limit from a counter instead of a count of open rows (docs/rate-limits.md, docs/reliability.md
 * "Hot accounts"). `task_inflight` holds, per API key, its open tasks split over a few shard rows: a hold statement
 * picks one shard and writes `tasks.inflight_shard`; the check sums the key's shard rows (at most TASK_INFLIGHT_SHARDS
 * of them, whatever the backlog). Two edges holding for one key at once update different rows, so neither waits on
 * the other's commit.
 *
 * The triggers are the one definition of the count: a task inserted open with a shard adds one to its shard row; the
 * transition out of pending/processing (complete, fail, cancel, any sweep) or a delete of an open task takes it
 * off the same row. A task without a shard (written by a release before this one during a rolling upgrade, or a
 * chat call) is not counted and never uncounted. Terminal statuses never reopen, so each counted task leaves once.
 *
 * Expand-only and cheap on a large table: a nullable column without a default (no rewrite), a new small table, and a
 * backfill of the OPEN tasks only (served by tasks_key_open_idx).
 */
export class TaskInflightCounter1765069200000 implements MigrationInterface {
  name = 'TaskInflightCounter1765069200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN inflight_shard integer NULL`);
    await q.query(`
      CREATE TABLE task_inflight (
        api_key_id uuid NOT NULL,
        shard integer NOT NULL,
        open integer NOT NULL DEFAULT 0,
        PRIMARY KEY (api_key_id, shard)
      )`);
    await q.query(`
      CREATE FUNCTION task_inflight_open() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO task_inflight AS c (api_key_id, shard, open) VALUES (NEW.api_key_id, NEW.inflight_shard, 1)
        ON CONFLICT (api_key_id, shard) DO UPDATE SET open = c.open + 1;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION task_inflight_close() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE task_inflight SET open = open - 1 WHERE api_key_id = OLD.api_key_id AND shard = OLD.inflight_shard;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER tasks_inflight_open AFTER INSERT ON tasks FOR EACH ROW
      WHEN (NEW.inflight_shard IS NOT NULL AND NEW.status IN ${OPEN}) EXECUTE FUNCTION task_inflight_open()`);
    await q.query(`CREATE TRIGGER tasks_inflight_close AFTER UPDATE OF status ON tasks FOR EACH ROW
      WHEN (OLD.inflight_shard IS NOT NULL AND OLD.status IN ${OPEN} AND NEW.status NOT IN ${OPEN}) EXECUTE FUNCTION task_inflight_close()`);
    await q.query(`CREATE TRIGGER tasks_inflight_gone AFTER DELETE ON tasks FOR EACH ROW
      WHEN (OLD.inflight_shard IS NOT NULL AND OLD.status IN ${OPEN}) EXECUTE FUNCTION task_inflight_close()`);
    // the tasks open now start counted (shard 0); a transition racing this waits for its row lock, then uncounts it
    await q.query(`
      WITH b AS (
        UPDATE tasks SET inflight_shard = 0 WHERE status IN ${OPEN} AND inflight_shard IS NULL RETURNING api_key_id
      )
      INSERT INTO task_inflight (api_key_id, shard, open) SELECT api_key_id, 0, count(*) FROM b GROUP BY api_key_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS tasks_inflight_gone ON tasks`);
    await q.query(`DROP TRIGGER IF EXISTS tasks_inflight_close ON tasks`);
    await q.query(`DROP TRIGGER IF EXISTS tasks_inflight_open ON tasks`);
    await q.query(`DROP FUNCTION IF EXISTS task_inflight_close()`);
    await q.query(`DROP FUNCTION IF EXISTS task_inflight_open()`);
    await q.query(`DROP TABLE IF EXISTS task_inflight`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS inflight_shard`);
  }
}
