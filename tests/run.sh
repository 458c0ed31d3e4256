#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: install what the tests need
# (the wasm32-wasip2 target, the Python/JS/C/Go guest toolchains into
# target/toolchains/), build every bundled plugin, then run every test in the
# workspace and the guest SDKs' own unit tests.
#
#   tests/run.sh            # everything
#   tests/run.sh sandbox::  # extra arguments go to the test binaries as a filter
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
current="start"
step() { current="$*"; echo "== tests/run.sh [$(( $(date +%s) - start ))s]: $*"; }
trap 'echo "tests/run.sh: FAILED during \"$current\": \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR

step "rustup target add wasm32-wasip2"
rustup target add wasm32-wasip2 >/dev/null
step "guest toolchains (.ci/install-guest-toolchains.sh)"
.ci/install-guest-toolchains.sh
# shellcheck source=.ci/toolchains.sh
. .ci/toolchains.sh
step "build every plugin (plugins/build.sh)"
bash plugins/build.sh

step "guest SDK unit tests: Python"
python3 -m unittest discover -s sdk-guest/python/tests
step "guest SDK unit tests: JavaScript"
node --import ./sdk-guest/js/test/register-host-stub.mjs --test sdk-guest/js/test/toolhost.test.mjs
step "guest SDK unit tests: C"
c_test="$(mktemp -d)/json_test"
cc -std=c11 -Wall -Werror -Isdk-guest/c sdk-guest/c/tests/json_test.c sdk-guest/c/toolhost_json.c -lm -o "$c_test"
"$c_test"

step "cargo test --workspace --all-targets"
cargo test --workspace --all-targets "$@"
step "cargo test --workspace --doc"
cargo test --workspace --doc
step "done"
