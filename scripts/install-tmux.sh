#!/usr/bin/env bash
# Installs tmux (Debian's package) where it is missing
# and prints the program's path: tests/tui drive Neovim in a real terminal, as a person does.
set -euo pipefail
if ! command -v tmux >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux >&2
fi
command -v tmux
