import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An avatar asset group of one account (spec 2.5); created by a submission's `group`, or automatically. */
@Entity({ name: 'asset_groups' })
export class AssetGroupEntity {
  /** `group_` + 24 random base62 characters. */
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text' }) name!: string;
  @Column({ type: 'text', default: '' }) description!: string;
  /** Created because the submission named no group. */
  @Column({ type: 'boolean', name: 'auto_created', default: false }) autoCreated!: boolean;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
}
