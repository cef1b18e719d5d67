#!/usr/bin/env bash
# The browser the browser tests drive (test/e2e/playground.e2e.test.ts, test/docs/docs-page.e2e.test.ts through
# libs/testing/src/browser.ts): Debian's Chromium, installed when it is missing. One set-up step, run by both
# `npm test` (scripts/test.sh) and CI (.ci/run). CHROMIUM_PATH points the tests at another build.
set -euo pipefail

chromium_bin=${CHROMIUM_PATH:-/usr/bin/chromium}
if [ ! -x "$chromium_bin" ]; then
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    echo "chromium: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable" >&2
    exit 1
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium: $chromium_bin is missing; install Debian's package (sudo apt-get install chromium) or set CHROMIUM_PATH" >&2
    exit 1
  fi
  echo "chromium: installing Debian's package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi
echo "chromium: $("$chromium_bin" --version 2>/dev/null || echo "not runnable at $chromium_bin")"
