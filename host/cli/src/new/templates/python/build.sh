#!/usr/bin/env bash
# Builds the {{name}} plugin into dist/: dist/{{name}}.wasm (the component)
# and dist/{{name}}.toml (its manifest, copied from plugin.toml).
#
#   ./build.sh
#
# Needs componentize-py (`.ci/install-guest-toolchains.sh python` in the
# toolhost checkout installs the pinned version). The toolhost SDK and the
# plugin contract (0.3: wit/0.2's `plugin` world, which has the tools, and
# wit/0.3's `offers`, which has resources, prompts and completions, merged in
# sdk-guest/python/wit) come from the checkout below;
# TOOLHOST_SDK=/path/to/toolhost overrides it. A plugin that offers only
# tools may build against wit/0.2 alone: `-d "$sdk/wit/0.2" -w plugin`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name={{name}}
sdk={{sdk_sh}}
if [ -n "${TOOLHOST_SDK:-}" ]; then sdk="$TOOLHOST_SDK"; fi
# The toolhost checkout keeps its guest toolchains in target/toolchains
# (.ci/install-guest-toolchains.sh there); use them when they are there.
if [ -f "$sdk/.ci/toolchains.sh" ]; then . "$sdk/.ci/toolchains.sh"; fi

if [ ! -f "$sdk/wit/0.3/plugin.wit" ] || [ ! -d "$sdk/sdk-guest/python/toolhost_sdk" ]; then
    echo "build.sh: no toolhost SDK at $sdk; set TOOLHOST_SDK to a toolhost checkout" >&2
    exit 1
fi
if ! command -v componentize-py >/dev/null 2>&1; then
    echo "build.sh: componentize-py not found; run .ci/install-guest-toolchains.sh python in the toolhost checkout" >&2
    exit 1
fi

mkdir -p "$here/dist"
# componentize-py imports app.py at build time and snapshots the initialised
# interpreter, so module-level work is done once, here. app.py's Tool,
# Resources, Prompts and Completions are the component's exports.
(cd "$here" && PYTHONDONTWRITEBYTECODE=1 componentize-py \
    -d "$sdk/wit/0.2" -d "$sdk/wit/0.3" -d "$sdk/sdk-guest/python/wit" \
    -w toolhost:guest/plugin@0.3.0 componentize app \
    -p "$here" -p "$sdk/sdk-guest/python" \
    -o "$here/dist/$name.wasm.tmp" >/dev/null)
# Rename into place: a toolhost watching dist/ never sees half a file.
mv -f "$here/dist/$name.wasm.tmp" "$here/dist/$name.wasm"
cp "$here/plugin.toml" "$here/dist/$name.toml.tmp"
mv -f "$here/dist/$name.toml.tmp" "$here/dist/$name.toml"
echo "built dist/$name.wasm and dist/$name.toml"
