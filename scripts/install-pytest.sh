#!/usr/bin/env bash
# Installs pytest (PyPI) into .deps/pytest and prints that folder, for
# PYTHONPATH: the core's tests check test files an agent writes the way
# `pytest` loads them, and the real-project eval runs a package's suite.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/pytest"
if [ ! -d "$dest/_pytest" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "pytest==9.2.0" >&2
fi
echo "$dest"
