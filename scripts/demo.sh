#!/usr/bin/env bash
# `make demo`: build, start a real local model (Qwen2.5-Coder via llama.cpp's
# server from PyPI), and open Neovim on a sample project with a task ready.
# HEADLESS=1 runs the same scenario without a UI and prints the result.
# DEMO_MODEL=0.5b|1.5b (default 1.5b), DEMO_PORT (default 8087).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
nvim="$(scripts/install-nvim.sh)"
[ -f lua/chimera_native.so ] && [ "${DEMO_REBUILD:-1}" = 0 ] || scripts/build.sh
model="$(scripts/setup-model.sh "${DEMO_MODEL:-1.5b}")"
port="${DEMO_PORT:-8087}"
log="$here/.deps/llm-server.log"
python3 scripts/llm_server.py "$model" --port "$port" > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
echo "demo: starting the model server (log: $log)" >&2
for _ in $(seq 1 600); do
  grep -q "^ready" "$log" 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "demo: the model server died:" >&2; tail -20 "$log" >&2; exit 1; }
  sleep 0.5
done
project="$here/.deps/demo-project"
rm -rf "$project"
mkdir -p "$project/.git"
cp -r scripts/demo/sample/. "$project/"
cd "$project"
export CHIMERA_REPO="$here" CHIMERA_DEMO_URL="http://127.0.0.1:$port/v1"
if [ "${HEADLESS:-0}" = 1 ]; then
  "$nvim" --headless --clean -l "$here/scripts/demo/headless.lua"
else
  "$nvim" --clean -u "$here/scripts/demo/init.lua"
fi
