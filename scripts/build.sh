#!/usr/bin/env bash
# Puts Chimera's native library at lua/chimera_native.so (or $CHIMERA_LIB_DEST)
# and the `chimera` command at bin/chimera (or $CHIMERA_BIN_DEST).
# 1. Download the prebuilt library for this platform (glibc or musl Linux,
#    macOS) and Neovim minor version from a GitHub release, and the
#    `chimera-<os>-<arch>` command beside it, verify each one's sha256,
#    write them to temp files and rename them into place. The release
#    is the checkout's tag, else the nearest release tag behind it when no
#    native source (scripts/native-sources) changed since: its library is
#    then the one a source build would make.
# 2. Otherwise (or if that fails), build it with `cargo build --release --locked`.
# The Neovim minor version is the running Neovim's when Neovim runs the
# build (lazy.nvim's `build = "make"`), else the first `nvim` on PATH.
# Run by Neovim (a plugin manager's build step; lazy.nvim stops it after
# `git.timeout`, two minutes by default) a source build goes on in the
# background and the script returns at once: the build writes .build/pid
# while it runs, .build/build.log, and .build/failed if it fails; the plugin
# says how it goes and loads the library once it is there.
# Environment: CHIMERA_BUILD_FROM_SOURCE=1 skips the download;
# CHIMERA_BUILD_FOREGROUND=1 builds in the foreground even under Neovim;
# CHIMERA_NO_SOURCE_BUILD=1 skips the fallback (used by tests);
# CHIMERA_RELEASE_URL, CHIMERA_TAG, CHIMERA_NVIM_MINOR and CHIMERA_LIBC
# (gnu|musl) override what is otherwise derived from git, Neovim and ldd.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

libc() {
  if [ -n "${CHIMERA_LIBC:-}" ]; then echo "$CHIMERA_LIBC"; return; fi
  if (ldd --version 2>&1 || true) | grep -qi musl || ls /lib/ld-musl-* >/dev/null 2>&1; then echo musl; else echo gnu; fi
}

case "$(uname -s)" in
  Linux) os=linux; [ "$(libc)" = musl ] && os=linux-musl; ext=so ;;
  Darwin) os=macos; ext=so; built_ext=dylib ;;
  *) os=unknown; ext=so ;;
esac
built_ext="${built_ext:-$ext}"
arch="$(uname -m)"; [ "$arch" = arm64 ] && arch=aarch64
dest="${CHIMERA_LIB_DEST:-$here/lua/chimera_native.$ext}"
bin_dest="${CHIMERA_BIN_DEST:-$here/bin/chimera}"

say() { echo "chimera build: $*" >&2; }

state="$here/.build"
# The background build marks what it is doing for the plugin to read.
if [ -n "${CHIMERA_BUILD_STATE:-}" ]; then
  echo $$ >"$CHIMERA_BUILD_STATE/pid"
  trap 'rc=$?; rm -f "$CHIMERA_BUILD_STATE/pid"; [ "$rc" = 0 ] || echo "$rc" >"$CHIMERA_BUILD_STATE/failed"' EXIT
fi

sha256_of() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

native_sources() { grep -v '^#' "$here/scripts/native-sources"; }

# The release whose library fits this checkout, if any.
release_tag() {
  if [ -n "${CHIMERA_TAG:-}" ]; then echo "$CHIMERA_TAG"; return 0; fi
  local tag
  tag="$(git describe --tags --exact-match --match 'v*' 2>/dev/null || true)"
  if [ -n "$tag" ] && git diff --quiet HEAD -- $(native_sources) 2>/dev/null; then echo "$tag"; return 0; fi
  tag="$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || true)"
  if [ -z "$tag" ]; then say "no release tag behind this checkout; no prebuilt library to fetch"; return 1; fi
  # Against the work tree: uncommitted changes count too.
  if git diff --quiet "$tag" -- $(native_sources) 2>/dev/null; then
    say "not at a release tag; $tag's library fits (no native source changed since)"
    echo "$tag"; return 0
  fi
  say "the native sources changed since $tag: its library does not fit"; return 1
}

# The Neovim running this build, if one does: the nearest ancestor process
# that is nvim (lazy.nvim runs `make` from Neovim).
running_nvim() {
  local pid="$PPID" exe
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    { [ -z "$pid" ] || [ "$pid" -le 1 ]; } && return 1
    if [ -r "/proc/$pid/exe" ]; then exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
    else exe="$(ps -o comm= -p "$pid" 2>/dev/null || true)"; fi
    case "$(basename "${exe:-x}")" in nvim) echo "$exe"; return 0 ;; esac
    pid="$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')"
  done
  return 1
}

nvim_minor() {
  if [ -n "${CHIMERA_NVIM_MINOR:-}" ]; then echo "$CHIMERA_NVIM_MINOR"; return; fi
  local exe; exe="$(running_nvim || echo nvim)"
  local minor; minor="$( ("$exe" --version 2>/dev/null || true) | sed -n 's/^NVIM v\([0-9]*\.[0-9]*\).*/\1/p' | head -n1)"
  say "Neovim ${minor:-unknown} ($exe)"
  echo "${minor:-0.11}"
}

