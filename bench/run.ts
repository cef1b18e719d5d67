/**
 * `npm run bench` runs the task benchmark (bench/submit-and-poll.bench.ts); `npm run bench -- messages` the
 * messages pass-through benchmark (bench/messages.bench.ts); `npm run bench -- large-bodies` 60 submits of 10 MB
 * bodies with the workers' memory sampled (bench/large-bodies.bench.ts); `npm run bench -- ceiling` the edge against a
 * minimal server doing the same essential work (bench/ceiling.bench.ts); `npm run bench -- billing` one billing
 * process settling a backlog of terminal tasks (bench/billing.bench.ts); `npm run bench -- worker` one worker-image
 * process tracking N in-flight tasks that never finish upstream (bench/worker.bench.ts).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

// The services run as production runs them: their bundles (scripts/build.mjs) with SERVICE_NODE_FLAGS, built here
// first. BENCH_RUNTIME=tsx runs the TypeScript sources through tsx instead (to compare the two).
if (process.env.BENCH_RUNTIME !== 'tsx') {
  process.stdout.write(execFileSync(process.execPath, [path.join(__dirname, '..', 'scripts', 'build.mjs')], { encoding: 'utf8' }));
  process.env.GMG_SERVICE_RUNTIME = 'dist';
}

const which = process.argv[2] ?? 'tasks';
if (which === 'messages') void import('./messages.bench');
else if (which === 'tasks') void import('./submit-and-poll.bench');
else if (which === 'large-bodies') void import('./large-bodies.bench');
else if (which === 'ceiling') void import('./ceiling.bench');
else if (which === 'billing') void import('./billing.bench');
else if (which === 'worker') void import('./worker.bench');
else {
  console.error(`unknown benchmark '${which}': use 'tasks' (default), 'messages', 'large-bodies', 'ceiling', 'billing' or 'worker'`);
  process.exit(2);
}
