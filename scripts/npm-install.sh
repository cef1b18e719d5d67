#!/usr/bin/env bash
# The locked install: `npm ci`. Fallback, only when npm ci refuses the lock as "not in sync" — which happens when
# the registry this machine reaches lacks another platform's optional binaries (e.g. @swc/core-darwin-arm64), so the
# lock can never list them: then `npm install --no-save` installs the same locked versions without rewriting
# package.json or package-lock.json. Any other failure fails.
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
