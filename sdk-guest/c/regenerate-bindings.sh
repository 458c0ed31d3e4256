#!/usr/bin/env bash
# Regenerate the committed wit-bindgen output for the C and Go guests. Run
# it after changing the WIT, and commit the result.
#
#   sdk-guest/c/regenerate-bindings.sh
#
#   sdk-guest/c/bindings/      C, series 0.1 (wit/plugin.wit): plugins that
#                              stay on 0.1 (a `contract` file saying 0.1)
#   sdk-guest/c/bindings/0.2/  C, series 0.2 (wit/0.2/plugin.wit): the default
#   sdk-guest/go/bindings/     Go, series 0.2
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
mkdir -p "$tmp/go"
(cd "$tmp/go" && wit-bindgen go "$root/wit/0.2" --world plugin)

c_out="$root/sdk-guest/c/bindings"
rm -rf "$c_out"
mkdir -p "$c_out"
cp -R "$tmp/c-0.1/." "$c_out/"
cp -R "$tmp/c-0.2" "$c_out/0.2"
go_out="$root/sdk-guest/go/bindings"
rm -rf "$go_out"
cp -R "$tmp/go" "$go_out"
echo "regenerated $c_out (0.1), $c_out/0.2 and $go_out (0.2) with wit-bindgen $have"
