//! What became of one call of a response: [`CallRecord`] and its
//! [`CallStatus`] (a leaf of the runner: the gate, the rounds and the
//! outcome all read it).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::llm::{ToolCall, ToolResult};
use crate::tools::{ExecOptions, ToolErrorKind};

/// How one call of a response was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallStatus {
    /// It ran and returned an output.
    Succeeded,
    /// It ran (or could not start: bad arguments) and failed.
    Failed,
    /// It was not run: over `max_calls_per_response` or `max_total_calls`.
    Declined,
    /// It was not run: the tool is not offered in this step.
    Unavailable,
    /// It was not run: it needed approval and was refused (by an
    /// approver, a person, or the `on_tool_call` callback).
    Refused,
}

/// One call of a response and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The call as stored (its id may have been made unique).
    pub call: ToolCall,
    /// The tool result stored for it.
    pub result: ToolResult,
    /// How it was handled.
    pub status: CallStatus,
    /// The failure kind, for `Failed`, `Unavailable` (`unknown_tool`) and
    /// `Refused` (`permission_denied`).
    pub error_kind: Option<ToolErrorKind>,
    /// Wall time of the call, retries and their pauses included (zero
    /// when not run).
    pub duration: Duration,
    /// The effective options the call ran under: the tool's, with
    /// [`RunnerConfig::tool_options`](super::RunnerConfig) applied. `None`
    /// when it was not handed to the registry (declined, unavailable,
    /// refused).
    pub options: Option<ExecOptions>,
    /// How many times the tool ran: 0 when it was not run (or its input
    /// was rejected), else 1 plus the retries.
    pub attempts: u32,
}
