import type { DataSource } from 'typeorm';
import { rowsOf } from './sql';

/**
 * The routing group of a task: its API key's group, else its account's. Resolved at work time (not stored on the
 * task), so a key moved to another group routes its still-pending tasks the new way.
 */
export class ChannelGroupResolver {
  constructor(private readonly ds: DataSource) {}

  async groupOf(apiKeyId: string, accountId: string): Promise<string> {
    const rows = rowsOf(
      await this.ds.query(
        `SELECT COALESCE(k.group_name, a.group_name) AS g
       FROM accounts a LEFT JOIN api_keys k ON k.id = $1 AND k.account_id = a.id
       WHERE a.id = $2`,
        [apiKeyId, accountId],
      ),
    );
    return (rows[0]?.g as string | undefined) ?? 'default';
  }
}
