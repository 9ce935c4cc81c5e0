#!/usr/bin/env bash
# Installs the real opencode (npm `opencode-ai`, a pinned version) into
# .deps/opencode for the ACP scenarios, and prints the path of its command.
# Needs node and npm (Debian's `nodejs` and `npm`) and npm's registry once.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/opencode"
bin="$dest/node_modules/.bin/opencode"
version="1.18.33"
if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qx "$version"; then
  if ! command -v npm >/dev/null; then
    (apt-get update && apt-get install -y nodejs npm) >&2
  fi
  mkdir -p "$dest"
  (cd "$dest" && npm install --no-audit --no-fund --silent "opencode-ai@$version" >&2)
fi
"$bin" --version >/dev/null
echo "$bin"
