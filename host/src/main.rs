//! The `toolhost` command line. All logic lives in the library; this binary
//! parses flags, reads the environment, sets up logging and prints.

mod cli;

use std::process::ExitCode;

/// mimalloc, not the system allocator: a request to `serve` makes many
/// small allocations, often freed on another thread than the one that
/// made them (a span handed to the exporter's thread); mimalloc takes some
/// 7% off the server's CPU per call (docs/mcp.md, "Speed").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
