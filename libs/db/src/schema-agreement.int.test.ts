import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { ENTITIES } from './data-source';

/**
 * SQL-first (docs/architecture.md, "Data"): the migrations are the schema; the entities are its typed description
 * and must say the same thing. This compares them column by column against a database built by the real migrations.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
}, 60_000);
afterAll(async () => db?.drop());

interface DbColumn {
  table: string;
  column: string;
  udt: string;
  nullable: boolean;
}

/** TypeORM's column type → Postgres udt_name. */
const UDT: Record<string, string> = {
  text: 'text',
  uuid: 'uuid',
  bigint: 'int8',
  integer: 'int4',
  int: 'int4',
  timestamptz: 'timestamptz',
  jsonb: 'jsonb',
  boolean: 'bool',
  numeric: 'numeric',
};

async function migratedColumns(): Promise<DbColumn[]> {
  const rows: Array<{ table_name: string; column_name: string; udt_name: string; is_nullable: string }> = await db.dataSource.query(
    `SELECT table_name, column_name, udt_name, is_nullable FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name <> 'migrations' ORDER BY table_name, column_name`,
  );
  return rows.map((r) => ({ table: r.table_name, column: r.column_name, udt: r.udt_name, nullable: r.is_nullable === 'YES' }));
}

function entityColumns(): DbColumn[] {
  return ENTITIES.flatMap((entity) => {
    const meta = db.dataSource.getMetadata(entity);
    return meta.columns.map((c) => {
      const type = typeof c.type === 'string' ? c.type : c.type.name.toLowerCase();
      const base = UDT[type] ?? `unmapped:${type}`;
      return { table: meta.tableName, column: c.databaseName, udt: c.isArray ? `_${base}` : base, nullable: c.isNullable };
    });
  }).sort((a, b) => a.table.localeCompare(b.table) || a.column.localeCompare(b.column));
}

describe('entities agree with the migrations', () => {
  it('every migrated table has an entity with the same columns, types and nullability, and no entity column is missing', async () => {
    expect(entityColumns()).toEqual(await migratedColumns());
  });
});
