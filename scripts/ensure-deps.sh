#!/usr/bin/env bash
# Installs dependencies (scripts/npm-install.sh: npm ci) when node_modules is missing or older than
# package-lock.json, then makes sure the project's Node comes first for the npm scripts (scripts/ensure-node.sh);
# a fast no-op otherwise.
# npm writes node_modules/.package-lock.json on every install, so its mtime tells when node_modules last matched.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=node_modules/.package-lock.json
if [ -d node_modules ] && [ -f "$stamp" ] && ! [ package-lock.json -nt "$stamp" ]; then
  bash scripts/ensure-node.sh >/dev/null
  exit 0
fi

if [ ! -d node_modules ]; then
  echo "ensure-deps: node_modules is missing; installing" >&2
else
  echo "ensure-deps: package-lock.json is newer than node_modules; installing" >&2
fi
# Serialize with any other npm install in this checkout (shared working copy).
if command -v flock >/dev/null 2>&1; then
  flock /tmp/gmg-npm.lock bash scripts/npm-install.sh
else
  bash scripts/npm-install.sh
fi
# The project's one Node (.node-version) first on the npm scripts' PATH (an install empties node_modules/.bin).
bash scripts/ensure-node.sh >/dev/null