# Downloads `$1` and its `.sha256` into temp file `$2`, verified.
# Returns 1 when the asset is not published, 2 when it cannot be verified.
fetch_verified() {
  local url="$1" tmp="$2" name; name="$(basename "$1")"
  say "fetching $url"
  if ! curl -fsSL --retry 2 -o "$tmp" "$url"; then
    say "no prebuilt $name in this release"; return 1
  fi
  local want
  if ! want="$(curl -fsSL --retry 2 "$url.sha256" | cut -d' ' -f1)" || [ -z "$want" ]; then
    say "no checksum $name.sha256; refusing an unverified file"; return 2
  fi
  local got; got="$(sha256_of "$tmp")"
  if [ "$got" != "$want" ]; then
    say "checksum mismatch for $name (expected $want, got $got); refusing it"; return 2
  fi
}

try_download() {
  local tag; tag="$(release_tag)" || return 1
  local minor; minor="$(nvim_minor)"
  local base="${CHIMERA_RELEASE_URL:-}"
  if [ -z "$base" ]; then
    local remote; remote="$(git config --get remote.origin.url 2>/dev/null || true)"
    local slug; slug="$(echo "$remote" | sed -n 's#.*github.com[:/]\(.*\)$#\1#p' | sed 's/\.git$//')"
    if [ -z "$slug" ]; then say "origin is not a GitHub repository; cannot find releases"; return 1; fi
    base="https://github.com/$slug/releases/download"
  fi
  local asset="chimera_native-$os-$arch-nvim$minor.$ext"
  local tmp; tmp="$(mktemp "$(dirname "$dest")/.chimera_native.XXXXXX")"
  local got=0
  fetch_verified "$base/$tag/$asset" "$tmp" || got=$?
  if [ "$got" != 0 ]; then
    rm -f "$tmp"
    [ "$got" = 1 ] && say "no prebuilt library $asset for $tag"
    return 1
  fi
  # The `chimera` command of the same release, verified the same way; a
  # release that has none (older ones) still gives the library.
  mkdir -p "$(dirname "$bin_dest")"
  local bin_tmp; bin_tmp="$(mktemp "$(dirname "$bin_dest")/.chimera.XXXXXX")"
  local bin_got=0
  fetch_verified "$base/$tag/chimera-$os-$arch" "$bin_tmp" || bin_got=$?
  if [ "$bin_got" = 2 ]; then
    rm -f "$tmp" "$bin_tmp"; return 1
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$dest"
  say "installed prebuilt $asset ($tag)"
  if [ "$bin_got" = 0 ]; then
    chmod 755 "$bin_tmp"
    mv -f "$bin_tmp" "$bin_dest"
    say "installed the chimera command at $bin_dest (put $(dirname "$bin_dest") on your PATH)"
  else
    rm -f "$bin_tmp"
    say "$tag has no prebuilt chimera command: cargo build --release --locked builds it"
  fi
}

# Starts this script again, detached, to build from source; returns at once.
build_in_background() {
  mkdir -p "$state"
  local pid; pid="$(cat "$state/pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    say "a source build is already running (pid $pid); log: $state/build.log"; return 0
  fi
  rm -f "$state/failed" "$state/pid"
  local detach=(nohup)
  command -v setsid >/dev/null && detach=(setsid nohup)
  CHIMERA_BUILD_STATE="$state" CHIMERA_BUILD_FOREGROUND=1 CHIMERA_BUILD_FROM_SOURCE=1 \
    "${detach[@]}" "$here/scripts/build.sh" >"$state/build.log" 2>&1 </dev/null &
  say "building from source in the background (10 to 25 minutes on two cores): Neovim says when the library is ready and loads it; log: $state/build.log"
}

build_from_source() {
  if [ "${CHIMERA_NO_SOURCE_BUILD:-0}" = 1 ]; then
    say "source build disabled (CHIMERA_NO_SOURCE_BUILD=1)"; return 1
  fi
  if ! command -v cargo >/dev/null; then
    say "cargo not found: install Rust 1.95+ from https://rustup.rs, then run make again"; return 1
  fi
  if [ "${CHIMERA_BUILD_FOREGROUND:-0}" != 1 ] && [ ! -t 0 ] && running_nvim >/dev/null; then
    build_in_background; return 0
  fi
  # CHIMERA_CARGO_PROFILE=debug: the tests' quicker build.
  local profile="${CHIMERA_CARGO_PROFILE:-release}" flags=(--locked)
  [ "$profile" = release ] && flags+=(--release)
  say "building from source (cargo build ${flags[*]})"
  cargo build "${flags[@]}"
  # Where cargo put it: the user's CARGO_TARGET_DIR or build.target-dir count.
  local out; out="$(cargo metadata --format-version 1 --no-deps --locked 2>/dev/null \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
  out="${out:-target}/$profile"
  local tmp; tmp="$(mktemp "$(dirname "$dest")/.chimera_native.XXXXXX")"
  cp "$out/libchimera.$built_ext" "$tmp"
  chmod 755 "$tmp"
  mv -f "$tmp" "$dest"
  say "installed $dest"
  mkdir -p "$(dirname "$bin_dest")"
  local bin_tmp; bin_tmp="$(mktemp "$(dirname "$bin_dest")/.chimera.XXXXXX")"
  cp "$out/chimera" "$bin_tmp"
  chmod 755 "$bin_tmp"
  mv -f "$bin_tmp" "$bin_dest"
  say "installed the chimera command at $bin_dest (put $(dirname "$bin_dest") on your PATH)"
}

if [ "${CHIMERA_BUILD_FROM_SOURCE:-0}" != 1 ] && try_download; then
  exit 0
fi
build_from_source
