#!/usr/bin/env bash
# Builds the {{name}} plugin into dist/: dist/{{name}}.wasm (the component)
# and dist/{{name}}.toml (its manifest, copied from plugin.toml).
#
#   ./build.sh
#
# Needs Rust with the wasm32-wasip2 target (installed here with rustup when
# it is missing). Honors CARGO_TARGET_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name={{name}}
cargo="${CARGO:-cargo}"

if command -v rustup >/dev/null 2>&1 \
    && ! rustup target list --installed | grep -qx wasm32-wasip2; then
    echo "build.sh: installing the wasm32-wasip2 target" >&2
    rustup target add wasm32-wasip2
fi

"$cargo" build --quiet --release --target wasm32-wasip2 \
    --manifest-path "$here/Cargo.toml"

target_dir="${CARGO_TARGET_DIR:-$here/target}"
mkdir -p "$here/dist"
# Copy, then rename: a toolhost watching dist/ never sees half a file.
cp "$target_dir/wasm32-wasip2/release/$name.wasm" "$here/dist/$name.wasm.tmp"
mv -f "$here/dist/$name.wasm.tmp" "$here/dist/$name.wasm"
cp "$here/plugin.toml" "$here/dist/$name.toml.tmp"
mv -f "$here/dist/$name.toml.tmp" "$here/dist/$name.toml"
echo "built dist/$name.wasm and dist/$name.toml"
