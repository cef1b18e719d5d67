#!/usr/bin/env bash
# Installs dependencies (scripts/npm-install.sh: npm ci, run on the project's Node from scripts/ensure-node.sh) when
# node_modules is missing or older than package-lock.json, then makes sure the project's Node comes first for the npm
# scripts; a fast no-op otherwise.
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
# The install runs on the project's one Node (.node-version) too: npm checks package.json "engines" against the node
# it runs on, and on a machine with an older one it would warn (EBADENGINE) about the very install that fixes it.
node_dir=$(bash scripts/ensure-node.sh)
# Serialize with any other npm install in this checkout (shared working copy).
if command -v flock >/dev/null 2>&1; then
  PATH="$node_dir:$PATH" flock /tmp/gmg-npm.lock bash scripts/npm-install.sh
else
  PATH="$node_dir:$PATH" bash scripts/npm-install.sh
fi
# The project's Node first on the npm scripts' PATH (an install empties node_modules/.bin: link it again).
bash scripts/ensure-node.sh >/dev/null
