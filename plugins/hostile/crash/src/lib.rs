//! Test fixture: ways for a guest to die. Each must end the call with
//! `trap` and leave the host serving other calls; none may take the host
//! process down.
//!
//! - `hostile_panic`: `panic!` (wasm32-wasip2 panics abort: the message goes
//!   to the guest's stderr, then an `unreachable` trap).
//! - `hostile_abort`: `std::process::abort()`.
//! - `hostile_exit`: `std::process::exit(3)`, i.e. `wasi:cli/exit`. The host
//!   must not exit; wasmtime-wasi reports it as an `I32Exit` error.
//! - `hostile_recurse`: unbounded recursion until the wasm call stack is
//!   exhausted (a stack-overflow trap).

use std::hint::black_box;

use toolhost_guest::{NoInput, ToolError};

fn panic(_: NoInput) -> Result<(), ToolError> {
    panic!("hostile_panic: panicking on purpose");
}

fn abort(_: NoInput) -> Result<(), ToolError> {
    std::process::abort();
}

fn exit(_: NoInput) -> Result<(), ToolError> {
    std::process::exit(3);
}

/// Recurses forever. The frame lives on the wasm value stack (no address is
/// taken), so the engine's stack limit, not Rust's shadow stack in linear
/// memory, is what overflows; `black_box` keeps LLVM from turning the
/// recursion into a loop.
#[inline(never)]
#[expect(unconditional_recursion, reason = "overflowing the stack is the point")]
fn depth(n: u64) -> u64 {
    let below = depth(black_box(n.wrapping_add(1)));
    black_box(below.wrapping_mul(3).wrapping_add(n))
}

fn recurse(_: NoInput) -> Result<u64, ToolError> {
    Ok(depth(0))
}

toolhost_guest::export_tools! {
    hostile_panic: "Test fixture: panics." => panic,
    hostile_abort: "Test fixture: aborts." => abort,
    hostile_exit: "Test fixture: calls exit(3)." => exit,
    hostile_recurse: "Test fixture: recurses until the stack overflows." => recurse,
}
