import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** An upstream endpoint. Its api_key never enters job data or logs. */
@Entity({ name: 'channels' })
export class ChannelEntity {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'text' }) name!: string;
  /** Adapter name, e.g. `gateway` (an upstream speaking this same API). */
  @Column({ type: 'text', default: 'gateway' }) protocol!: string;
  @Column({ type: 'text', name: 'base_url' }) baseUrl!: string;
  @Column({ type: 'text', name: 'api_key', select: false, default: '' }) apiKey!: string;
  /** Models served; null = every model. */
  @Column({ type: 'text', array: true, nullable: true }) models!: string[] | null;
  /** Groups served; null = every group. */
  @Column({ type: 'text', array: true, nullable: true }) groups!: string[] | null;
  /** Higher first; weight splits traffic among equal priorities. */
  @Column({ type: 'integer', default: 0 }) priority!: number;
  @Column({ type: 'integer', default: 1 }) weight!: number;
  @Column({ type: 'boolean', default: true }) enabled!: boolean;
  /** Messages-protocol channels: the name of the upstream's own version header (it gets the client's date). */
  @Column({ type: 'text', name: 'version_header', default: 'anthropic-version' }) versionHeader!: string;
  /** Public model id → the vendor's model or endpoint id; a model not named goes upstream under its own name. */
  @Column({ type: 'jsonb', name: 'model_map', default: () => "'{}'::jsonb" }) modelMap!: Record<string, string>;
  /** Protocol settings: extra headers, fixed extra body parameters, protocol options (libs/upstream, per protocol). */
  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" }) settings!: Record<string, unknown>;
  /** Health (issue 37): `active`, `cooling` until `cooling_until`, or `disabled` with `disabled_reason`. */
  @Column({ type: 'text', default: 'active' }) status!: string;
  @Column({ type: 'timestamptz', name: 'cooling_until', nullable: true }) coolingUntil!: Date | null;
  @Column({ type: 'text', name: 'disabled_reason', nullable: true }) disabledReason!: string | null;
  @Column({ type: 'text', name: 'last_error', nullable: true }) lastError!: string | null;
  @Column({ type: 'timestamptz', name: 'last_error_at', nullable: true }) lastErrorAt!: Date | null;
  @Column({ type: 'integer', name: 'cool_level', default: 0 }) coolLevel!: number;
  @Column({ type: 'timestamptz', name: 'next_probe_at', nullable: true }) nextProbeAt!: Date | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @UpdateDateColumn({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
