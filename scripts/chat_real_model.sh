#!/usr/bin/env bash
# The free chat (:Chimera chat --free) against a real local model
# (DEMO_MODEL=0.5b|1.5b): CHAT_ROUNDS rounds of a question and a change
# request; reports how many turns ended as asked.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
nvim="$("$here/scripts/install-nvim.sh")"
. "$here/scripts/model-server.sh"
start_model_server "${DEMO_MODEL:-1.5b}" "${DEMO_PORT:-8091}"
project="$(sample_project)"
cd "$project"
timeout 1800 "$nvim" --headless --clean -l "$here/scripts/demo/free_chat.lua"
rm -rf "$project"
