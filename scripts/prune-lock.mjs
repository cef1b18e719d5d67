// Drops, from package-lock.json, optional platform dependencies that have no entry in the lock (packages the
// registry we install from does not serve, e.g. other platforms' @swc/core binaries). Without this, `npm ci`
// refuses the lock as "not in sync". Run after `npm install` changes the lock: `node scripts/prune-lock.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const paths = Object.keys(lock.packages);
const has = (dep) => paths.some((p) => p === `node_modules/${dep}` || p.endsWith(`/node_modules/${dep}`));
const pruned = [];
for (const [name, entry] of Object.entries(lock.packages)) {
  for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
    if (!has(dep)) {
      delete entry.optionalDependencies[dep];
      pruned.push(`${name} -> ${dep}`);
    }
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(pruned.length ? `pruned ${pruned.length} unserved optional dependencies:\n  ${pruned.join('\n  ')}` : 'nothing to prune');
