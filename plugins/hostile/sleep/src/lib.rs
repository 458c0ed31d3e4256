//! Test fixture: `hostile_sleep {"ms": N}` sleeps N ms (default 60 000) with
//! `std::thread::sleep`, which on wasm32-wasip2 is a `wasi:clocks` poll: an
//! async wait in the host, not a CPU loop. Expected under `timeout_ms = 200`:
//! `timeout` shortly after 200 ms, without a blocked host thread. With `ms`
//! under the deadline (e.g. 10) it returns `{"slept_ms": N}`. With `steps`
//! (default 0: one sleep, no reports) it sleeps in that many equal steps
//! and reports progress `0/steps` first and `i/steps` after step i: a long
//! job that says how far it is (the terminal's progress line).
//!
//! Before it sleeps it logs `sleep started` (info): the event a test waits
//! on to know the call is in flight in the guest, instead of a guessed
//! sleep of its own.

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
    /// Sleep in this many steps, reporting progress after each. Default: 0.
    #[serde(default)]
    steps: u32,
}

/// The log line that says a call is in flight.
const STARTED: &str = "sleep started";

fn one_minute() -> u64 {
    60_000
}

#[derive(Serialize)]
struct Slept {
    slept_ms: u128,
}

fn sleep(input: SleepInput) -> Result<Slept, ToolError> {
    let start = Instant::now();
    toolhost_guest::log::info(STARTED);
    if input.steps == 0 {
        std::thread::sleep(Duration::from_millis(input.ms));
    } else {
        let steps = f64::from(input.steps);
        let step = Duration::from_millis(input.ms / u64::from(input.steps));
        toolhost_guest::progress(0.0, Some(steps), Some("starting"));
        for i in 1..=input.steps {
            std::thread::sleep(step);
            let slept = start.elapsed().as_millis();
            toolhost_guest::progress(
                f64::from(i),
                Some(steps),
                Some(&format!("slept {slept} ms")),
            );
        }
    }
    Ok(Slept {
        slept_ms: start.elapsed().as_millis(),
    })
}

toolhost_guest::export_tools! {
    hostile_sleep: "Test fixture: sleeps past its deadline." => sleep,
}
