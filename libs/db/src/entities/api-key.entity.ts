import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type ApiKeyStatus = 'active' | 'revoked';

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
}
