#!/usr/bin/env node
/**
 * Builds the console (src/main.tsx) into dist/: `index.html` plus content-hashed `assets/main-<hash>.js` and `.css`
 * (the edge serves them long-cached; index.html is `no-cache`). No inline script or style anywhere: the console's CSP
 * is `script-src 'self'; style-src 'self'` (docs/console.md). `npm run build` (scripts/build.mjs) calls this too.
 * The stylesheet's id: React Aria's press handling (react-aria usePress) adds one <style> of its own to <head> unless an
 * element with the id `react-aria-pressable-style` is already there; the CSP would refuse that inline style, so the
 * console's stylesheet carries the id and the same rule (src/console.css). test/e2e/console.e2e.test.ts fails on any
 * CSP violation, so a React Aria release that changes this is caught.
 *
 *   node packages/console/build.mjs
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const CONSOLE_DIST = path.join(HERE, 'dist');
/** Where the edge mounts the app (services/api-edge: the /console static mount). */
const BASE = '/console/';

export async function buildConsole() {
  const started = Date.now();
  rmSync(CONSOLE_DIST, { recursive: true, force: true });
  mkdirSync(path.join(CONSOLE_DIST, 'assets'), { recursive: true });
  const result = await esbuild.build({
    entryPoints: [path.join(HERE, 'src', 'main.tsx')],
    outdir: path.join(CONSOLE_DIST, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    tsconfig: path.join(HERE, '..', '..', 'tsconfig.json'),
    sourcemap: 'linked',
    metafile: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((o) => path.basename(o));
  const js = outputs.find((o) => o.endsWith('.js'));
  const css = outputs.find((o) => o.endsWith('.css'));
  if (!js || !css) throw new Error(`console build: expected one .js and one .css output, got ${outputs.join(', ')}`);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Gateway console</title>
<link rel="stylesheet" id="react-aria-pressable-style" href="${BASE}assets/${css}">
<script type="module" src="${BASE}assets/${js}"></script>
</head>
<body>
<div id="root"></div>
<noscript>The console needs JavaScript.</noscript>
</body>
</html>
`;
  writeFileSync(path.join(CONSOLE_DIST, 'index.html'), html);
  return { js, css, ms: Date.now() - started };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildConsole().then(
    (r) => console.log(`console: dist/index.html, assets/${r.js}, assets/${r.css} in ${r.ms} ms`),
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
