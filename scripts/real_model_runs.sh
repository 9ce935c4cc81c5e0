#!/usr/bin/env bash
# Runs the demo task N times against a real local model (DEMO_MODEL=0.5b|1.5b)
# and reports how many ended in a proposal and the median time from the
# command to ghost text. The library must be built (target/release).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-5}"
nvim="$("$here/scripts/install-nvim.sh")"
. "$here/scripts/model-server.sh"
start_model_server "${DEMO_MODEL:-0.5b}" "${DEMO_PORT:-8089}"
ok=0; times=()
for i in $(seq 1 "$runs"); do
  project="$(sample_project)"
  out="$(cd "$project" && timeout 600 "$nvim" --headless --clean -l "$here/scripts/demo/headless.lua" 2>/dev/null || true)"
  line="$(echo "$out" | grep '^state:' || echo 'state: none')"
  echo "  run $i: $line" | head -c 200; echo
  if echo "$line" | grep -q 'completed'; then
    ok=$((ok + 1)); times+=("$(echo "$line" | sed -n 's/.*after \([0-9.]*\) s.*/\1/p')")
  fi
  rm -rf "$project"
done
median="n/a"
if [ ${#times[@]} -gt 0 ]; then
  median="$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') s"
fi
echo "real model ${DEMO_MODEL:-0.5b}: $ok/$runs runs reached a proposal; median command -> ghost text: $median (seed's bar: 5 s)"
