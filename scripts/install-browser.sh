#!/usr/bin/env bash
# Installs what the dashboard's browser test drives: Debian's chromium and
# PyPI's playwright (its own browser download is not used) into
# .deps/browser. Prints the chromium binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/browser"
if ! command -v chromium >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi
if [ ! -d "$dest/playwright" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "playwright==1.65.2" >&2
fi
command -v chromium
