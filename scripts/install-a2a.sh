#!/usr/bin/env bash
# Installs the official A2A SDK (PyPI a2a-sdk, protocol 0.3.0) into
# .deps/a2a: the A2A test validates Chimera's agent card with the SDK's
# types (generated from the spec's JSON schema) and talks to it with the
# SDK's client.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/a2a"
if [ ! -d "$dest/a2a" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "a2a-sdk==0.3.26" >&2
fi
