#!/usr/bin/env bash
# How often one agent task goes to the store for its change: the overlay
# listings and blobs it reads and the overlay entries it writes, counted
# by gdb in a test of the library (issue 51's measure of a brain that
# passes its change as a value, not through the database).
#
# Usage: scripts/measure/round-trips.sh [TEST...]
#   (default: a code-mode task, a code-mode repair round, a tool-mode task)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v gdb >/dev/null || { echo "round-trips: needs gdb (apt install gdb)" >&2; exit 2; }
bin="$(cargo test --no-default-features --lib --no-run 2>&1 | grep -o 'target/debug/deps/chimera-[a-f0-9]*' | head -1)"
where() {
  local addr
  addr="$(nm -C --defined-only "$bin" | grep " $1\$" | head -1 | cut -d' ' -f1)"
  addr2line -e "$bin" "0x$addr" | sed 's#^.*/src/#src/#'
}
spots=""
for f in store::Store::overlay_entries store::Store::blob store::Store::overlay_set; do
  spots="$spots,${f##*::}=$(where "chimera::$f")"
done
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(
    agent::tests::a_change_the_task_did_not_ask_for_is_left_out_and_the_summary_says_so
    agent::tests::a_change_that_breaks_the_projects_tests_goes_back_with_the_failure
    agent::tests::tool_mode_reads_writes_and_submits_and_asks_for_json
  )
fi
export PYTHONPATH="${PYTHONPATH:-$(scripts/install-pytest.sh)}"
for t in "${tests[@]}"; do
  printf '%s: ' "$t"
  ROUND_TRIPS="${spots#,}" gdb -batch -x scripts/measure/round_trips.py --args "$bin" --exact "$t" --test-threads=1 2>&1 \
    | grep '^ROUND TRIPS' | sed 's/^ROUND TRIPS //'
done
