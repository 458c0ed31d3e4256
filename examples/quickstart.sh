#!/usr/bin/env bash
# The main job in one command, offline: build toolhost and the bundled Rust
# plugins, then run the capped LLM tool loop on a recorded conversation (the
# `replay` provider) through the real sandboxed plugins. Two of the model's
# four tool calls in its first turn go over the per-response cap (2) and are
# answered "not executed", so the model retries them in the next turn.
#
#   examples/quickstart.sh
#
# The same run against a real model: replace `--provider replay --replay ...`
# with `--provider openai` (and OPENAI_API_KEY), `--provider anthropic`
# (ANTHROPIC_API_KEY) or `--provider gemini` (GEMINI_API_KEY).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
bash plugins/build.sh rust
cargo run --quiet --bin toolhost -- run \
    "How far are three marathons in miles? Save the plan as a note and give me a slug for the title." \
    --provider replay --replay examples/demo/trip.json \
    --plugins target/plugins \
    --max-calls-per-response 2 \
    --transcript target/quickstart-transcript.json
