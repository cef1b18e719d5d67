import type { DataSource } from 'typeorm';
import type { Row } from './sql';

export interface MoneyStats {
  unsettled: number;
  oldestUnsettledSeconds: number;
  /** Sum of ledger amounts per kind, minor units. */
  ledgerMinor: Record<string, bigint>;
}

/**
 * What an operator watches about the money, for the metrics billing exports (read on scrape, cached by the caller).
 * Both reads are bounded whatever the history: the backlog through the unsettled-tasks partial index, the ledger
 * sums from the counters a trigger maintains (ledger_totals: at most kinds × 64 rows), never a scan of the ledger.
 */
export class OpsStatsRepository {
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  async money(): Promise<MoneyStats> {
    const backlog = await this.unsettled();
    const kinds: Row[] = await this.ds.query(`SELECT kind, sum(total)::text AS total FROM ledger_totals GROUP BY kind`);
    return {
      unsettled: backlog.count,
      oldestUnsettledSeconds: backlog.oldestSeconds,
      ledgerMinor: Object.fromEntries(kinds.map((k) => [k.kind as string, BigInt(k.total as string)])),
    };
  }

  /** The unsettled backlog alone (the partial index tasks_unsettled_completed_idx): cheap at any ledger size. */
  async unsettled(): Promise<{ count: number; oldestSeconds: number }> {
    const [backlog]: Row[] = await this.ds.query(
      `SELECT count(*)::int AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(completed_at)), 0)::float8 AS oldest
       FROM tasks WHERE settled_at IS NULL AND status IN ('completed','failed')`,
    );
    return { count: Number(backlog?.n ?? 0), oldestSeconds: Math.max(0, Number(backlog?.oldest ?? 0)) };
  }
}
