#!/usr/bin/env bash
# The whole gate: typecheck, lint (type-aware rules + Nx module boundaries), format (prettier), dead code (knip), import cycles, then
# every jest project.
# Extra arguments go straight to a single jest run instead (e.g. `npm test -- libs/db`).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=node_modules/.bin

step() { printf '\n=== %s\n' "$*"; }

step "typecheck (tsc -p tsconfig.json; the console's browser code: tsc -p packages/console)"
"$bin/tsc" -p tsconfig.json
# The console compiles against the DOM library, which the server code must not see (its fetch/Buffer types differ):
# its own program (packages/console/tsconfig.json, referenced from tsconfig.json).
"$bin/tsc" -p packages/console/tsconfig.json
echo "typecheck: ok"

step "lint (eslint: type-aware rules, Nx module boundaries)"
export NX_DAEMON=false NX_NO_CLOUD=true
# The boundary rule reads Nx's project graph and silently skips itself without one: build it first, and fail if
# the rule still reports that it was skipped.
"$bin/nx" show projects >/dev/null
lint_out=$("$bin/eslint" --max-warnings 0 . 2>&1) || { echo "$lint_out" >&2; echo "lint: FAILED" >&2; exit 1; }
if grep -q "rule will be skipped" <<<"$lint_out"; then echo "$lint_out" >&2; echo "lint: the Nx boundary rule did not run" >&2; exit 1; fi
echo "lint: ok"

step "format (prettier --check: .prettierrc.json; npm run format rewrites)"
"$bin/prettier" --check --log-level warn "**/*.{ts,tsx,js,mjs}" || { echo "format: files above differ from prettier's layout; run npm run format" >&2; exit 1; }
echo "format: ok"

step "dead code (knip: unused files, exports, types, dependencies)"
"$bin/knip" --no-progress
echo "knip: ok"

step "import cycles (madge)"
if ! out=$("$bin/madge" --circular --no-spinner --no-color --extensions ts --ts-config tsconfig.json libs services 2>&1); then
  echo "$out" >&2
  echo "import cycles: FOUND (see above); break the cycle (move the shared piece into its own file or lib)" >&2
  exit 1
fi
echo "$out" | tail -n 2

if [ "$#" -gt 0 ]; then
  step "jest $*"
  exec "$bin/jest" "$@"
fi

step "browser (scripts/ensure-browser.sh: the browser tests' Chromium)"
bash scripts/ensure-browser.sh

# 2 cores: unit tests are pure and parallel well; int/e2e tests share one Postgres, one Redis and fixed-time
# upstream simulations, so they run one file at a time to stay deterministic.
# Both runs always happen (one report of everything that is broken); the gate fails if either failed.
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
step "jest: unit (-w 2)"
unit_rc=0
"$bin/jest" --selectProjects unit -w 2 --json --outputFile="$results/unit.json" || unit_rc=$?
step "jest: int + e2e (--runInBand)"
# No --forceExit: every suite closes what it opens (servers, Redis and Postgres clients, timers), so jest exits by
# itself. A suite that leaks a handle makes jest say "Jest did not exit one second after the test run has
# completed"; `node_modules/.bin/jest <file> --runInBand --detectOpenHandles` names what stayed open.
int_rc=0
"$bin/jest" --selectProjects int e2e --runInBand --passWithNoTests --json --outputFile="$results/int.json" || int_rc=$?

# Counts by layer and by module, then one closing line over both runs in the plain "N passed, N failed" form CI
# summaries read.
node scripts/test-counts.mjs "$results/unit.json" "$results/int.json"
if [ "$unit_rc" -ne 0 ] || [ "$int_rc" -ne 0 ]; then
  echo "jest: FAILED (unit exit $unit_rc, int+e2e exit $int_rc)" >&2
  exit 1
fi
