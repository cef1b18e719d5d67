import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** Unit price per billing key (see @gmg/contracts BillingItem.keys), minor units. */
@Entity({ name: 'prices' })
export class PriceEntity {
  @PrimaryColumn({ type: 'text' }) key!: string;
  @Column({ type: 'bigint', name: 'unit_price' }) unitPrice!: string;
  @Column({ type: 'text', default: '' }) description!: string;
  @UpdateDateColumn({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
