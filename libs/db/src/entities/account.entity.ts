import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/**
 * Money in bigint minor units (pg returns bigint as string). Invariants: available >= 0, held >= 0,
 * balance = available + held = topups - captures.
 */
@Entity({ name: 'accounts' })
export class AccountEntity {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'text' }) name!: string;
  @Column({ type: 'text', name: 'group_name', default: 'default' }) groupName!: string;
  @Column({ type: 'bigint', default: 0 }) available!: string;
  @Column({ type: 'bigint', default: 0 }) held!: string;
  @Column({ type: 'bigint', default: 0 }) spent!: string;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @UpdateDateColumn({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
