import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A pricing and access tier. Keys and accounts belong to one. */
@Entity({ name: 'groups' })
export class GroupEntity {
  @PrimaryColumn({ type: 'text' }) name!: string;
  /** Multiplies every price quoted for this group. */
  @Column({ type: 'numeric', precision: 10, scale: 4, default: 1, name: 'price_ratio' }) priceRatio!: string;
  /** Models callable in this group; null = every model. */
  @Column({ type: 'text', array: true, nullable: true }) models!: string[] | null;
  /** Requests per second per key; null = unlimited. */
  @Column({ type: 'integer', nullable: true, name: 'rps_limit' }) rpsLimit!: number | null;
  /** Unfinished tasks per key; null = unlimited. */
  @Column({ type: 'integer', nullable: true, name: 'inflight_limit' }) inflightLimit!: number | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
