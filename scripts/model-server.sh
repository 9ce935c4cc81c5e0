# Sourced by the scripts that run Chimera against a real local model; needs
# $here (the repository).
#   start_model_server SIZE PORT  llama.cpp's server with Qwen2.5-Coder SIZE
#                                 (0.5b|1.5b) on PORT, stopped when the script
#                                 exits; exports what scripts/demo/setup.lua reads
#   sample_project                a fresh copy of the demo sample as a git
#                                 project; prints its path

start_model_server() {
  local model log
  model="$("$here/scripts/setup-model.sh" "$1")"
  log="$(mktemp)"
  # shellcheck disable=SC2086 # LLM_SERVER_ARGS: extra flags, word-split.
  python3 "$here/scripts/llm_server.py" "$model" --port "$2" ${LLM_SERVER_ARGS:-} > "$log" 2>&1 &
  model_server=$!
  trap 'kill $model_server 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do
    grep -q "^ready" "$log" && break
    kill -0 "$model_server" 2>/dev/null || { echo "the model server died:" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 0.5
  done
  export CHIMERA_DEMO_URL="http://127.0.0.1:$2/v1"
  # The size in the name picks the small-model paths, as a user's would.
  export CHIMERA_DEMO_MODEL="qwen2.5-coder-$1-instruct"
  export CHIMERA_LIB="${CHIMERA_LIB:-$here/target/release/libchimera.so}"
  export CHIMERA_REPO="$here"
}

sample_project() {
  local project
  project="$(mktemp -d)"
  mkdir -p "$project/.git"
  cp -r "$here/scripts/demo/sample/." "$project/"
  echo "$project"
}
