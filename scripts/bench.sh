#!/usr/bin/env bash
# `make bench`: every benchmark with its baseline, measured in the same run.
# REAL_MODEL=0 skips the real local model run (which needs scripts/setup-model.sh 0.5b).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
nvim="$(scripts/install-nvim.sh)"
echo "== core (cargo bench)"
cargo bench --no-default-features --bench core 2>/dev/null | grep -E "^(import|overlay|accept|rebase|100 agents|snapshot|cli|sse|acp|mcp|agent folder|starting a process)"
echo "== remora: index Django's sources (from PyPI) vs a bare tree-sitter parse and ctags -R"
corpus="${REMORA_CORPUS:-}"
if [ -z "$corpus" ]; then
  dl="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --no-binary :all: "django==5.1.4" -d "$dl"
  tar xzf "$dl"/*.tar.gz -C "$dl"
  corpus="$(ls -d "$dl"/*/ | head -1)"
fi
command -v ctags >/dev/null || echo "(install universal-ctags for the ctags baseline)"
cargo bench --no-default-features --bench remora -- "$corpus" 2>/dev/null | grep -E "^remora"
echo "== tests in the project's own environment: confined in a scratch copy vs run directly (a venv's pytest on inflection, cargo test)"
venv="$here/.deps/eval-venv"
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pytest==9.2.0"
fi
pkg="$(mktemp -d)"
python3 -m pip download --quiet --no-deps --no-binary :all: "inflection==0.5.1" -d "$pkg"
tar xzf "$pkg"/inflection-0.5.1.tar.gz -C "$pkg"
cargo bench --no-default-features --bench environments -- "$venv/bin/python" "$pkg/inflection-0.5.1" 2>/dev/null | grep -E "^(tests|cargo)"
echo "== remora in every language: real code (scripts/setup-corpus.sh, the cargo registry, Neovim's Lua) vs a bare parse"
cargo bench --no-default-features --bench languages 2>/dev/null
cargo build --release 2>/dev/null
lib="$here/target/release/libchimera.so"
echo "== monorepo: the chimera command on 1,500 / 15,000 / 60,000 files, each beside git committing the same tree"
python3 scripts/bench_monorepo.py "$here/target/release/chimera" ${MONOREPO_SIZES:-}

echo "== start-up: require('chimera').setup{} over nvim --clean"
python3 - "$nvim" "$here" "$lib" <<'PY'
import os, statistics, subprocess, sys, time
nvim, repo, lib = sys.argv[1:4]
env = dict(os.environ, CHIMERA_LIB=lib)
base = [nvim, "--clean", "--headless", "--cmd", f"set rtp^={repo}", "+qa!"]
ours = [nvim, "--clean", "--headless", "--cmd", f"set rtp^={repo}", "-c", "runtime plugin/chimera.lua",
        "-c", "lua require('chimera').setup{}", "+qa!"]
def run(cmd):
    t = time.perf_counter(); subprocess.run(cmd, env=env, check=True); return (time.perf_counter() - t) * 1000
for _ in range(3): run(base); run(ours)
b, o = [], []
for _ in range(40):
    b.append(run(base)); o.append(run(ours))
mb, mo = statistics.median(b), statistics.median(o)
print(f"nvim --clean: {mb:.1f} ms; with setup{{}}: {mo:.1f} ms; added {mo - mb:.2f} ms (target <= 3 ms)")
PY

echo "== editor (headless Neovim)"
tmp="$(mktemp -d)"
printf '%s' '[{"text": "```python\nsrc = read_file(\"app.py\")\nwrite_file(\"app.py\", src.replace(\"    return {}\", \"    \\\"\\\"\\\"Parse.\\\"\\\"\\\"\\n    return {}\"))\nsubmit_result(\"doc\", [\"app.py\"])\n```"}]' > "$tmp/script.json"
python3 tests/fake_llm.py --script "$tmp/script.json" --port-file "$tmp/port" --timing "$tmp/timing" &
fake=$!
trap 'kill $fake 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -f "$tmp/port" ] && break; sleep 0.1; done
printf '%s' '[{"text": "```python\nsrc = read_file(\"app.py\")\nwrite_file(\"app.py\", src.replace(\"return {}\", \"return dict()\"))\nsubmit_result(\"ok\", [\"app.py\"])\n```", "chunk_delay": 0.05}]' > "$tmp/slow.json"
python3 tests/fake_llm.py --script "$tmp/slow.json" --port-file "$tmp/slowport" &
slow=$!
trap 'kill $fake $slow 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -f "$tmp/slowport" ] && break; sleep 0.1; done
# A proposal that rewrites 480 files (a baseline of one file comes from the same server).
python3 - "$tmp/big.json" <<'PY'
import json, sys
prog = ("```python\nnew = ''.join([f'def f{i}(y):\\n    return y - {i}\\n' for i in range(1, 121)])\n"
        "for i in range(1, int(read_file('count.txt')) + 1):\n"
        "    write_file('pkg/m' + str(i).zfill(3) + '.py', new)\n"
        "submit_result('every module', [])\n```")
json.dump([{"text": prog}], open(sys.argv[1], "w"))
PY
python3 tests/fake_llm.py --script "$tmp/big.json" --port-file "$tmp/bigport" &
big=$!
trap 'kill $fake $slow $big 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -f "$tmp/bigport" ] && break; sleep 0.1; done
# A monorepo the editor's core starts on (bench_monorepo.py's files, at rest).
mono="$tmp/mono"
python3 - "$mono" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "scripts")
import bench_monorepo
root = Path(sys.argv[1])
bench_monorepo.make_tree(root, 60000)
(root / ".git").mkdir()
PY
sync
CHIMERA_LIB="$lib" CHIMERA_REPO="$here" BENCH_MONOREPO="$mono" BENCH_LLM_URL="http://127.0.0.1:$(cat "$tmp/port")" BENCH_TIMING="$tmp/timing" \
  BENCH_SLOW_URL="http://127.0.0.1:$(cat "$tmp/slowport")" BENCH_BIG_URL="http://127.0.0.1:$(cat "$tmp/bigport")" \
  "$nvim" --headless --clean -l benches/editor.lua

if [ "${REAL_MODEL:-1}" = 1 ]; then
  echo "== real model: '${DEMO_TASK:-add a docstring to parse_config}' with Qwen2.5-Coder ${DEMO_MODEL:-0.5b}, command to ghost text"
  DEMO_MODEL="${DEMO_MODEL:-0.5b}" scripts/real_model_runs.sh "${RUNS:-5}"
  echo "== real model: tool mode ('add a docstring to parse_config' with --tools), Qwen2.5-Coder 1.5B, 10 runs"
  DEMO_MODE=tools DEMO_MODEL=1.5b scripts/real_model_runs.sh 10 | tail -1
  echo "== real model: the free chat (a question and a change request per round), Qwen2.5-Coder 0.5B and 1.5B, 5 rounds"
  for m in 0.5b 1.5b; do
    echo "-- $m"
    CHAT_ROUNDS=5 DEMO_MODEL="$m" scripts/chat_real_model.sh | tail -1
  done
  echo "== real model: Remora node chats (rewrite_self and message_node) with Qwen2.5-Coder 0.5B and 1.5B"
  for m in 0.5b 1.5b; do
    echo "-- $m"
    DEMO_MODEL="$m" scripts/remora_real_model.sh | grep -E "^  [0-9]|remora node chat"
  done
fi
