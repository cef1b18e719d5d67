import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** One vendor key of a channel (issue 37): its secret never enters an answer, job data or a log. */
@Entity({ name: 'channel_keys' })
export class ChannelKeyEntity {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'channel_id' }) channelId!: string;
  @Column({ type: 'text', select: false }) secret!: string;
  /** Splits the channel's traffic among its usable keys (0: used only when no positive-weight key is usable). */
  @Column({ type: 'integer', default: 1 }) weight!: number;
  /** `active`, `cooling` (until `cooling_until`) or `disabled` (with `disabled_reason`): ChannelHealthStatus. */
  @Column({ type: 'text', default: 'active' }) status!: string;
  @Column({ type: 'timestamptz', name: 'cooling_until', nullable: true }) coolingUntil!: Date | null;
  @Column({ type: 'text', name: 'disabled_reason', nullable: true }) disabledReason!: string | null;
  @Column({ type: 'text', name: 'last_error', nullable: true }) lastError!: string | null;
  @Column({ type: 'timestamptz', name: 'last_error_at', nullable: true }) lastErrorAt!: Date | null;
  /** Consecutive failed trials: the next cool-down grows with it; a success resets it. */
  @Column({ type: 'integer', name: 'cool_level', default: 0 }) coolLevel!: number;
  /** When the background probe may try it next (a claim: one trial at a time across the fleet). */
  @Column({ type: 'timestamptz', name: 'next_probe_at', nullable: true }) nextProbeAt!: Date | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @UpdateDateColumn({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
