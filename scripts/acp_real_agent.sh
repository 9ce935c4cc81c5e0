#!/usr/bin/env bash
# A real ACP agent through Chimera, end to end: opencode (npm `opencode-ai`,
# its `acp` command) pointed at the local llama.cpp server with
# Qwen2.5-Coder (DEMO_MODEL=0.5b|1.5b), given a task by `chimera task
# --agent opencode` on the demo sample. Its reads and writes go through
# Chimera: the project stays untouched, the result is a proposal.
# Prints what the agent did: its state, summary, the proposal's diff and
# its requests from the effect log. Exit 1 when any file of the project
# changed on disk, 2 when the agent proposed nothing (nothing was tested).
# Needs network access to npm once.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/model-server.sh"
oc_bin="$("$here/scripts/install-opencode.sh")"
chimera="${CHIMERA_BIN:-$here/target/release/chimera}"
[ -x "$chimera" ] || { echo "build it first: cargo build --release" >&2; exit 1; }
port="${DEMO_PORT:-8092}"
# The model's own template: its tool calls become `tool_calls`.
LLM_SERVER_ARGS="--jinja" start_model_server "${DEMO_MODEL:-1.5b}" "$port"
project="$(sample_project)"
cat > "$project/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "local": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "llama.cpp",
      "options": { "baseURL": "http://127.0.0.1:$port/v1" },
      "models": { "$CHIMERA_DEMO_MODEL": { "name": "$CHIMERA_DEMO_MODEL" } }
    }
  },
  "model": "local/$CHIMERA_DEMO_MODEL"
}
EOF
mkdir -p "$project/.chimera"
cat > "$project/.chimera/config.json" <<EOF
{
  "llm": { "provider": "openai", "url": "$CHIMERA_DEMO_URL", "model": "$CHIMERA_DEMO_MODEL" },
  "tests": { "command": "off" },
  "agents": {
    "timeout_ms": 900000,
    "external": { "opencode": { "command": ["$oc_bin", "acp"] } }
  }
}
EOF
# Every file of the project (not the store), by content: the agent may
# change none of them before an accept.
tree_sum() { (cd "$1" && find . -path ./.chimera -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
before="$(tree_sum "$project")"
task="${ACP_TASK:-In app.py, make greet(name) return 'Hello, world!' when name is empty.}"
echo "== chimera task --agent opencode: $task"
start=$(date +%s)
id="$(cd "$project" && XDG_CONFIG_HOME="$project/.no-user-config" "$chimera" trust >&2 && XDG_CONFIG_HOME="$project/.no-user-config" "$chimera" task --agent opencode --file app.py "$task")"
echo "agent $id, $(( $(date +%s) - start )) s"
cd "$project"
"$chimera" agent "$id"
echo "== proposal"
diff_text="$("$chimera" diff "$id")"
echo "$diff_text"
echo "== its requests (effect log, kind acp)"
"$chimera" effects --kind acp | head -40
if [ "$(tree_sum "$project")" != "$before" ]; then
  echo "== the project CHANGED on disk without an accept" >&2
  exit 1
fi
if [ -z "$diff_text" ]; then
  # Nothing was written, so nothing was tested: say so, never pass.
  echo "== inconclusive: the agent proposed no change (its model made no write)" >&2
  exit 2
fi
echo "== the project untouched on disk, the agent's change a proposal (as it must be before an accept)"
rm -rf "$project"
