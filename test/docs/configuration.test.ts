/**
 * docs/configuration.md against the one definition of each service's configuration (its schema in libs/config's
 * configLoader): every variable a service reads has its row, and every row names a variable some service reads.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';
import { loadPoolWorkerConfig } from '@gmg/tasks';
import { loadApiEdgeConfig } from '../../services/api-edge/src/config';
import { loadBillingConfig } from '../../services/billing/src/config';
import { loadSimConfig } from '../../services/upstream-sim/src/config';

const services = {
  'api-edge': loadApiEdgeConfig.variables,
  billing: loadBillingConfig.variables,
  workers: loadPoolWorkerConfig.variables,
  'upstream-sim': loadSimConfig.variables,
};

/** The variables of the services table's first column (a row may name several: `A`, `B`); `npm start`'s own follow it. */
const documented = (): Set<string> => {
  const rows = readFileSync(path.join(REPO_ROOT, 'docs/configuration.md'), 'utf8')
    .split('`npm start` only:')[0]!
    .split('\n')
    .filter((l) => /^\| `[A-Z]/.test(l));
  return new Set(rows.flatMap((l) => [...l.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!)));
};

describe('docs/configuration.md', () => {
  it.each(Object.entries(services))('has a row for every variable %s reads', (_service, variables) => {
    const rows = documented();
    expect(variables.filter((v) => !rows.has(v))).toEqual([]);
  });

  it('lists no variable that no service reads', () => {
    // NODE_OPTIONS is node's own (the image's flags), read by no loader
    const read = new Set([...Object.values(services).flat(), 'NODE_OPTIONS']);
    expect([...documented()].filter((v) => !read.has(v))).toEqual([]);
  });
});
