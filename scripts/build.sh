#!/usr/bin/env bash
# Puts Chimera's native library at lua/chimera_native.so (or $CHIMERA_LIB_DEST).
# 1. If the checkout is at a release tag, download the prebuilt library for
#    this platform and Neovim minor version from that GitHub release, verify
#    its sha256, write it to a temp file and rename it into place.
# 2. Otherwise (or if that fails), build it with `cargo build --release`.
# Environment: CHIMERA_BUILD_FROM_SOURCE=1 skips the download;
# CHIMERA_NO_SOURCE_BUILD=1 skips the fallback (used by tests);
# CHIMERA_RELEASE_URL, CHIMERA_TAG and CHIMERA_NVIM_MINOR override what is
# otherwise derived from git and `nvim --version`.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

case "$(uname -s)" in
  Linux) os=linux; ext=so ;;
  Darwin) os=macos; ext=so; built_ext=dylib ;;
  *) os=unknown; ext=so ;;
esac
built_ext="${built_ext:-$ext}"
arch="$(uname -m)"; [ "$arch" = arm64 ] && arch=aarch64
dest="${CHIMERA_LIB_DEST:-$here/lua/chimera_native.$ext}"

say() { echo "chimera build: $*" >&2; }

sha256_of() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

try_download() {
  local tag="${CHIMERA_TAG:-$(git describe --tags --exact-match 2>/dev/null || true)}"
  if [ -z "$tag" ]; then say "not at a release tag; no prebuilt library to fetch"; return 1; fi
  local minor="${CHIMERA_NVIM_MINOR:-$( (nvim --version 2>/dev/null || true) | sed -n 's/^NVIM v\([0-9]*\.[0-9]*\).*/\1/p' | head -n1)}"
  minor="${minor:-0.11}"
  local base="${CHIMERA_RELEASE_URL:-}"
  if [ -z "$base" ]; then
    local remote; remote="$(git config --get remote.origin.url 2>/dev/null || true)"
    local slug; slug="$(echo "$remote" | sed -n 's#.*github.com[:/]\(.*\)$#\1#p' | sed 's/\.git$//')"
    if [ -z "$slug" ]; then say "origin is not a GitHub repository; cannot find releases"; return 1; fi
    base="https://github.com/$slug/releases/download"
  fi
  local asset="chimera_native-$os-$arch-nvim$minor.$ext"
  local url="$base/$tag/$asset"
  local tmp; tmp="$(mktemp "$(dirname "$dest")/.chimera_native.XXXXXX")"
  say "fetching $url"
  if ! curl -fsSL --retry 2 -o "$tmp" "$url"; then
    rm -f "$tmp"; say "no prebuilt library $asset for $tag"; return 1
  fi
  local want
  if ! want="$(curl -fsSL --retry 2 "$url.sha256" | cut -d' ' -f1)" || [ -z "$want" ]; then
    rm -f "$tmp"; say "no checksum $asset.sha256 for $tag; refusing an unverified library"; return 1
  fi
  local got; got="$(sha256_of "$tmp")"
  if [ "$got" != "$want" ]; then
    rm -f "$tmp"; say "checksum mismatch for $asset (expected $want, got $got); refusing it"; return 1
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$dest"
  say "installed prebuilt $asset ($tag)"
}

build_from_source() {
  if [ "${CHIMERA_NO_SOURCE_BUILD:-0}" = 1 ]; then
    say "source build disabled (CHIMERA_NO_SOURCE_BUILD=1)"; return 1
  fi
  if ! command -v cargo >/dev/null; then
    say "cargo not found: install Rust 1.95+ from https://rustup.rs, then run make again"; return 1
  fi
  say "building from source (cargo build --release)"
  cargo build --release
  local tmp; tmp="$(mktemp "$(dirname "$dest")/.chimera_native.XXXXXX")"
  cp "target/release/libchimera.$built_ext" "$tmp"
  mv -f "$tmp" "$dest"
  say "installed $dest"
}

if [ "${CHIMERA_BUILD_FROM_SOURCE:-0}" != 1 ] && try_download; then
  exit 0
fi
build_from_source
