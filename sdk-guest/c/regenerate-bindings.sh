#!/usr/bin/env bash
# Regenerate the committed wit-bindgen output for the C and Go guests. Run
# it after changing the WIT, and commit the result.
#
#   sdk-guest/c/regenerate-bindings.sh
#
#   sdk-guest/c/bindings/      C, series 0.1 (wit/plugin.wit): plugins that
#                              stay on 0.1 (a `contract` file saying 0.1)
#   sdk-guest/c/bindings/0.2/  C, series 0.2 (wit/0.2/plugin.wit): the default
#   sdk-guest/c/bindings/0.3/  C, series 0.3's `offers` world (wit/0.3/plugin.wit),
#                              linked beside 0.2's by a plugin that offers
#                              resources, prompts or completions
#   sdk-guest/go/bindings/     Go, series 0.2
#   sdk-guest/go/bindings-offers/  Go, 0.2's `plugin` and 0.3's `offers` in
#                              one world (sdk-guest/go/wit-offers): for a
#                              plugin that offers resources, prompts or
#                              completions
#
# Needs wit-bindgen-cli 0.63.0: `.ci/install-guest-toolchains.sh bindings`
# builds it into target/toolchains/cargo (~17 minutes on two cores, which is
# why the output is committed instead of generated per build).
set -euo pipefail

want=0.63.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
export PATH="$TOOLHOST_TOOLCHAINS/cargo/bin:$PATH"
if ! command -v wit-bindgen >/dev/null 2>&1; then
  echo "regenerate-bindings.sh: wit-bindgen not found; run .ci/install-guest-toolchains.sh bindings" >&2
  exit 1
fi
have="$(wit-bindgen --version | awk '{print $2}')"
if [ "$have" != "$want" ]; then
  echo "regenerate-bindings.sh: wit-bindgen $have found, $want expected" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Everything is generated first, and replaces the committed files only when
# every generator succeeded.
wit-bindgen c "$root/wit" --world plugin --out-dir "$tmp/c-0.1"
wit-bindgen c "$root/wit/0.2" --world plugin --out-dir "$tmp/c-0.2"
wit-bindgen c "$root/wit/0.3" --world offers --out-dir "$tmp/c-0.3"
mkdir -p "$tmp/go" "$tmp/go-offers"
(cd "$tmp/go" && wit-bindgen go "$root/wit/0.2" --world plugin)
(cd "$tmp/go-offers" && wit-bindgen go "$root/sdk-guest/go/wit-offers" --world plugin-offers)
# The world holds two versions of toolhost:plugin, so wit-bindgen-go names
# the packages toolhost_plugin_0_2_0_* and toolhost_plugin_0_3_0_*. The names
# do not clash without the versions: drop them, so that the SDK (which
# imports toolhost_plugin_types and the like) builds against both sets. The
# 0.2 packages are then the ones in bindings/ (generated from the same WIT),
# so bindings-offers keeps only what it adds: the 0.3 packages and the
# wit_exports.go that also exports 0.3's interfaces. A build copies
# bindings/, then bindings-offers/ over it.
(
    cd "$tmp/go-offers"
    for d in toolhost_plugin_0_*; do mv "$d" "toolhost_plugin_${d#toolhost_plugin_0_?_0_}"; done
    grep -rlE 'toolhost_plugin_0_[23]_0_' . | xargs sed -i -E 's/toolhost_plugin_0_[23]_0_/toolhost_plugin_/g'
    for d in "$tmp"/go/toolhost_plugin_*; do rm -rf "./$(basename "$d")"; done
    rm go.mod
)

c_out="$root/sdk-guest/c/bindings"
rm -rf "$c_out"
mkdir -p "$c_out"
cp -R "$tmp/c-0.1/." "$c_out/"
cp -R "$tmp/c-0.2" "$c_out/0.2"
cp -R "$tmp/c-0.3" "$c_out/0.3"
go_out="$root/sdk-guest/go/bindings"
rm -rf "$go_out" "$go_out-offers"
cp -R "$tmp/go" "$go_out"
cp -R "$tmp/go-offers" "$go_out-offers"
echo "regenerated $c_out (0.1), $c_out/0.2, $c_out/0.3, $go_out (0.2) and $go_out-offers (0.2 + 0.3) with wit-bindgen $have"
