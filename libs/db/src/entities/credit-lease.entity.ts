import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Credit an edge process reserved from an account for messages-protocol calls (docs/messages.md): the amount is
 * held on the account while active; `used` is what the calls under it were charged; closing returns the rest.
 */
@Entity({ name: 'credit_leases' })
export class CreditLeaseEntity {
  /** `lease_…` */
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  /** The edge process holding it (a crashed edge's leases expire and are returned by the sweeper). */
  @Column({ type: 'text', name: 'edge_id' }) edgeId!: string;
  /** Minor units held for this lease. */
  @Column({ type: 'bigint' }) amount!: string;
  /** Minor units charged under it so far (≤ amount). */
  @Column({ type: 'bigint', default: 0 }) used!: string;
  @Column({ type: 'text', default: 'active' }) status!: 'active' | 'closed';
  @Column({ type: 'timestamptz', name: 'expires_at' }) expiresAt!: Date;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'closed_at', nullable: true }) closedAt!: Date | null;
}
