/**
 * The package builds with tsc into ESM + declarations, and the built entry loads in plain Node (no loader, no
 * @gmg/* import, nothing from node_modules): what a consumer of the published package gets.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const PKG = path.resolve(__dirname, '..');
const TSC = path.resolve(PKG, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');

describe('sdk build (tsc → dist, ESM + types)', () => {
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(path.join(os.tmpdir(), 'gmg-sdk-dist-'));
    execFileSync(process.execPath, [TSC, '-p', path.join(PKG, 'tsconfig.build.json'), '--outDir', out], { stdio: 'pipe' });
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('emits the files package.json exports name', () => {
    const pkg = JSON.parse(readFileSync(path.join(PKG, 'package.json'), 'utf8')) as {
      type: string;
      exports: { '.': { types: string; import: string } };
      dependencies?: unknown;
    };
    expect(pkg.type).toBe('module');
    expect(pkg.dependencies).toBeUndefined();
    const files = readdirSync(out);
    expect(files).toEqual(expect.arrayContaining([path.basename(pkg.exports['.'].import), path.basename(pkg.exports['.'].types)]));
    expect(readdirSync(out, { recursive: true }).some((f) => String(f).endsWith('.test.js'))).toBe(false);
  });

  it('loads as ESM in plain Node and exports the client, the errors and the generated paths', () => {
    const entry = pathToFileURL(path.join(out, 'index.js')).href;
    const script = `const m = await import(${JSON.stringify(entry)}); console.log(JSON.stringify({ keys: Object.keys(m).sort(), upscale: m.ARTGEN_PATHS.upscale, client: typeof new m.GatewayClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' }).images.generate }));`;
    const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: os.tmpdir(), encoding: 'utf8' });
    const result = JSON.parse(printed) as { keys: string[]; upscale: string; client: string };
    expect(result.keys).toEqual(
      expect.arrayContaining(['GatewayClient', 'GatewayError', 'InvalidRequestError', 'RateLimitError', 'TaskFailedError', 'waitForTask', 'ARTGEN_PATHS']),
    );
    expect(result.upscale).toBe('/v1/artgen/generations/upscale');
    expect(result.client).toBe('function');
  });
});
