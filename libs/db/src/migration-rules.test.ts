import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * The expand/contract rule (docs/operations.md, "Upgrading: migrations"), checked on every migration written since
 * it was adopted: a migration runs while the previous release's pods still serve, on tables that may hold years of
 * rows, so it never rewrites or scans-under-lock a table that already exists.
 */
const ADOPTED = 1765100000000;
const DIR = path.join(__dirname, 'migrations');

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
    /DROP\s+COLUMN|RENAME\s+(COLUMN|TO)/i,
    'dropping or renaming what the previous release still reads: only in a contract migration one release later (say so with an "expand-contract: contract" comment)',
  ],
];

const lateMigrations = readdirSync(DIR)
  .filter((f) => /^\d{13}-.*\.ts$/.test(f) && Number(f.slice(0, 13)) >= ADOPTED)
  .map((f) => ({ file: f, text: readFileSync(path.join(DIR, f), 'utf8') }));

/** SQL of `up` only (a `down` may undo anything its `up` made). */
const upOf = (text: string): string => text.slice(text.indexOf('async up('), text.indexOf('async down(') > 0 ? text.indexOf('async down(') : undefined);

describe('migrations follow expand/contract', () => {
  it('finds the migrations written under the rule', () => {
    expect(lateMigrations.map((m) => m.file)).toEqual(expect.arrayContaining(['1765100000000-sweep-keyset-indexes.ts']));
  });

  it.each(lateMigrations.map((m) => [m.file, m.text] as const))('%s takes no long lock and rewrites no table', (file, text) => {
    const up = upOf(text);
    const contract = /expand-contract:\s*contract/.test(text);
    const found = FORBIDDEN.filter(([re, why]) => re.test(up) && !(contract && why.startsWith('dropping'))).map(([, why]) => why);
    // CREATE TABLE's own constraints and indexes on a table made in the same migration are fine: it is empty.
    const onNewTable = /CREATE\s+TABLE/i.test(up) && !/ALTER\s+TABLE/i.test(up);
    expect({ file, found: onNewTable ? found.filter((w) => !w.startsWith('a constraint') && !w.startsWith('CREATE INDEX')) : found }).toEqual({
      file,
      found: [],
    });
    if (/CONCURRENTLY/i.test(up)) expect({ file, transaction: /transaction\s*=\s*false/.test(text) }).toEqual({ file, transaction: true });
  });

  it('catches what the rule forbids (a table rewrite, a plain index build)', () => {
    const bad = `async up(q) { await q.query('ALTER TABLE tasks ADD COLUMN s jsonb GENERATED ALWAYS AS (request) STORED'); await q.query('CREATE INDEX x ON tasks (model)'); }`;
    expect(FORBIDDEN.filter(([re]) => re.test(upOf(bad))).length).toBe(2);
  });
});
