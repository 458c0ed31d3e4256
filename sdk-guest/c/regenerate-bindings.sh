#!/usr/bin/env bash
# Regenerate the committed wit-bindgen output for the C and Go guests from
# wit/plugin.wit. Run it after changing the WIT, and commit the result.
#
#   sdk-guest/c/regenerate-bindings.sh
#
# Needs wit-bindgen-cli 0.63.0 on PATH. Building it takes ~17 minutes on two
# cores, which is why the output is committed instead of generated per build:
#   cargo install wit-bindgen-cli --version 0.63.0 --locked \
#     --no-default-features --features c,go
set -euo pipefail

want=0.63.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! command -v wit-bindgen >/dev/null 2>&1; then
  echo "regenerate-bindings.sh: wit-bindgen not found; see the cargo install line in this script" >&2
  exit 1
fi
have="$(wit-bindgen --version | awk '{print $2}')"
if [ "$have" != "$want" ]; then
  echo "regenerate-bindings.sh: wit-bindgen $have found, $want expected" >&2
  exit 1
fi

c_out="$root/sdk-guest/c/bindings"
rm -rf "$c_out"
wit-bindgen c "$root/wit" --world plugin --out-dir "$c_out"

go_out="$root/sdk-guest/go/bindings"
rm -rf "$go_out"
mkdir -p "$go_out"
(cd "$go_out" && wit-bindgen go "$root/wit" --world plugin)
echo "regenerated $c_out and $go_out with wit-bindgen $have"
