import path from 'node:path';

/**
 * How a service process runs outside the tests: its esbuild bundle (`npm run build`, scripts/build.mjs →
 * dist/services/<name>/main.js) under plain node with these flags — the Dockerfile's NODE_OPTIONS, `npm start` and
 * the benchmarks all use them (test/infra/build.e2e.test.ts holds the Dockerfile to the same list).
 *
 * - `--enable-source-maps`: stack traces in logs name the TypeScript file and line. Each bundle narrows it to its own
 *   code as it starts (scripts/build.mjs's banner): the flag alone also reads and keeps the source map of every
 *   package loaded from node_modules, 13 MiB of the edge's resident set (docs/benchmarks.md, "Compiled build").
 * - `--max-old-space-size=192`: the V8 heap budget. Without it V8 sizes the heap from the host's memory (not the
 *   container's) and lets it grow lazily under load: the edge reached 333 MiB resident under the ceiling bench with
 *   a live set well under 96 MiB, and 177 MiB with this budget at the same throughput (docs/benchmarks.md,
 *   "Compiled build"). A Deployment that needs more heap sets its own NODE_OPTIONS.
 * - `--max-semi-space-size=8`: the young generation's bound (two semi-spaces of 8 MiB). Node 24 sizes it from the
 *   host's memory: 128 MiB committed on a 24 GiB host put the edge at 290 MiB resident before any load; 16 MiB (Node
 *   20's default) at 211 MiB, and start-up alone grows it to its bound (the edge's heap is ~42 MiB live, nearly all
 *   surviving the scavenges of start-up), so the bound is paid before the first request: 8 MiB put the edge at
 *   123–129 MiB after start-up against 141–148 with 16, with the same requests and CPU per request under the ceiling
 *   load in one run (A/B of the flag alone, docs/benchmarks.md "Compiled build"; issue 39's ≤ 150 MB).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = Object.freeze(['--enable-source-maps', '--max-old-space-size=192', '--max-semi-space-size=8']);

/** dist/services/<name>/main.js under `root` (the repository, or /app in the image). */
export const serviceBundlePath = (root: string, service: string): string => path.join(root, 'dist', 'services', service, 'main.js');

/**
 * The node arguments that run `service`: the bundle with SERVICE_NODE_FLAGS (`dist`), or its TypeScript source
 * through the in-process tsx loader (`tsx`: the tests, which run what is checked out without a build step).
 */
export function serviceNodeArgs(root: string, service: string, runtime: 'dist' | 'tsx'): string[] {
  return runtime === 'dist'
    ? [...SERVICE_NODE_FLAGS, serviceBundlePath(root, service)]
    : ['--import', 'tsx', path.join(root, 'services', service, 'src', 'main.ts')];
}
