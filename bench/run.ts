/**
 * `npm run bench` runs the edge against its own ceiling (bench/ceiling.bench.ts: a minimal server doing the same
 * essential work and the gateway in the same run, printing the ratios) and then the task benchmark
 * (bench/submit-and-poll.bench.ts), one after the other. One by name:
 * `npm run bench -- ceiling | tasks | messages | large-bodies | billing | worker | usage` — the messages pass-through
 * (bench/messages.bench.ts); 60 submits of 10 MB bodies with the workers' memory sampled
 * (bench/large-bodies.bench.ts); one billing process settling a backlog of terminal tasks (bench/billing.bench.ts);
 * one worker-image process tracking N in-flight tasks that never finish upstream (bench/worker.bench.ts);
 * `usage`: GET /api/usage on a database of 1 million tasks (bench/usage.bench.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';

const BENCHES: Record<string, () => Promise<unknown>> = {
  ceiling: () => import('./ceiling.bench'),
  tasks: () => import('./submit-and-poll.bench'),
  messages: () => import('./messages.bench'),
  'large-bodies': () => import('./large-bodies.bench'),
  billing: () => import('./billing.bench'),
  worker: () => import('./worker.bench'),
  usage: () => import('./usage.bench'),
};
/** `npm run bench` with no name. */
const DEFAULT = ['ceiling', 'tasks'];

const which = process.argv[2];
if (which !== undefined && !BENCHES[which]) {
  console.error(`unknown benchmark '${which}': use one of ${Object.keys(BENCHES).join(', ')} (none: ${DEFAULT.join(' then ')})`);
  process.exit(2);
}

// The services run as production runs them: their bundles (scripts/build.mjs) with SERVICE_NODE_FLAGS, built here
// first. BENCH_RUNTIME=tsx runs the TypeScript sources through tsx instead (to compare the two).
if (process.env.BENCH_RUNTIME !== 'tsx' && !process.env.GMG_SERVICE_RUNTIME) {
  process.stdout.write(execFileSync(process.execPath, [path.join(__dirname, '..', 'scripts', 'build.mjs')], { encoding: 'utf8' }));
  process.env.GMG_SERVICE_RUNTIME = 'dist';
}

if (which) void BENCHES[which]();
else {
  // Each in its own process (a bench ends its process when done), one after the other; the first failure stops.
  for (const name of DEFAULT) {
    console.log(`\n=== npm run bench -- ${name}`);
    const r = spawnSync(process.execPath, [...process.execArgv, __filename, name], { stdio: 'inherit', env: process.env });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}
