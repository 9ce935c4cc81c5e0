#!/usr/bin/env bash
# The free chat (:Chimera chat --free) against a real local model
# (DEMO_MODEL=0.5b|1.5b): CHAT_ROUNDS rounds of a question and a change
# request; reports how many turns ended as asked.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
nvim="$("$here/scripts/install-nvim.sh")"
model="$("$here/scripts/setup-model.sh" "${DEMO_MODEL:-1.5b}")"
port="${DEMO_PORT:-8091}"
log="$(mktemp)"
python3 "$here/scripts/llm_server.py" "$model" --port "$port" > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q "^ready" "$log" && break; sleep 0.5; done
project="$(mktemp -d)"; mkdir -p "$project/.git"; cp -r "$here/scripts/demo/sample/." "$project/"
cd "$project"
CHAT_MODEL="qwen2.5-coder-${DEMO_MODEL:-1.5b}-instruct" \
CHIMERA_LIB="${CHIMERA_LIB:-$here/target/release/libchimera.so}" CHIMERA_REPO="$here" \
  CHIMERA_DEMO_URL="http://127.0.0.1:$port/v1" timeout 1800 "$nvim" --headless --clean -l "$here/scripts/demo/free_chat.lua"
rm -rf "$project"
