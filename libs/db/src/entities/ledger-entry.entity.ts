import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

export type LedgerKind = 'topup' | 'hold' | 'capture' | 'release' | 'adjustment';

/** Append-only. UNIQUE(task_id, kind): a task has at most one hold, one capture, one release. */
@Entity({ name: 'ledger_entries' })
export class LedgerEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', name: 'task_id', nullable: true }) taskId!: string | null;
  @Column({ type: 'text' }) kind!: LedgerKind;
  /** Minor units, always positive; the kind says which way money moved. */
  @Column({ type: 'bigint' }) amount!: string;
  @Column({ type: 'jsonb', nullable: true }) meta!: Record<string, unknown> | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}

/** Sums of the ledger per kind, sharded; maintained by a trigger on ledger_entries (migration LedgerTotals). */
@Entity({ name: 'ledger_totals' })
export class LedgerTotalEntity {
  @PrimaryColumn({ type: 'text' }) kind!: LedgerKind;
  @PrimaryColumn({ type: 'integer' }) shard!: number;
  @Column({ type: 'bigint' }) total!: string;
  @Column({ type: 'bigint' }) entries!: string;
}

/**
 * Ledger entries moved out of `ledger_entries` by the retention (migration LedgerArchive; docs/operations.md,
 * "Retention"): the same rows under the same ids. Never read by the gateway; never deleted by it.
 */
@Entity({ name: 'ledger_archive' })
export class LedgerArchiveEntity {
  @PrimaryColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', name: 'task_id', nullable: true }) taskId!: string | null;
  @Column({ type: 'text' }) kind!: LedgerKind;
  @Column({ type: 'bigint' }) amount!: string;
  @Column({ type: 'jsonb', nullable: true }) meta!: Record<string, unknown> | null;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'archived_at' }) archivedAt!: Date;
}
