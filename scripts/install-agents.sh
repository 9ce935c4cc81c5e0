#!/usr/bin/env bash
# Installs the ACP agents users bring, at pinned versions, each in its own
# folder under .deps: Claude Code's two adapters (the one users have today,
# @zed-industries/claude-code-acp, which serves Claude Code's tools over
# ACP, and its successor @agentclientprotocol/claude-agent-acp, which runs
# Claude Code's own), Gemini CLI and Codex's adapter. Prints "name path"
# for each, a line each. (opencode: scripts/install-opencode.sh.)
# Needs node and npm (Debian's `nodejs` and `npm`) and npm's registry once.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
install() { # name, package@version, bin
  local dest="$here/.deps/$1" bin="$here/.deps/$1/node_modules/.bin/$3"
  if [ ! -x "$bin" ] || ! grep -q "\"version\": \"${2##*@}\"" "$dest/node_modules/${2%@*}/package.json" 2>/dev/null; then
    if ! command -v npm >/dev/null; then
      (apt-get update && apt-get install -y nodejs npm) >&2
    fi
    mkdir -p "$dest"
    (cd "$dest" && npm install --no-audit --no-fund --silent "$2" >&2)
  fi
  echo "$1 $bin"
}
install claude-code-acp "@zed-industries/claude-code-acp@0.16.2" claude-code-acp
install claude-agent-acp "@agentclientprotocol/claude-agent-acp@0.101.0" claude-agent-acp
install gemini "@google/gemini-cli@0.61.0" gemini
install codex "@zed-industries/codex-acp@0.16.0" codex-acp
