#!/usr/bin/env bash
# The locked install: `npm ci`. The registry this machine reaches lacks some other platforms' optional binaries
# (e.g. @swc/core-darwin-arm64); scripts/prune-lock.mjs keeps the lock free of them so `npm ci` accepts it (run it
# after any `npm install` that changes the lock). Safety net, only when npm ci still refuses the lock as "not in
# sync": `npm install --no-save` installs the same locked versions without rewriting package.json or the lock.
# Any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if npm ci --no-audit --no-fund 2>&1 | tee "$log"; then
  exit 0
fi
if grep -q "can only install packages when your package.json and package-lock.json" "$log"; then
  echo "npm-install: npm ci refused the lock (see above); installing the locked versions with npm install --no-save" >&2
  npm install --no-audit --no-fund --no-save
  exit 0
fi
exit 1
