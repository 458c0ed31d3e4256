#!/usr/bin/env bash
# Build every C plugin in plugins/c/*/ into OUT_DIR as NAME.wasm, with its
# manifest beside it as NAME.toml.
#
#   plugins/c/build.sh OUT_DIR [NAME...]
#
# A plugin is a directory with *.c files (one of them uses TOOLHOST_PLUGIN
# from sdk-guest/c/toolhost.h) and plugin.toml; NAME is the directory name.
# It speaks the contract toolhost:plugin@0.2.0, unless a file named
# `contract` in it says `0.1`: a plugin made before 0.2 that stays on it
# (c_hash does, so that the tests keep a 0.1 C plugin).
#
# Pipeline: clang (wasm32-wasi, reactor) compiles the plugin, the SDK and
# the committed wit-bindgen C bindings of its series (sdk-guest/c/bindings/0.2,
# or sdk-guest/c/bindings for 0.1) into a WASI preview1 core module;
# `wasm-tools component new` turns it into a component of the
# toolhost:plugin world, with the preview1 reactor adapter mapping WASI to
# preview2. Needs Debian's clang-14, lld-14, wasi-libc and
# libclang-rt-14-dev-wasm32, and wasm-tools (.ci/install-guest-toolchains.sh c).
# CC=... picks another compiler that takes clang's flags, e.g. a two-line
# wrapper script around `python3 -m ziglang cc "$@"` (PyPI ziglang, which
# brings its own wasi-libc).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
trap 'echo "plugins/c/build.sh: FAILED: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
sdk="$root/sdk-guest/c"
out="${1:?usage: plugins/c/build.sh OUT_DIR [NAME...]}"
shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# Copy unless the destination has the same bytes, so unchanged outputs keep
# their mtimes (hot reload and the up-to-date checks rely on them).
publish_file() {
  if [ -f "$2" ] && cmp -s "$1" "$2"; then return; fi
  cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
}
publish_dir() {
  if [ -d "$2" ] && diff -r -q "$1" "$2" >/dev/null 2>&1; then return; fi
  rm -rf "$2.tmp.$$" && cp -R "$1" "$2.tmp.$$" && rm -rf "$2" && mv "$2.tmp.$$" "$2"
}

cc="${CC:-}"
if [ -z "$cc" ]; then
  for c in clang-14 clang; do
    if command -v "$c" >/dev/null 2>&1; then cc="$c"; break; fi
  done
fi
if [ -z "$cc" ]; then
  echo "plugins/c/build.sh: clang not found; run .ci/install-guest-toolchains.sh c" >&2
  exit 1
fi
if [ -z "${CC:-}" ] && [ -z "${WASI_SYSROOT:-}" ] && [ ! -f /usr/lib/wasm32-wasi/libc.a ]; then
  echo "plugins/c/build.sh: wasi-libc not found; run .ci/install-guest-toolchains.sh c" >&2
  exit 1
fi
if ! command -v wasm-tools >/dev/null 2>&1; then
  echo "plugins/c/build.sh: wasm-tools not found; run .ci/install-guest-toolchains.sh c" >&2
  exit 1
fi
sysroot_args=()
[ -n "${WASI_SYSROOT:-}" ] && sysroot_args=(--sysroot="$WASI_SYSROOT")
adapter="$("$sdk/preview1-adapter.sh")"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in "$here"/*/; do
    compgen -G "$dir*.c" >/dev/null && names+=("$(basename "$dir")")
  done
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for name in "${names[@]}"; do
  src="$here/$name"
  sources=("$src"/*.c)
  if [ ! -f "${sources[0]}" ]; then
    echo "plugins/c/build.sh: no .c files in $src" >&2
    exit 1
  fi
  series=0.2
  if [ -f "$src/contract" ]; then
    series="$(sed -e 's/#.*//' "$src/contract" | tr -d '[:space:]')"
  fi
  case "$series" in
  0.1) bindings="$sdk/bindings" ;;
  0.2) bindings="$sdk/bindings/0.2" ;;
  *)
    echo "plugins/c/build.sh: $src/contract says '$series'; expected 0.1 or 0.2" >&2
    exit 1
    ;;
  esac
  wasm="$out/$name.wasm"
  newer="$(find "$src" "$sdk" "$root/wit" -type f -newer "$wasm" -not -name plugin.toml -not -path "$src/data/*" -print -quit 2>/dev/null || true)"
  if [ -f "$wasm" ] && [ -z "$newer" ]; then
    echo "c: $name is up to date"
  else
    echo "c: building $name (toolhost:plugin@$series)"
    # -mexec-model=reactor: a library with exports, no main(). The
    # component-type object carries the WIT world into the module.
    "$cc" --target=wasm32-wasi -mexec-model=reactor "${sysroot_args[@]}" \
      -O2 -std=c11 -Wall -Wextra -Werror -fvisibility=hidden \
      -I "$sdk" -I "$bindings" \
      "${sources[@]}" "$sdk/toolhost.c" "$sdk/toolhost_json.c" \
      "$bindings/plugin.c" "$bindings/plugin_component_type.o" \
      -Wl,--strip-debug -o "$tmp/$name.core.wasm"
    wasm-tools component new "$tmp/$name.core.wasm" \
      --adapt "wasi_snapshot_preview1=$adapter" -o "$wasm.tmp.$$"
    wasm-tools validate "$wasm.tmp.$$"
    mv "$wasm.tmp.$$" "$wasm"
  fi
  if [ -f "$src/plugin.toml" ]; then
    publish_file "$src/plugin.toml" "$out/$name.toml"
  else
    rm -f "$out/$name.toml"
  fi
  # A directory the manifest grants as host = "NAME.data" travels with it.
  if [ -d "$src/data" ]; then
    publish_dir "$src/data" "$out/$name.data"
  fi
done
