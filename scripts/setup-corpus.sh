#!/usr/bin/env bash
# Real code in every language Chimera reads, for tests/languages.rs: the
# TypeScript sources of rxjs and some of its ES5 build (npm), and Go, Lua, Rust and TypeScript files
# from the sdists of Pygments and setuptools-golang-examples (PyPI). Rust
# and JavaScript also come from the cargo registry and Lua from Neovim's
# runtime, found by the test itself. Prints the corpus directory.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/corpus"
if [ ! -f "$dest/.done" ]; then
  rm -rf "$dest" && mkdir -p "$dest/dl"
  curl -sSfL -o "$dest/dl/rxjs.tgz" https://registry.npmjs.org/rxjs/-/rxjs-7.8.1.tgz
  mkdir -p "$dest/rxjs" && tar xzf "$dest/dl/rxjs.tgz" -C "$dest/rxjs" package/src package/dist/esm5/internal/operators
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary :all: -d "$dest/dl" "pygments==2.21.0" "setuptools-golang-examples==2.2.0" >&2
  for f in "$dest"/dl/*.tar.gz; do tar xzf "$f" -C "$dest"; done
  rm -rf "$dest/dl"
  touch "$dest/.done"
fi
echo "$dest"
