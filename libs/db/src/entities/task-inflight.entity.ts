import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Open tasks per API key, over a few shard rows (migration TaskInflightCounter1765069200000): the in-flight limit
 * sums a key's rows. Maintained by triggers on `tasks` only; nothing writes it directly.
 */
@Entity({ name: 'task_inflight' })
export class TaskInflightEntity {
  @PrimaryColumn({ type: 'uuid', name: 'api_key_id' }) apiKeyId!: string;
  @PrimaryColumn({ type: 'integer' }) shard!: number;
  @Column({ type: 'integer', default: 0 }) open!: number;
}
