import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fair use by default (docs/rate-limits.md): the `default` group gets 20 requests per second and 50 tasks in flight
 * per key, instead of no limit. Only when an operator has not set either limit yet; `PUT /api/groups` changes them
 * (null = unlimited), a key's own limits override its group's.
 */
export class DefaultGroupLimits1764633600000 implements MigrationInterface {
  name = 'DefaultGroupLimits1764633600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE groups SET rps_limit = 20, inflight_limit = 50
      WHERE name = 'default' AND rps_limit IS NULL AND inflight_limit IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE groups SET rps_limit = NULL, inflight_limit = NULL
      WHERE name = 'default' AND rps_limit = 20 AND inflight_limit = 50`);
  }
}
