#!/usr/bin/env bash
# Chats with Remora nodes of the demo sample against a real local model
# (DEMO_MODEL=0.5b|1.5b, fetched by scripts/setup-model.sh) and reports how
# many requests ended in a proposal or a message to another node.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
nvim="$("$here/scripts/install-nvim.sh")"
. "$here/scripts/model-server.sh"
start_model_server "${DEMO_MODEL:-1.5b}" "${DEMO_PORT:-8090}"
project="$(sample_project)"
cd "$project"
timeout 1800 "$nvim" --headless --clean -l "$here/scripts/demo/remora_chat.lua"
rm -rf "$project"
