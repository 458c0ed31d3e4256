//! A failed call's error: the tool's own (cut to a budget), or a host-side
//! failure named by its type.

use wasmtime::{Store, Trap};

use super::super::bindings::WitToolError;
use super::super::state::StoreState;
use super::super::{LimitHit, Limits};
use crate::tools::{ToolError, ToolErrorKind};

pub(super) fn timeout_error(limits: &Limits) -> ToolError {
    ToolError::new(
        ToolErrorKind::Timeout,
        format!(
            "the call did not finish within its {} ms deadline",
            crate::sandbox::limits::call_timeout(limits).as_millis()
        ),
    )
}

/// Most bytes of a tool's own error message kept, whatever its output cap.
pub(crate) const MAX_ERROR_MESSAGE: usize = 8 << 10;

/// The tool's own error, its message cut to `cap` bytes: an error is output
/// the caller (and the model) reads, and is held to a budget like output.
pub(super) fn from_wit(e: WitToolError, cap: usize) -> ToolError {
    let (kind, message) = match e {
        WitToolError::InvalidInput(m) => (ToolErrorKind::InvalidInput, m),
        WitToolError::Failed(m) => (ToolErrorKind::ToolFailed, m),
        WitToolError::Denied(m) => (ToolErrorKind::PermissionDenied, m),
        WitToolError::UnknownTool(m) => (ToolErrorKind::UnknownTool, m),
    };
    ToolError::new(kind, cut_message(message, cap))
}

fn cut_message(mut message: String, cap: usize) -> String {
    if message.len() <= cap {
        return message;
    }
    let total = message.len();
    let mut end = cap;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message.push_str(&format!(
        "... [error message cut: the plugin sent {total} bytes, at most {cap} are kept]"
    ));
    message
}

/// Name a host-side failure by its type: our own limit hooks first, then
/// wasmtime's trap codes; anything else is a trap with its message.
pub(super) fn classify(
    e: wasmtime::Error,
    limits: &Limits,
    store: &Store<StoreState>,
) -> ToolError {
    if let Some(hit) = e.downcast_ref::<LimitHit>() {
        return match hit {
            LimitHit::Memory { .. } => ToolError::new(ToolErrorKind::MemoryLimit, hit.to_string()),
            LimitHit::Deadline => timeout_error(limits),
        };
    }
    if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        // Not the guest's fault, and not a trap: the pool had no room.
        return ToolError::new(
            ToolErrorKind::Busy,
            format!("{e}; try again, or raise `max_instances` in the host config"),
        );
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        let detail = guest_stderr(store);
        let sep = if detail.is_empty() { "" } else { ": " };
        return ToolError::new(
            ToolErrorKind::Trap,
            format!(
                "the plugin exited (status {}) instead of returning a result{sep}{detail}",
                exit.0
            ),
        );
    }
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::OutOfFuel => ToolError::new(
                ToolErrorKind::OutOfFuel,
                format!(
                    "the call used up its fuel budget of {} units (a CPU limit); it may loop forever or need a bigger `fuel` limit",
                    limits.fuel
                ),
            ),
            Trap::Interrupt => timeout_error(limits),
            Trap::StackOverflow => ToolError::new(
                ToolErrorKind::Trap,
                "the plugin overflowed its stack (unbounded recursion?)",
            ),
            Trap::UnreachableCodeReached => {
                let detail = guest_stderr(store);
                ToolError::new(
                    ToolErrorKind::Trap,
                    if detail.is_empty() {
                        "the plugin panicked or aborted (it wrote nothing to stderr)".to_owned()
                    } else {
                        format!("the plugin panicked or aborted: {detail}")
                    },
                )
            }
            other => ToolError::new(ToolErrorKind::Trap, format!("the plugin trapped: {other}")),
        };
    }
    ToolError::new(ToolErrorKind::Trap, format!("the plugin failed: {e:#}"))
}

/// What the guest wrote to stderr during this call: a panic's message and
/// location (Rust's and the Go SDK's `panicked at FILE:LINE: MESSAGE`).
fn guest_stderr(store: &Store<StoreState>) -> String {
    crate::text::stderr_summary(&store.data().stderr.contents(), 500)
}
