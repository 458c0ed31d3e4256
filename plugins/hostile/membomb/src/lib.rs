//! Test fixture: memory exhaustion under `memory_mb = 16`.
//!
//! - `hostile_membomb` allocates and touches 1 MiB chunks forever. When the
//!   host refuses to grow memory, Rust's allocator fails and the guest aborts.
//!   Expected: `memory_limit` (the host saw its limiter refuse a grow), or
//!   at least `trap`; the host keeps serving.
//! - `hostile_memprobe {"max_mb": M}` allocates 1 MiB chunks with
//!   `try_reserve` until refused or M reached. Under a host whose memory
//!   limiter makes `memory.grow` fail softly it returns `{"allocated_mb": N}`
//!   with N below 16; under one that traps the growing instruction (toolhost
//!   does, to know the kind by type) it ends with `memory_limit` as well.
//!   With M = 4 it succeeds with `{"allocated_mb": 4}`: the cap is not hit
//!   early.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{NoInput, ToolError};

const CHUNK: usize = 1 << 20;

fn membomb(_: NoInput) -> Result<usize, ToolError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; CHUNK];
        // Touch every page so no allocator can hand out lazy zero pages.
        for byte in chunk.iter_mut().step_by(4096) {
            *byte = 1;
        }
        hoard.push(std::hint::black_box(chunk));
    }
}

/// Input of `hostile_memprobe`.
#[derive(Deserialize, JsonSchema)]
struct ProbeInput {
    /// Stop after this many MiB even if memory is left. Default: 4096.
    #[serde(default = "default_max_mb")]
    max_mb: usize,
}

fn default_max_mb() -> usize {
    4096
}

#[derive(Serialize)]
struct Probe {
    allocated_mb: usize,
}

fn memprobe(input: ProbeInput) -> Result<Probe, ToolError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    hoard
        .try_reserve(input.max_mb)
        .map_err(|e| ToolError::failed(format!("could not reserve the chunk list: {e}")))?;
    while hoard.len() < input.max_mb {
        let mut chunk = Vec::new();
        if chunk.try_reserve_exact(CHUNK).is_err() {
            break;
        }
        chunk.resize(CHUNK, 1u8);
        hoard.push(chunk);
    }
    Ok(Probe {
        allocated_mb: hoard.len(),
    })
}

toolhost_guest::export_tools! {
    hostile_membomb: "Test fixture: allocates memory until it runs out." => membomb,
    hostile_memprobe: "Test fixture: reports how many MiB it can allocate." => memprobe,
}
