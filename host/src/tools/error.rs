//! The structured error a tool call ends with.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of failure a tool call ended with.
///
/// The kinds are stable strings (`as_str`) that the CLI prints in `--json`
/// output and the loop sends to the model, so a user can script against them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// No tool of that name is registered (or it is not offered right now).
    UnknownTool,
    /// The input is not valid JSON, does not match the schema, or the tool
    /// rejected its values.
    InvalidInput,
    /// The tool ran and reported a failure of its own.
    ToolFailed,
    /// The tool returned something that is not valid JSON.
    InvalidOutput,
    /// The tool's structured result does not match the output schema it
    /// declared.
    OutputSchemaMismatch,
    /// The call used up its fuel (CPU) budget.
    OutOfFuel,
    /// The call ran past its wall-clock deadline.
    Timeout,
    /// The guest tried to grow its memory past the cap.
    MemoryLimit,
    /// The guest trapped: a panic, an abort, a stack overflow, a bad access.
    Trap,
    /// The output (or the guest's log) was larger than the cap.
    OutputTooLarge,
    /// The sandbox refused a file, variable or other resource the tool tried.
    PermissionDenied,
    /// The plugin could not be loaded or instantiated.
    PluginLoad,
    /// Every instance slot of the host (`max_instances`) stayed in use for
    /// the whole of the call's deadline; nothing ran. Retrying may work.
    Busy,
    /// A remote service (a REST endpoint, an MCP server) could not be
    /// reached or answered with a status that says "try again later" (429,
    /// 502, 503, 504). Retrying may work; the error may carry the
    /// service's `Retry-After`.
    Unavailable,
}

impl ToolErrorKind {
    /// The stable snake_case name of the kind, e.g. `"out_of_fuel"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidInput => "invalid_input",
            Self::ToolFailed => "tool_failed",
            Self::InvalidOutput => "invalid_output",
            Self::OutputSchemaMismatch => "output_schema_mismatch",
            Self::OutOfFuel => "out_of_fuel",
            Self::Timeout => "timeout",
            Self::MemoryLimit => "memory_limit",
            Self::Trap => "trap",
            Self::OutputTooLarge => "output_too_large",
            Self::PermissionDenied => "permission_denied",
            Self::PluginLoad => "plugin_load",
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
        }
    }

    /// Whether retrying the same call could succeed: a deadline, a host
    /// with no free instance slot, or a remote service that said "later";
    /// every other kind fails the same way again. These are the kinds
    /// [`ExecOptions::retry_on`](super::ExecOptions::retry_on) retries by
    /// default.
    pub fn is_transient(self) -> bool {
        matches!(self, Self::Timeout | Self::Busy | Self::Unavailable)
    }

    /// Every kind, in declaration order.
    pub const ALL: [Self; 14] = [
        Self::UnknownTool,
        Self::InvalidInput,
        Self::ToolFailed,
        Self::InvalidOutput,
        Self::OutputSchemaMismatch,
        Self::OutOfFuel,
        Self::Timeout,
        Self::MemoryLimit,
        Self::Trap,
        Self::OutputTooLarge,
        Self::PermissionDenied,
        Self::PluginLoad,
        Self::Busy,
        Self::Unavailable,
    ];

    /// The kind whose [`as_str`](Self::as_str) is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether the guest ran to its own end: it returned an error of its
    /// own or one about its output. After any other kind (a trap, a limit,
    /// a cut-off call) its instance may be half-way through something and
    /// must not be used again.
    pub(crate) fn leaves_instance_intact(self) -> bool {
        matches!(
            self,
            Self::InvalidInput
                | Self::ToolFailed
                | Self::PermissionDenied
                | Self::UnknownTool
                | Self::OutputTooLarge
                | Self::InvalidOutput
                | Self::OutputSchemaMismatch
        )
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call that did not produce an output.
///
/// This is a *result the model sees*, not a host fault: the loop turns it
/// into a tool result with the error flag set, and the conversation goes on.
///
/// The message often comes from the plugin, so `Display` (what logs and
/// terminals show) writes its control characters as escapes: a newline
/// cannot start a forged log line, an escape sequence cannot repaint a
/// terminal. The `message` field keeps the text as it was (for JSON).
///
/// ```
/// use toolhost::tools::{ToolError, ToolErrorKind};
///
/// let e = ToolError::failed("bad\n[INFO] forged\u{1b}[2J");
/// assert_eq!(e.to_string(), r"tool_failed: bad\n[INFO] forged\u{1b}[2J");
/// assert_eq!(e.kind, ToolErrorKind::ToolFailed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {}", crate::text::escape_controls(.message))]
#[non_exhaustive]
pub struct ToolError {
    /// What went wrong, as a stable kind.
    pub kind: ToolErrorKind,
    /// What went wrong and, where it helps, what to do about it.
    pub message: String,
    /// How long the remote service asked us to wait before trying again
    /// (its `Retry-After`), for [`ToolErrorKind::Unavailable`]. The
    /// registry's retry loop waits at least this long; it is not sent to
    /// the model.
    #[serde(skip)]
    pub retry_after: Option<std::time::Duration>,
}

impl ToolError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error, asking to be retried no sooner than `after`.
    #[must_use]
    pub fn with_retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// `invalid_input`: the arguments were wrong; the model should fix them.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidInput, message)
    }

    /// `tool_failed`: the tool ran and could not do its job.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::ToolFailed, message)
    }

    /// `unknown_tool` for `name`.
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(
            ToolErrorKind::UnknownTool,
            format!("no tool named `{name}` is available; use one of the tools listed"),
        )
    }
}
