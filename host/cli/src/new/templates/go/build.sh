#!/usr/bin/env bash
# Builds the {{name}} plugin into dist/: dist/{{name}}.wasm (the component)
# and dist/{{name}}.toml (its manifest, copied from plugin.toml).
#
#   ./build.sh
#
# The Go files here (package plugin), the toolhost Go SDK, its committed
# wit-bindgen bindings and the vendored go.bytecodealliance.org/pkg (all
# from the toolhost checkout's sdk-guest/go; the Go module proxy is not
# used) are assembled into one module; `GOOS=wasip1 GOARCH=wasm go build
# -buildmode=c-shared` makes a preview1 reactor module; wasm-tools embeds
# the WIT world (toolhost:plugin@0.2.0) and adapts it to a component. When
# a Go file here calls toolhost.RegisterResource, RegisterTemplate or
# RegisterPrompt, the module is built with the SDK's 0.3 bindings instead
# (bindings-offers over bindings, and the export_toolhost_plugin_resources,
# _prompts and _completions packages; the world in wit-offers: 0.2's plugin
# and 0.3's offers), so the component also exports contract 0.3's resources, prompts
# and completions; without, it is a 0.2 plugin.
# Needs go and wasm-tools (`.ci/install-guest-toolchains.sh go` in the
# toolhost checkout).
# TOOLHOST_SDK=/path/to/toolhost overrides the checkout below.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name={{name}}
sdk={{sdk_sh}}
if [ -n "${TOOLHOST_SDK:-}" ]; then sdk="$TOOLHOST_SDK"; fi
# The toolhost checkout keeps its guest toolchains in target/toolchains
# (.ci/install-guest-toolchains.sh there); use them when they are there.
if [ -f "$sdk/.ci/toolchains.sh" ]; then . "$sdk/.ci/toolchains.sh"; fi
go_sdk="$sdk/sdk-guest/go"

if [ ! -f "$sdk/wit/0.2/plugin.wit" ] || [ ! -d "$go_sdk/toolhost" ]; then
    echo "build.sh: no toolhost SDK at $sdk; set TOOLHOST_SDK to a toolhost checkout" >&2
    exit 1
fi
for tool in go wasm-tools; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "build.sh: $tool not found; run .ci/install-guest-toolchains.sh go in the toolhost checkout" >&2
        exit 1
    fi
done
adapter="$("$sdk/sdk-guest/c/preview1-adapter.sh")"
# The module's go version: the one the vendored pkg module asks for.
go_version="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$go_sdk/pkg/go.mod")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mod="$tmp/module"
mkdir -p "$mod/plugin"
cp -R "$go_sdk/bindings/." "$mod/"
if grep -qE 'toolhost\.Register(Resource|Template|Prompt)\(' "$here"/*.go; then
    # The 0.3 packages, and a main package that exports 0.3's interfaces too.
    cp -R "$go_sdk/bindings-offers/." "$mod/"
    cp -R "$go_sdk/export_toolhost_plugin_resources" "$go_sdk/export_toolhost_plugin_prompts" \
        "$go_sdk/export_toolhost_plugin_completions" "$mod/"
    world=(--world plugin-offers "$go_sdk/wit-offers")
else
    world=(--world plugin "$sdk/wit/0.2")
fi
cp -R "$go_sdk/toolhost" "$go_sdk/export_toolhost_plugin_tool" "$mod/"
cp "$here"/*.go "$mod/plugin/"
cat >"$mod/go.mod" <<GOMOD
module wit_component

go ${go_version:-1.25}

require go.bytecodealliance.org/pkg v0.4.0

replace go.bytecodealliance.org/pkg => $go_sdk/pkg
GOMOD
cat >"$mod/plugin_import.go" <<'GO'
package main

// The plugin registers its tools in init().
import _ "wit_component/plugin"
GO
# -checklinkname=0: the wit runtime links to Go runtime internals.
(cd "$mod" && GOOS=wasip1 GOARCH=wasm GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    go build -buildmode=c-shared -trimpath -ldflags="-checklinkname=0 -s -w" -o "$tmp/$name.core.wasm" .)
wasm-tools component embed "${world[@]}" "$tmp/$name.core.wasm" -o "$tmp/$name.embed.wasm"
wasm-tools component new "$tmp/$name.embed.wasm" \
    --adapt "wasi_snapshot_preview1=$adapter" -o "$tmp/$name.wasm"
wasm-tools validate "$tmp/$name.wasm"
mkdir -p "$here/dist"
# Copy, then rename: a toolhost watching dist/ never sees half a file.
cp "$tmp/$name.wasm" "$here/dist/$name.wasm.tmp"
mv -f "$here/dist/$name.wasm.tmp" "$here/dist/$name.wasm"
cp "$here/plugin.toml" "$here/dist/$name.toml.tmp"
mv -f "$here/dist/$name.toml.tmp" "$here/dist/$name.toml"
echo "built dist/$name.wasm and dist/$name.toml"
