import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AssetReviewStatus, AssetType } from '../repositories/asset.repository';

/** One avatar asset (spec 2.5, 4.8): written `Pending` at submission, decided by the avatar worker. */
@Entity({ name: 'avatar_assets' })
export class AvatarAssetEntity {
  /** `asset_` + 24 random base62 characters (what `asset://<id>` names). */
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', name: 'group_id' }) groupId!: string;
  /** The batch task that reviews it. */
  @Column({ type: 'text', name: 'task_id' }) taskId!: string;
  /** Its index in the batch: the upstream's review at the same position decides it. */
  @Column({ type: 'integer' }) position!: number;
  @Column({ type: 'text', name: 'asset_type' }) assetType!: AssetType;
  @Column({ type: 'text' }) name!: string;
  @Column({ type: 'text' }) url!: string;
  @Column({ type: 'text', name: 'project_name' }) projectName!: string;
  @Column({ type: 'text', default: 'Pending' }) status!: AssetReviewStatus;
  /** Why it was rejected. */
  @Column({ type: 'text', nullable: true }) reason!: string | null;
  /** The channel that reviewed it: motion-2.0 requests using it are pinned there. */
  @Column({ type: 'uuid', name: 'channel_id', nullable: true }) channelId!: string | null;
  @Column({ type: 'text', name: 'upstream_asset_id', nullable: true }) upstreamAssetId!: string | null;
  @Column({ type: 'text', name: 'upstream_asset_url', nullable: true }) upstreamAssetUrl!: string | null;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at', default: () => 'now()' }) updatedAt!: Date;
}
