import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * The expand/contract rule (docs/operations.md, "Upgrading: migrations"), checked on every migration written since
 * it was adopted: a migration runs while the previous release's pods still serve, on tables that may hold years of
 * rows, so it never rewrites an existing table, never builds an index or validates a constraint under a lock, and
 * never scans a large table (a backfill, a count) — least of all while the same transaction holds a lock on it.
 * Checked statement by statement: what a statement does to a table created by the same migration is free (it is
 * empty).
 */
const ADOPTED = 1765100000000;
const DIR = path.join(__dirname, 'migrations');

/** Tables that grow with traffic: any statement that reads or rewrites all of one is an outage at production size. */
const LARGE_TABLES = ['tasks', 'ledger_entries', 'webhook_deliveries', 'tasks_archive', 'ledger_archive', 'credit_leases'];
const LARGE = `(?:${LARGE_TABLES.join('|')})\\b`;

/** Statements that take a long exclusive lock or rewrite an existing table, with what to do instead. */
const FORBIDDEN: Array<[RegExp, string]> = [
  [/CREATE\s+(UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY)/i, 'CREATE INDEX without CONCURRENTLY (use createIndexConcurrently, transaction = false)'],
  [
    /GENERATED\s+ALWAYS\s+AS\s*\([\s\S]*?\)\s*STORED/i,
    'a stored generated column (rewrites the table): add a plain nullable column, write it from the code, backfill in batches',
  ],
  [/ALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE/i, 'a column type change (rewrites the table): add a new column, dual-write, backfill, switch, drop later'],
  [/SET\s+NOT\s+NULL/i, 'SET NOT NULL (scans under an exclusive lock): add CHECK (col IS NOT NULL) NOT VALID, then VALIDATE CONSTRAINT'],
  [
    /ADD\s+(CONSTRAINT\s+\w+\s+)?(FOREIGN\s+KEY|CHECK)\b(?![\s\S]*?NOT\s+VALID)/i,
    'a constraint validated under lock: add it NOT VALID, then VALIDATE CONSTRAINT in a later step',
  ],
  [
    /ADD\s+(CONSTRAINT\s+\w+\s+)?(PRIMARY\s+KEY|UNIQUE)\b(?!\s+USING\s+INDEX)/i,
    'a primary key or unique constraint built under lock: build the unique index CONCURRENTLY, then ADD CONSTRAINT … USING INDEX',
  ],
  [
    /ADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)?\w+\s+[^,]*?\bNOT\s+NULL\b(?![^,]*?\bDEFAULT\b)/i,
    'a NOT NULL column without a default (fails on a table with rows, or needs a backfill under lock): add it nullable, backfill in batches, then a NOT VALID check',
  ],
  [
    /ADD\s+COLUMN\s+[^,]*?\bDEFAULT\s+\(?\s*(now|clock_timestamp|random|gen_random_uuid|uuid_generate_v4|nextval|statement_timestamp|timeofday)\s*\(/i,
    'a column with a volatile default (rewrites the table under an exclusive lock): add it without a default, write it from the code, backfill in batches',
  ],
  [
    /\bVACUUM\s+FULL\b|\bCLUSTER\s+\w+\s+USING\b|\bLOCK\s+TABLE\b|\bREINDEX\s+(TABLE|INDEX|SCHEMA|DATABASE)\s+(?!CONCURRENTLY)/i,
    'VACUUM FULL, CLUSTER, LOCK TABLE or a plain REINDEX (an exclusive lock for a whole pass)',
  ],
  [
    /DROP\s+COLUMN|RENAME\s+(COLUMN|TO)/i,
    'dropping or renaming what the previous release still reads: only in a contract migration one release later (say so with an "expand-contract: contract" comment)',
  ],
];

/** Statements that touch every row of a large table (a backfill, a count, a copy), wherever they run. */
const SCANS: Array<[RegExp, string]> = [
  [
    new RegExp(`\\bUPDATE\\s+(ONLY\\s+)?${LARGE}`, 'i'),
    'a backfill UPDATE of a large table (every row locked in one long transaction): batch it by keyset in a `batched-backfill:` migration, or write it from the code',
  ],
  [
    new RegExp(`\\bDELETE\\s+FROM\\s+(ONLY\\s+)?${LARGE}`, 'i'),
    'a DELETE from a large table (every matching row in one transaction): the retention sweeps do that in batches',
  ],
  [
    new RegExp(`\\b(FROM|JOIN)\\s+(ONLY\\s+)?(\\w+(\\s+(AS\\s+)?\\w+)?\\s*,\\s*)*${LARGE}`, 'i'),
    'a read of a large table (a backfill or a count scans it, and every writer waits when the transaction holds a lock on it): keyset batches (`id > done AND id <= upto`) in a `batched-backfill:` migration',
  ],
];

/** A read that is one index lookup whatever the size: the high-water mark a batched backfill starts from. */
const LOOKUP = new RegExp(`SELECT\\s+(max|min)\\(id\\)\\s+FROM\\s+${LARGE}\\s*\\)`, 'gi');

interface Statement {
  sql: string;
  /** The table a DDL statement works on, when it names one. */
  table?: string;
}

/** SQL of `up` only (a `down` may undo anything its `up` made). */
const upOf = (text: string): string => text.slice(text.indexOf('async up('), text.indexOf('async down(') > 0 ? text.indexOf('async down(') : undefined);

/**
 * The statements of an `up`: each `q.query(…)` call and each createIndexConcurrently (a CONCURRENTLY build), with
 * function bodies removed (a plpgsql body runs later, per row or statement, not in the migration; a `DO` block runs
 * now and is kept).
 */
function statementsOf(up: string): Statement[] {
  // a function's body ($$ … $$ or $tag$ … $tag$) runs when the function is called, not when the migration runs
  const noBodies = up.replace(/(FUNCTION[\s\S]*?\bAS\s*)\$(\w*)\$[\s\S]*?\$\2\$/gi, '$1$$$$ $$$$');
  return noBodies
    .split(/(?=\bq\.query\(|\bcreateIndexConcurrently\()/)
    .slice(1)
    .map((chunk) => {
      const sql = chunk.startsWith('createIndexConcurrently(')
        ? `CREATE INDEX CONCURRENTLY ${chunk.replace(/^createIndexConcurrently\(\s*q\s*,\s*/, '')}`
        : chunk;
      const table =
        /CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?[\w'",\s]*?\bON\s+(?:ONLY\s+)?(\w+)/i.exec(sql)?.[1] ??
        /ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?(\w+)/i.exec(sql)?.[1] ??
        /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/i.exec(sql)?.[1];
      return { sql, table };
    });
}

/** What a migration's `up` does that the rule forbids (empty: it follows the rule). */
function violations(text: string): string[] {
  const up = upOf(text);
  const contract = /expand-contract:\s*contract/.test(text);
  const batched = /batched-backfill:/.test(text) && /transaction\s*=\s*false/.test(text);
  const created = new Set([...up.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/gi)].map((m) => m[1]!.toLowerCase()));
  const found: string[] = [];
  for (const s of statementsOf(up)) {
    const onNewTable = s.table !== undefined && created.has(s.table.toLowerCase());
    for (const [re, why] of FORBIDDEN) {
      if (!re.test(s.sql)) continue;
      if (contract && why.startsWith('dropping')) continue;
      if (onNewTable) continue; // an index, a constraint, a column on a table this migration made: it is empty
      found.push(why);
    }
    const sql = s.sql.replace(LOOKUP, '(lookup)');
    for (const [re, why] of SCANS) {
      if (!re.test(sql)) continue;
      // a keyset batch of a `batched-backfill:` migration (transaction = false: each batch commits on its own)
      if (batched && /\bid\s*>[\s\S]*?\bid\s*<=/.test(sql)) continue;
      found.push(why);
    }
  }
  return [...new Set(found)];
}

const lateMigrations = readdirSync(DIR)
  .filter((f) => /^\d{13}-.*\.ts$/.test(f) && Number(f.slice(0, 13)) >= ADOPTED)
  .map((f) => ({ file: f, text: readFileSync(path.join(DIR, f), 'utf8') }));

const migration = (up: string, extra = ''): string =>
  `export class X { ${extra} async up(q) { ${up} } async down(q) { await q.query(\`DROP TABLE tasks\`); } }`;

describe('migrations follow expand/contract', () => {
  it('finds the migrations written under the rule', () => {
    expect(lateMigrations.map((m) => m.file)).toEqual(expect.arrayContaining(['1765100000000-sweep-keyset-indexes.ts', '1765100100000-ledger-totals.ts']));
  });

  it.each(lateMigrations.map((m) => [m.file, m.text] as const))('%s takes no long lock, rewrites no table and scans no large one', (file, text) => {
    expect({ file, found: violations(text) }).toEqual({ file, found: [] });
    const up = upOf(text);
    if (/CONCURRENTLY|batched-backfill:/i.test(up + text))
      expect({ file, transaction: /transaction\s*=\s*false/.test(text) }).toEqual({ file, transaction: true });
  });

  it('catches a table rewrite and a plain index build', () => {
    const bad = migration(
      "await q.query('ALTER TABLE tasks ADD COLUMN s jsonb GENERATED ALWAYS AS (request) STORED'); await q.query('CREATE INDEX x ON tasks (model)');",
    );
    expect(violations(bad)).toHaveLength(2);
  });

  it('catches the one-transaction ledger-totals backfill (a trigger, then the whole ledger read under its lock)', () => {
    // the shape 1765100100000 had until issue 38: CREATE TABLE in the same migration no longer excuses the rest
    const before = migration(`
      await q.query(\`CREATE TABLE ledger_totals (kind text NOT NULL, shard integer NOT NULL, PRIMARY KEY (kind, shard))\`);
      await q.query(\`CREATE TRIGGER ledger_totals_add AFTER INSERT ON ledger_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_totals_add()\`);
      await q.query(\`INSERT INTO ledger_totals (kind, shard, total, entries) SELECT kind, 0, sum(amount), count(*) FROM ledger_entries GROUP BY kind\`);`);
    expect(violations(before)).toEqual([expect.stringMatching(/^a read of a large table/)]);
  });

  it('catches a NOT NULL column with a backfill, a CHECK validated at once and a plain index on a large table', () => {
    const bad = migration(`
      await q.query(\`ALTER TABLE tasks ADD COLUMN region text NOT NULL\`);
      await q.query(\`UPDATE tasks SET region = 'eu'\`);
      await q.query(\`ALTER TABLE ledger_entries ADD CONSTRAINT amount_small CHECK (amount < 1000000)\`);
      await q.query(\`CREATE UNIQUE INDEX tasks_region_idx ON tasks (region, id)\`);
      await q.query(\`ALTER TABLE tasks ADD COLUMN seen_at timestamptz DEFAULT now()\`);`);
    expect(violations(bad).map((w) => w.split(' (')[0]!.split(':')[0])).toEqual([
      'a NOT NULL column without a default',
      'a backfill UPDATE of a large table',
      'a constraint validated under lock',
      'CREATE INDEX without CONCURRENTLY',
      'a column with a volatile default',
    ]);
  });

  it('lets through what is free: DDL on a table the migration creates, a constant default, a function body, a keyset batch', () => {
    const ok = migration(
      `
      await q.query(\`CREATE TABLE t_new (id bigint PRIMARY KEY, v text NOT NULL)\`);
      await q.query(\`CREATE INDEX t_new_v_idx ON t_new (v)\`);
      await q.query(\`ALTER TABLE channels ADD COLUMN IF NOT EXISTS settings jsonb NOT NULL DEFAULT '{}'::jsonb\`);
      await q.query(\`CREATE OR REPLACE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 1 FROM ledger_archive WHERE id = OLD.id; RETURN OLD; END $$\`);
      await q.query(\`INSERT INTO t_new SELECT COALESCE((SELECT max(id) FROM ledger_entries), 0), 'mark'\`);
      // batched-backfill: keyset batches
      await q.query(\`INSERT INTO t_new SELECT id, kind FROM ledger_entries l WHERE l.id > $1 AND l.id <= $2\`);`,
      'transaction = false;',
    );
    expect(violations(ok)).toEqual([]);
    // the same keyset batch without the declaration (one transaction for the whole migration) is refused
    expect(violations(ok.replace('transaction = false;', ''))).toEqual([expect.stringMatching(/^a read of a large table/)]);
  });
});
