#!/usr/bin/env bash
# Builds the {{name}} plugin into dist/: dist/{{name}}.wasm (the component)
# and dist/{{name}}.toml (its manifest, copied from plugin.toml).
#
#   ./build.sh
#
# Needs Node.js. jco (pinned by the toolhost checkout's plugins/js/package.json)
# is the checkout's own, installed there on first use; JCO=/path/to/jco picks
# another. Packages this plugin imports go in this directory's package.json
# (`npm install NAME`): the build bundles them. The JS engine is QuickJS
# (small components, sub-ms calls); JS_BACKEND=starlingmonkey selects
# SpiderMonkey (12 MB, web APIs such as TextEncoder and URL).
# The SDK and the plugin contract come from the checkout below;
# TOOLHOST_SDK=/path/to/toolhost overrides it. The contract is 0.3: wit/0.2's
# `plugin` world (tools) merged with wit/0.3's `offers` (resources, prompts,
# completions) by sdk-guest/js/wit/guest.wit. A plugin that offers only tools
# may build against wit/0.2 alone (`--wit "$sdk/wit/0.2" --world-name plugin`)
# and drop its `offers(...)` export.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name={{name}}
sdk={{sdk_sh}}
if [ -n "${TOOLHOST_SDK:-}" ]; then sdk="$TOOLHOST_SDK"; fi

if [ ! -f "$sdk/wit/0.3/plugin.wit" ] || [ ! -f "$sdk/sdk-guest/js/wit/guest.wit" ]; then
    echo "build.sh: no toolhost SDK at $sdk; set TOOLHOST_SDK to a toolhost checkout" >&2
    exit 1
fi
if ! command -v node >/dev/null 2>&1; then
    echo "build.sh: node not found; run .ci/install-guest-toolchains.sh js in the toolhost checkout" >&2
    exit 1
fi
case "${JS_BACKEND:-quickjs}" in
    quickjs | qjs) backend_args=(--backend quickjs --backend-qjs-disable-async) ;;
    starlingmonkey | sm) backend_args=(--backend starlingmonkey --disable http fetch-event) ;;
    *) echo "build.sh: JS_BACKEND must be quickjs or starlingmonkey" >&2; exit 1 ;;
esac

jco="${JCO:-$sdk/plugins/js/node_modules/.bin/jco}"
if [ ! -x "$jco" ]; then
    if [ -n "${JCO:-}" ]; then
        echo "build.sh: JCO=$JCO is not an executable" >&2
        exit 1
    fi
    echo "build.sh: installing jco in $sdk/plugins/js" >&2
    (cd "$sdk/plugins/js" && npm install --no-save --no-audit --no-fund --loglevel=error)
fi

mkdir -p "$here/dist"
rm -f "$here/dist/$name.wasm.tmp"
# jco reads one WIT directory: the merged world, the two series as its deps.
wit="$here/dist/wit.tmp"
rm -rf "$wit" && mkdir -p "$wit/deps/plugin-0.2" "$wit/deps/plugin-0.3"
cp "$sdk/sdk-guest/js/wit/guest.wit" "$wit/"
cp "$sdk/wit/0.2/plugin.wit" "$wit/deps/plugin-0.2/"
cp "$sdk/wit/0.3/plugin.wit" "$wit/deps/plugin-0.3/"
# --bundle: the plugin, the SDK and any packages become one module (the
# engine's snapshot step sees one file). Absolute entry path: the QuickJS
# backend resolves a relative one twice.
(cd "$here" && TOOLHOST_SDK_JS="$sdk/sdk-guest/js/toolhost.js" "$jco" componentize \
    "$here/plugin.js" --bundle --bundle-config "$here/rolldown.config.mjs" \
    "${backend_args[@]}" --wit "$wit" --world-name plugin \
    -o "$here/dist/$name.wasm.tmp" 2>&1 \
    | grep -v -e 'Unknown user config' -e '^OK Successfully written' || true)
rm -rf "$wit"
if [ ! -f "$here/dist/$name.wasm.tmp" ]; then
    echo "build.sh: jco componentize failed; see its output above" >&2
    exit 1
fi
# Rename into place: a toolhost watching dist/ never sees half a file.
mv -f "$here/dist/$name.wasm.tmp" "$here/dist/$name.wasm"
cp "$here/plugin.toml" "$here/dist/$name.toml.tmp"
mv -f "$here/dist/$name.toml.tmp" "$here/dist/$name.toml"
echo "built dist/$name.wasm and dist/$name.toml"
