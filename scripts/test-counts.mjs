#!/usr/bin/env node
/**
 * The closing lines of `npm test` (scripts/test.sh): counts of tests by layer (unit `*.test.ts`, integration
 * `*.int.test.ts`, end-to-end `*.e2e.test.ts`) and by module (libs/<name>, services/<name>, packages/<name>,
 * test/<folder>), then one "N passed, N failed, N skipped" line over everything, read from jest's --json reports.
 *
 *   node scripts/test-counts.mjs <report.json> …
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const layerOf = (file) => (file.endsWith('.e2e.test.ts') ? 'e2e' : file.endsWith('.int.test.ts') ? 'int' : 'unit');
/** The last `libs|services|packages|test/<name>` of the path (a report may come from another checkout). */
const moduleOf = (file) =>
  [
    ...file
      .split(path.sep)
      .join('/')
      .matchAll(/(?:^|\/)((?:libs|services|packages|test)\/[^/]+)\//g),
  ].pop()?.[1] ?? 'other';

const empty = () => ({ passed: 0, failed: 0, skipped: 0 });
const byLayer = new Map(['unit', 'int', 'e2e'].map((l) => [l, empty()]));
const byModule = new Map();
const total = empty();
let suiteErrors = 0;
for (const f of process.argv.slice(2)) {
  if (!existsSync(f)) continue;
  const report = JSON.parse(readFileSync(f, 'utf8'));
  suiteErrors += report.numRuntimeErrorTestSuites || 0;
  for (const suite of report.testResults) {
    const mod = moduleOf(suite.name);
    if (!byModule.has(mod)) byModule.set(mod, { unit: empty(), int: empty(), e2e: empty() });
    const cells = [byLayer.get(layerOf(suite.name)), byModule.get(mod)[layerOf(suite.name)], total];
    for (const a of suite.assertionResults) {
      const k = a.status === 'passed' ? 'passed' : a.status === 'failed' ? 'failed' : 'skipped';
      for (const c of cells) c[k]++;
    }
  }
}
/** Tests of a cell (passed + failed + skipped), and how many of them did not pass. */
const cell = (c) => {
  const n = c.passed + c.failed + c.skipped;
  if (n === 0) return '-';
  const not = [c.failed && `${c.failed} failed`, c.skipped && `${c.skipped} skipped`].filter(Boolean).join(', ');
  return not ? `${n} (${not})` : String(n);
};
const pad = (s, n) => String(s).padEnd(n);
console.log('\ntests by layer: ' + [...byLayer].map(([l, c]) => `${l} ${cell(c)}`).join(' · '));
console.log(`\n${pad('module', 24)}${pad('unit', 22)}${pad('int', 22)}e2e`);
for (const [mod, c] of [...byModule].sort(([a], [b]) => a.localeCompare(b))) {
  console.log(`${pad(mod, 24)}${pad(cell(c.unit), 22)}${pad(cell(c.int), 22)}${cell(c.e2e)}`);
}
console.log(`\ntests: ${total.passed} passed, ${total.failed + suiteErrors} failed, ${total.skipped} skipped`);
