#!/usr/bin/env bash
# The locked install, and the only one: `npm ci` (CI, the Dockerfile and developers alike). There is no fallback
# to `npm install`: an install that ignores the lock could bring versions nobody reviewed. If npm ci refuses the
# lock as "not in sync", the lock is wrong: run `node scripts/prune-lock.mjs` (the registry this machine reaches
# lacks other platforms' optional binaries, e.g. @swc/core-darwin-arm64) and commit the lock.
#
# Install scripts: .npmrc sets ignore-scripts=true, so no dependency runs one during `npm ci`. Afterwards this runs
# the scripts of the packages in package.json "allowScripts" (true), and of no other, with an explicit rebuild.
# Listed today: the embedded Postgres binaries (hydrate their library symlinks) and the ffmpeg binary (chmod +x).
# sharp, esbuild, @swc/core, nx and msgpackr-extract ship prebuilt binaries as optional packages and work without
# theirs (checked by test/infra/npm-install.int.test.ts).
#
# Extra arguments go to npm ci (the Dockerfile passes --omit=dev and workspace filters).
set -euo pipefail
cd "$(dirname "$0")/.."

npm ci --no-audit --no-fund "$@"

mapfile -t allowed < <(node -e '
  const fs = require("fs");
  const allow = require("./package.json").allowScripts ?? {};
  for (const [name, ok] of Object.entries(allow)) {
    // "name" or "name@version": only installed packages (a production install omits dev-only ones)
    const pkg = name.replace(/(?<=.)@[^/]*$/, "");
    if (ok === true && fs.existsSync(`node_modules/${pkg}/package.json`)) console.log(pkg);
  }')
if [ "${#allowed[@]}" -gt 0 ]; then
  echo "npm-install: running the install scripts of: ${allowed[*]}"
  npm rebuild --ignore-scripts=false --no-audit --no-fund "${allowed[@]}"
fi
