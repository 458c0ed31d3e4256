#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: install what the tests need
# (the wasm32-wasip2 target, the Python/JS/C guest toolchains), build every
# bundled plugin, then run every test in the workspace.
#
#   tests/run.sh            # everything
#   tests/run.sh sandbox::  # extra arguments go to the test binaries as a filter
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
if [ -x .ci/install-guest-toolchains.sh ]; then
  .ci/install-guest-toolchains.sh
fi
bash plugins/build.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
