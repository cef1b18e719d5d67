#!/usr/bin/env node
/**
 * `npm run build`: one CommonJS bundle per service, `dist/services/<name>/main.js` (+ `.js.map`), and one per one-shot
 * script the image runs, `dist/scripts/migrate.js` (the migration Job, the `wait-for-schema` init containers, the
 * compose `migrate` one-shot) and `dist/scripts/admin.js` (the operator CLI), built by esbuild (the compiler tsx
 * already uses, so the emitted code is what the tests run under tsx). The workspace libs are bundled in; npm packages
 * stay external (`require`d from node_modules at run time, native addons included).
 *
 * Why: production, `npm start` and the benchmarks run these bundles with plain `node`, not the tsx loader: no
 * TypeScript compiled at start-up, ~40 MiB less resident memory per process and a faster start
 * (docs/benchmarks.md, "Compiled build"); and the image needs neither tsx nor esbuild, which are development
 * dependencies. The tests still run the sources through tsx (and `npm run migrate` / `npm run admin` too).
 * The migrations are imported by name in libs/db/src/data-source.ts (no glob of .ts files at run time), so they are
 * bundled into dist/scripts/migrate.js like any other module.
 *
 * `__dirname`: a bundle has one directory, its sources had many. The few modules that read files next to
 * themselves (the OpenAPI YAML, the docs page, the playground) get their own source directory back: a module that
 * mentions `__dirname` is compiled with it replaced by a local constant = <repo root>/<its source dir>, so the same
 * `path.join(__dirname, …)` finds the same file in the image (which ships libs/ and services/) and in a checkout.
 *
 * The web console (packages/console, a browser bundle with its own esbuild settings: packages/console/build.mjs) is
 * built too when no name is given, or with the name `console`: packages/console/dist/, which the edge serves at /console.
 *
 *   node scripts/build.mjs [name …]      (default: every services/<name>/src/main.ts, the scripts migrate, admin, and the console)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { buildConsole } from '../packages/console/build.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'dist');

/** The one-shot scripts bundled beside the services: scripts/<name>.ts → dist/scripts/<name>.js. */
const SCRIPTS = ['migrate', 'admin'];

/** Every service with a main.ts and every script of SCRIPTS, or the ones named on the command line. */
function targets(argv) {
  const all = readdirSync(path.join(ROOT, 'services')).filter((n) => existsSync(path.join(ROOT, 'services', n, 'src', 'main.ts')));
  if (!argv.length) return { services: all, scripts: SCRIPTS };
  const unknown = argv.filter((n) => !all.includes(n) && !SCRIPTS.includes(n));
  if (unknown.length) {
    throw new Error(`build: no services/<name>/src/main.ts or bundled script for ${unknown.join(', ')} (known: ${[...all, ...SCRIPTS].join(', ')})`);
  }
  return { services: argv.filter((n) => all.includes(n)), scripts: argv.filter((n) => SCRIPTS.includes(n)) };
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

/**
 * One esbuild run: `entryPoints` (out name → source) written under dist/, each bundle `depth` directories below the
 * repository (or image) root, which the banner's `__gmgRoot` climbs back to.
 */
function bundle(entryPoints, depth) {
  return esbuild.build({
    entryPoints,
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
    // emitted under its own name (test/infra/build.e2e.test.ts checks it, in a service and in the migrate bundle).
    keepNames: false,
    // Whitespace and comments out (names and syntax kept; stack traces map through the source map): V8 keeps the
    // source of every loaded script for lazy compiling — the edge's was 0.88 MB, held as 1.7 MiB because its comments
    // had non-ASCII characters (test/infra/build.e2e.test.ts keeps every bundle ASCII).
    minifyWhitespace: true,
    // Source maps (SERVICE_NODE_FLAGS' --enable-source-maps) for the bundle's own code only: the flag has already read
    // this bundle's map when the banner runs, and from here on no package's map is read — `--enable-source-maps`
    // alone reads the map of every module loaded from node_modules and keeps it (typeorm's carry its TypeScript
    // sources): 13 MiB of the edge's resident set at start-up, for stack frames inside libraries (docs/benchmarks.md).
    banner: {
      js:
        `const __gmgRoot = require('node:path').resolve(__dirname${", '..'".repeat(depth)}); ` +
        `if (process.sourceMapsEnabled) require('node:module').setSourceMapsSupport(true, { nodeModules: false, generatedCode: false });`,
    },
    plugins: [sourceDirname],
    logLevel: 'warning',
  });
}

export async function build(names = []) {
  const withConsole = !names.length || names.includes('console');
  const others = names.filter((n) => n !== 'console');
  // `console` alone builds only the console; otherwise the named (or every) service and script
  const { services, scripts } = names.length && !others.length ? { services: [], scripts: [] } : targets(others);
  const started = Date.now();
  await Promise.all([
    withConsole && buildConsole(),
    // dist/services/<name>/main.js → the root is three levels up
    services.length && bundle(Object.fromEntries(services.map((n) => [`services/${n}/main`, path.join(ROOT, 'services', n, 'src', 'main.ts')])), 3),
    // dist/scripts/<name>.js → two levels up
    scripts.length && bundle(Object.fromEntries(scripts.map((n) => [`scripts/${n}`, path.join(ROOT, 'scripts', `${n}.ts`)])), 2),
  ]);
  return { services, scripts, console: withConsole, ms: Date.now() - started };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  build(process.argv.slice(2)).then(
    (r) => {
      const parts = [
        r.services.length && `${r.services.length} service bundle(s) in dist/services/ (${r.services.join(', ')})`,
        r.scripts.length && `${r.scripts.length} script bundle(s) in dist/scripts/ (${r.scripts.join(', ')})`,
        r.console && 'the console in packages/console/dist/',
      ];
      console.log(`build: ${parts.filter(Boolean).join(', ')} in ${r.ms} ms`);
    },
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
