import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';

/**
 * Inserts `line` after the last row of the table whose header line starts with `marker` in docs/benchmarks.md, so
 * each benchmark's rows stay in its own table whatever sections follow it.
 */
export function insertRow(marker: string, line: string): void {
  const file = path.join(REPO_ROOT, 'docs/benchmarks.md');
  const lines = readFileSync(file, 'utf8').split('\n');
  let i = lines.findIndex((l) => l.startsWith(marker));
  if (i < 0) throw new Error(`docs/benchmarks.md has no '${marker}' table`);
  while (i + 1 < lines.length && lines[i + 1].startsWith('|')) i++;
  lines.splice(i + 1, 0, line);
  writeFileSync(file, lines.join('\n'));
}
