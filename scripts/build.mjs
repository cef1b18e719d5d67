#!/usr/bin/env node
/**
 * `npm run build`: one CommonJS bundle per service, `dist/services/<name>/main.js` (+ `.js.map`), built by esbuild
 * (the compiler tsx already uses, so the emitted code is what the tests run under tsx). The workspace libs are
 * bundled in; npm packages stay external (`require`d from node_modules at run time, native addons included).
 *
 * Why: production, `npm start` and the benchmarks run these bundles with plain `node`, not the tsx loader: no
 * TypeScript compiled at start-up, ~40 MiB less resident memory per process and a faster start
 * (docs/benchmarks.md, "Compiled build"). The tests still run the sources through tsx.
 *
 * `__dirname`: a bundle has one directory, its sources had many. The few modules that read files next to
 * themselves (the OpenAPI YAML, the docs page, the playground) get their own source directory back: a module that
 * mentions `__dirname` is compiled with it replaced by a local constant = <repo root>/<its source dir>, so the same
 * `path.join(__dirname, …)` finds the same file in the image (which ships libs/ and services/) and in a checkout.
 *
 *   node scripts/build.mjs [service …]      (default: every services/<name>/src/main.ts)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'dist');

/** Every service with a main.ts, or the ones named on the command line. */
function services(argv) {
  const all = readdirSync(path.join(ROOT, 'services')).filter((n) => existsSync(path.join(ROOT, 'services', n, 'src', 'main.ts')));
  const wanted = argv.length ? argv : all;
  const unknown = wanted.filter((n) => !all.includes(n));
  if (unknown.length) throw new Error(`build: no services/<name>/src/main.ts for ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return wanted;
}

/** Gives a module that uses `__dirname` its source directory (see the header). */
const sourceDirname = {
  name: 'source-dirname',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      const src = await readFile(args.path, 'utf8');
      if (args.path.includes(`${path.sep}node_modules${path.sep}`) || !/\b__dirname\b/.test(src)) return { contents: src, loader: 'ts' };
      const rel = path.relative(ROOT, path.dirname(args.path)).split(path.sep).join('/');
      // The module's own `__dirname` becomes a module-local constant (esbuild renames each module's copy), prepended
      // on the first source line so the source map's line numbers stay right.
      const body = src.replace(/\b__dirname\b/g, '__gmgSourceDir');
      return { contents: `const __gmgSourceDir = require('node:path').join(__gmgRoot, ${JSON.stringify(rel)}); ${body}`, loader: 'ts' };
    });
  },
};

export async function build(names = []) {
  const list = services(names);
  const started = Date.now();
  await esbuild.build({
    entryPoints: Object.fromEntries(list.map((n) => [`services/${n}/main`, path.join(ROOT, 'services', n, 'src', 'main.ts')])),
    outdir: OUT,
    bundle: true,
    platform: 'node',
    // the project's one Node (.node-version)
    target: `node${readFileSync(path.join(ROOT, '.node-version'), 'utf8').trim().split('.')[0]}`,
    format: 'cjs',
    packages: 'external',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    sourcemap: 'linked',
    // No keepNames: it wraps every function and class the bundle creates in a call that redefines its `name`,
    // closures made per request included — measured 7–9 % more CPU per request on the edge (docs/benchmarks.md).
    // Without it a name stays as written unless esbuild renames a clash (`validate2` in a stack trace); the names
    // that matter keep theirs: error classes set `this.name`, and every TypeORM entity and migration class is
    // emitted under its own name (test/infra/build.e2e.test.ts checks it).
    keepNames: false,
    // dist/services/<name>/main.js → the repository (or image) root is three levels up.
    banner: { js: "const __gmgRoot = require('node:path').resolve(__dirname, '..', '..', '..');" },
    plugins: [sourceDirname],
    logLevel: 'warning',
  });
  return { services: list, ms: Date.now() - started };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  build(process.argv.slice(2)).then(
    (r) => console.log(`build: ${r.services.length} service bundle(s) in dist/services/ (${r.services.join(', ')}) in ${r.ms} ms`),
    (err) => { console.error(err instanceof Error ? err.message : err); process.exit(1); },
  );
}
