import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type ApiKeyStatus = 'active' | 'revoked';

/** A cap's period: a UTC day or month; null = the key's whole life. */
export type SpendWindow = 'day' | 'month';

@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', default: '' }) name!: string;
  /** SHA-256 hex of the secret; the secret itself is never stored. */
  @Column({ type: 'text', name: 'key_hash', select: false }) keyHash!: string;
  /** Display prefix, e.g. `sk-gmg-AbCd`. */
  @Column({ type: 'text' }) prefix!: string;
  /** Model restriction list; null = no restriction. */
  @Column({ type: 'text', array: true, nullable: true }) models!: string[] | null;
  /** Group; null = the account's group. */
  @Column({ type: 'text', name: 'group_name', nullable: true }) groupName!: string | null;
  /** Per-key overrides of the group's limits. */
  @Column({ type: 'integer', nullable: true, name: 'rps_limit' }) rpsLimit!: number | null;
  @Column({ type: 'integer', nullable: true, name: 'inflight_limit' }) inflightLimit!: number | null;
  @Column({ type: 'text', default: 'active' }) status!: ApiKeyStatus;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
  /** Spending cap in minor units (null: none), over the key's life or per `spend_window`. */
  @Column({ type: 'bigint', name: 'max_spend', nullable: true }) maxSpend!: string | null;
  @Column({ type: 'text', name: 'spend_window', nullable: true }) spendWindow!: SpendWindow | null;
  @Column({ type: 'timestamptz', name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  /** The secret the last rotation replaced (hashed), accepted until `previous_valid_until`. */
  @Column({ type: 'text', name: 'previous_key_hash', nullable: true, select: false }) previousKeyHash!: string | null;
  @Column({ type: 'timestamptz', name: 'previous_valid_until', nullable: true }) previousValidUntil!: Date | null;
  @Column({ type: 'timestamptz', name: 'rotated_at', nullable: true }) rotatedAt!: Date | null;
}
