#!/usr/bin/env bash
# Builds the {{name}} plugin into dist/: dist/{{name}}.wasm (the component)
# and dist/{{name}}.toml (its manifest, copied from plugin.toml).
#
#   ./build.sh
#
# clang (wasm32-wasi, reactor) compiles every *.c here with the toolhost C
# SDK and its committed wit-bindgen bindings (contract
# toolhost:plugin@0.2.0; when a source file names TOOLHOST_OFFERS, also the
# SDK's toolhost_offers.c and the bindings of contract 0.3's `offers`
# world: resources, prompts, completions) into a WASI preview1 core module,
# with PLUGIN_SCHEME defined as the plugin's URI scheme (its name, `_` as
# `-`); `wasm-tools component new` turns it into a component, with the
# preview1 reactor adapter mapping WASI to preview2 (and 0.3's world merged
# with 0.2's). Needs clang-14, lld-14,
# wasi-libc, libclang-rt-14-dev-wasm32 and wasm-tools
# (`.ci/install-guest-toolchains.sh c` in the toolhost checkout). CC=...
# picks another compiler that takes clang's flags; WASI_SYSROOT=... another
# wasi-libc. TOOLHOST_SDK=/path/to/toolhost overrides the checkout below.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name={{name}}
sdk={{sdk_sh}}
if [ -n "${TOOLHOST_SDK:-}" ]; then sdk="$TOOLHOST_SDK"; fi
# The toolhost checkout keeps its guest toolchains in target/toolchains
# (.ci/install-guest-toolchains.sh there); use them when they are there.
if [ -f "$sdk/.ci/toolchains.sh" ]; then . "$sdk/.ci/toolchains.sh"; fi
c_sdk="$sdk/sdk-guest/c"
bindings="$c_sdk/bindings/0.2"
# The URI scheme the host gives the plugin's resources: its name, `_` as `-`.
scheme="${name//_/-}"

if [ ! -f "$sdk/wit/0.2/plugin.wit" ] || [ ! -f "$c_sdk/toolhost.h" ] || [ ! -f "$bindings/plugin.c" ]; then
    echo "build.sh: no toolhost SDK at $sdk; set TOOLHOST_SDK to a toolhost checkout" >&2
    exit 1
fi
cc="${CC:-}"
if [ -z "$cc" ]; then
    for c in clang-14 clang; do
        if command -v "$c" >/dev/null 2>&1; then cc="$c"; break; fi
    done
fi
if [ -z "$cc" ]; then
    echo "build.sh: clang not found; run .ci/install-guest-toolchains.sh c in the toolhost checkout" >&2
    exit 1
fi
if [ -z "${CC:-}" ] && [ -z "${WASI_SYSROOT:-}" ] && [ ! -f /usr/lib/wasm32-wasi/libc.a ]; then
    echo "build.sh: wasi-libc not found; run .ci/install-guest-toolchains.sh c in the toolhost checkout" >&2
    exit 1
fi
if ! command -v wasm-tools >/dev/null 2>&1; then
    echo "build.sh: wasm-tools not found; run .ci/install-guest-toolchains.sh c in the toolhost checkout" >&2
    exit 1
fi
sysroot_args=()
if [ -n "${WASI_SYSROOT:-}" ]; then sysroot_args=(--sysroot="$WASI_SYSROOT"); fi
# Offers (contract 0.3) only when the plugin declares them: without, it
# stays a 0.2 plugin.
offers=()
if grep -q TOOLHOST_OFFERS "$here"/*.c; then
    offers=(-I "$c_sdk/bindings/0.3" "$c_sdk/toolhost_offers.c"
        "$c_sdk/bindings/0.3/offers.c" "$c_sdk/bindings/0.3/offers_component_type.o")
fi
adapter="$("$c_sdk/preview1-adapter.sh")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$here/dist"
# -mexec-model=reactor: a library with exports, no main(). The
# component-type object carries the WIT world into the module.
"$cc" --target=wasm32-wasi -mexec-model=reactor "${sysroot_args[@]}" \
    -O2 -std=c11 -Wall -Wextra -Werror -fvisibility=hidden \
    -I "$c_sdk" -I "$bindings" -DPLUGIN_SCHEME="\"$scheme\"" \
    "$here"/*.c "$c_sdk/toolhost.c" "$c_sdk/toolhost_json.c" \
    "$bindings/plugin.c" "$bindings/plugin_component_type.o" "${offers[@]}" \
    -Wl,--strip-debug -o "$tmp/$name.core.wasm"
wasm-tools component new "$tmp/$name.core.wasm" \
    --adapt "wasi_snapshot_preview1=$adapter" -o "$tmp/$name.wasm"
wasm-tools validate "$tmp/$name.wasm"
# Copy, then rename: a toolhost watching dist/ never sees half a file.
cp "$tmp/$name.wasm" "$here/dist/$name.wasm.tmp"
mv -f "$here/dist/$name.wasm.tmp" "$here/dist/$name.wasm"
cp "$here/plugin.toml" "$here/dist/$name.toml.tmp"
mv -f "$here/dist/$name.toml.tmp" "$here/dist/$name.toml"
echo "built dist/$name.wasm and dist/$name.toml"
