import type { DataSource } from 'typeorm';
import type { PriceTable } from '@gmg/contracts';
import type { Row } from './sql';

export interface PriceRecord {
  key: string;
  unitPrice: bigint;
  description: string;
}

export class PriceRepository {
  constructor(private readonly ds: DataSource) {}

  async table(): Promise<PriceTable> {
    const rows: Row[] = await this.ds.query(`SELECT key, unit_price FROM prices`);
    return new Map(rows.map((r) => [r.key as string, BigInt(r.unit_price as string)]));
  }

  async list(): Promise<PriceRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT key, unit_price, description FROM prices ORDER BY key`);
    return rows.map((r) => ({ key: r.key as string, unitPrice: BigInt(r.unit_price as string), description: r.description as string }));
  }

  async upsertMany(prices: PriceRecord[]): Promise<void> {
    if (prices.length === 0) return;
    await this.ds.query(
      `INSERT INTO prices (key, unit_price, description)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
       ON CONFLICT (key) DO UPDATE SET unit_price = EXCLUDED.unit_price, description = EXCLUDED.description, updated_at = now()`,
      [prices.map((p) => p.key), prices.map((p) => p.unitPrice.toString()), prices.map((p) => p.description)],
    );
  }
}
