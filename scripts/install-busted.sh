#!/usr/bin/env bash
# Installs busted (Debian's lua-busted, with its Lua) where it is missing
# and prints the program's path: the tests run a Lua project's specs as a
# user's machine has them.
set -euo pipefail
if ! command -v busted >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq lua-busted >&2
fi
command -v busted
