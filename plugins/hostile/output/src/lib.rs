//! Test fixture: bad output, under `output_kb = 64`.
//!
//! - `hostile_bigout {"bytes": N}` returns a JSON string of N `x`s (default
//!   10 MiB). Expected: `output_too_large`. With `bytes` under the cap
//!   (e.g. 1000) it succeeds with exactly that string.
//! - `hostile_bad_json` returns `{"unterminated": ` (not JSON) through the
//!   SDK's `RawJson` escape hatch. Expected: `invalid_output`.
//! - `hostile_log_flood {"lines": N}` logs N info lines of ~130 bytes
//!   (default 100 000, ~13 MB) and returns `{"logged": N}`. Expected: the
//!   call succeeds, and the host keeps no more than its per-call log budget
//!   (toolhost: 64 KiB a call, 4 KiB a line); the rest is dropped, not
//!   buffered.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{NoInput, RawJson, ToolError, log};

/// Input of `hostile_bigout`.
#[derive(Deserialize, JsonSchema)]
struct BigInput {
    /// Length of the returned string. Default: 10 MiB.
    #[serde(default = "ten_mib")]
    bytes: usize,
}

fn ten_mib() -> usize {
    10 << 20
}

fn bigout(input: BigInput) -> Result<String, ToolError> {
    Ok("x".repeat(input.bytes))
}

fn bad_json(_: NoInput) -> Result<RawJson, ToolError> {
    Ok(RawJson(r#"{"unterminated": "#.to_owned()))
}

/// Input of `hostile_log_flood`.
#[derive(Deserialize, JsonSchema)]
struct FloodInput {
    /// How many lines to log. Default: 100000.
    #[serde(default = "hundred_thousand")]
    lines: u64,
    /// How many `y`s end each line. Default: 100.
    #[serde(default = "hundred")]
    width: usize,
}

fn hundred_thousand() -> u64 {
    100_000
}

fn hundred() -> usize {
    100
}

#[derive(Serialize)]
struct Flooded {
    logged: u64,
}

fn log_flood(input: FloodInput) -> Result<Flooded, ToolError> {
    for i in 0..input.lines {
        log::info(format!(
            "hostile_log_flood line {i}: {}",
            "y".repeat(input.width)
        ));
    }
    Ok(Flooded {
        logged: input.lines,
    })
}

toolhost_guest::export_tools! {
    hostile_bigout: "Test fixture: returns a huge string." => bigout,
    hostile_bad_json: "Test fixture: returns text that is not JSON." => bad_json,
    hostile_log_flood: "Test fixture: logs a flood of lines." => log_flood,
}
