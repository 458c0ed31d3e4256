//! Test fixture: `hostile_sleep {"ms": N}` sleeps N ms (default 60 000) with
//! `std::thread::sleep`, which on wasm32-wasip2 is a `wasi:clocks` poll: an
//! async wait in the host, not a CPU loop. Expected under `timeout_ms = 200`:
//! `timeout` shortly after 200 ms, without a blocked host thread. With `ms`
//! under the deadline (e.g. 10) it returns `{"slept_ms": N}`.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::ToolError;

/// Input of `hostile_sleep`.
#[derive(Deserialize, JsonSchema)]
struct SleepInput {
    /// How long to sleep, in milliseconds. Default: 60000.
    #[serde(default = "one_minute")]
    ms: u64,
}

fn one_minute() -> u64 {
    60_000
}

#[derive(Serialize)]
struct Slept {
    slept_ms: u128,
}

fn sleep(input: SleepInput) -> Result<Slept, ToolError> {
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(input.ms));
    Ok(Slept {
        slept_ms: start.elapsed().as_millis(),
    })
}

toolhost_guest::export_tools! {
    hostile_sleep: "Test fixture: sleeps past its deadline." => sleep,
}
