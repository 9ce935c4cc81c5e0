#!/usr/bin/env bash
# Following one agent task through the code: every function of the crate
# a test's task enters, in the order it first enters it (gdb, one
# breakpoint per function, each dropped at its first hit), read as the
# files a reader goes through from `agent::run` on: how many, and how
# often the walk comes back to a file already read (issue 51's measure of
# a brain that is a pipeline, not a back-and-forth).
#
# Usage: scripts/measure/walk.sh [--show] [--under src/agent/] [TEST...]
#   (default: a code-mode task and a tool-mode task)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v gdb >/dev/null || { echo "walk: needs gdb (apt install gdb)" >&2; exit 2; }
show="" under="src/"
while [ $# -gt 0 ]; do
  case "$1" in
    --show) show=1; shift ;;
    --under) under="$2"; shift 2 ;;
    *) break ;;
  esac
done
export PYTHONPATH="${PYTHONPATH:-$(scripts/install-pytest.sh)}"
bin="$(cargo test --no-default-features --lib --no-run 2>&1 | grep -o 'target/debug/deps/chimera-[a-f0-9]*' | head -1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The crate's own functions (tests left out) and the file each is in.
nm --defined-only "$bin" | awk '$2 ~ /[tT]/ && $3 ~ /^_ZN7chimera/ {print $1, $3}' | grep -v '4tests' > "$work/syms"
cut -d' ' -f1 "$work/syms" | sed 's/^/0x/' | addr2line -e "$bin" | sed "s#^$PWD/##" > "$work/files"
paste -d' ' "$work/syms" "$work/files" | awk '$3 ~ /^src\//' | grep -v '/tests\.rs\|/tests/\|fixture' > "$work/functions"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(
    agent::tests::a_definition_reply_is_spliced_into_the_target
    agent::tests::tool_mode_reads_writes_and_submits_and_asks_for_json
  )
fi
for t in "${tests[@]}"; do
  WALK_FUNCTIONS="$work/functions" WALK_TRACE="$work/trace" \
    gdb -batch -x scripts/measure/walk_trace.py --args "$bin" --exact "$t" --test-threads=1 >/dev/null 2>&1
  printf '%s: ' "$t"
  python3 - "$work/trace" "$under" "$show" <<'PY'
import re, sys
trace, under, show = sys.argv[1], sys.argv[2], sys.argv[3]
entered = [line.split() for line in open(trace)]
start = next(i for i, (_, name) in enumerate(entered) if re.match(r"_ZN7chimera5agent3run17h", name))
files = []
for where, _ in entered[start:]:
    f = where.split(":")[0]
    if f.startswith(under) and (not files or files[-1] != f):
        files.append(f)
seen, returns = set(), 0
for f in files:
    returns += f in seen
    seen.add(f)
print(f"{len(entered) - start} functions, {len(seen)} files under {under}, {returns} returns to a file already read")
if show:
    print("  " + " > ".join(f.removeprefix("src/") for f in files))
PY
done
