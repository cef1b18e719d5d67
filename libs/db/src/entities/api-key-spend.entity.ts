import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A capped API key's running spend per period (`life`, `YYYY-MM-DD`, `YYYY-MM`; migration ApiKeyCaps1765637000000):
 * raised by the hold statement only while `spent + amount <= cap`, lowered by settlement by what a task did not capture.
 */
@Entity({ name: 'api_key_spend' })
export class ApiKeySpendEntity {
  @PrimaryColumn({ type: 'uuid', name: 'api_key_id' }) apiKeyId!: string;
  @PrimaryColumn({ type: 'text' }) period!: string;
  @Column({ type: 'bigint', default: 0 }) spent!: string;
  /** The cap the last hold checked against (the key's `max_spend` then). */
  @Column({ type: 'bigint' }) cap!: string;
}
