/**
 * Sums a V8 CPU profile (`node --cpu-prof`, e.g. from `BENCH_CPU_PROF=<dir> npm run bench -- ceiling`) by self
 * time: per package (node_modules/<pkg>, node: internals, the project's libs/services, GC, idle) and per function.
 * Shares are of busy time (idle excluded).
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [top=25] [function name: its callers' stacks]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function packageOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] === 'internal' ? url.slice(14).split('/')[0] : url.slice(5)}`;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const m = /\/(libs|services|bench)\/([^/]+)\//.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}

function main(): void {
  const file = process.argv[2];
  const top = Number(process.argv[3] ?? 25);
  if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
  const prof = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
  const pkg = new Map<string, number>();
  const fns = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)?.callFrame ?? { functionName: '?', url: '', lineNumber: 0 };
    if (functionName === '(idle)' || functionName === '(program)') {
      idle += us;
      continue;
    }
    busy += us;
    const p = packageOf(url, functionName);
    pkg.set(p, (pkg.get(p) ?? 0) + us);
    const f = `${functionName || '(anonymous)'} ${p}${url ? `:${lineNumber + 1}` : ''}`;
    fns.set(f, (fns.get(f) ?? 0) + us);
  }
  const show = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
    }
  };
  const who = process.argv[4];
  if (who) {
    // the self time of `who`, by the chain of its callers (up to 8 frames)
    const parent = new Map<number, number>();
    for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const stacks = new Map<string, number>();
    for (const [id, us] of self) {
      if (byId.get(id)?.callFrame.functionName !== who) continue;
      const chain: string[] = [];
      for (let p = parent.get(id), k = 0; p !== undefined && k < 8; p = parent.get(p), k++) {
        const cf = byId.get(p)?.callFrame;
        if (cf) chain.push(`${cf.functionName || '(anon)'}@${packageOf(cf.url, cf.functionName)}`);
      }
      const key = chain.join(' < ');
      stacks.set(key, (stacks.get(key) ?? 0) + us);
    }
    fns.clear();
    for (const [k, v] of stacks) fns.set(k, v);
  }
  // inclusive: the share of busy samples with the package anywhere on the stack (a middleware's whole cost)
  const parentOf = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const fn = byId.get(id)?.callFrame.functionName;
    if (fn === '(idle)' || fn === '(program)' || fn === '(garbage collector)') continue;
    const seen = new Set<string>();
    for (let p: number | undefined = id, k = 0; p !== undefined && k < 500; p = parentOf.get(p), k++) {
      const cf = byId.get(p)?.callFrame;
      if (cf?.url) seen.add(packageOf(cf.url, cf.functionName));
    }
    for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + us);
  }
  console.log(`${file}: busy ${(busy / 1e3).toFixed(0)} ms, idle/program ${(idle / 1e3).toFixed(0)} ms`);
  show('self time by package (share of busy time)', pkg);
  show('self time by function', fns);
  show('inclusive time by package (package anywhere on the stack)', inclusive);
}

main();
