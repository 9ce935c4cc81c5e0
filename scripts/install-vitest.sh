#!/usr/bin/env bash
# Installs Vitest (npm) into .deps/vitest and prints that folder: the tests
# run a JavaScript project's `vitest run` with the project's own
# node_modules, as a user's `npm install -D vitest` leaves them.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/vitest"
if [ ! -f "$dest/node_modules/vitest/package.json" ]; then
  mkdir -p "$dest"
  echo '{"name": "vitest-for-tests", "private": true}' > "$dest/package.json"
  (cd "$dest" && npm install --silent --no-audit --no-fund -D vitest@3.2.7 >&2)
fi
echo "$dest"
