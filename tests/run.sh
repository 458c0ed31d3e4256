#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: install what the tests need
# (the wasm32-wasip2 target, the Python/JS/C/Go guest toolchains), build every
# bundled plugin, then run every test in the workspace and the guest SDKs'
# own unit tests.
#
#   tests/run.sh            # everything
#   tests/run.sh sandbox::  # extra arguments go to the test binaries as a filter
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
.ci/install-guest-toolchains.sh
bash plugins/build.sh

# The guest SDKs' own unit tests (seconds).
python3 -m unittest discover -s sdk-guest/python/tests
node --import ./sdk-guest/js/test/register-host-stub.mjs --test sdk-guest/js/test/toolhost.test.mjs
c_test="$(mktemp -d)/json_test"
cc -std=c11 -Wall -Werror -Isdk-guest/c sdk-guest/c/tests/json_test.c sdk-guest/c/toolhost_json.c -lm -o "$c_test"
"$c_test"

cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
