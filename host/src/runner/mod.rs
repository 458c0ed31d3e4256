//! The capped tool loop: [`ToolRunner`].
//!
//! A run asks the model, executes the tool calls of its answer through the
//! [`ToolRegistry`](crate::tools::ToolRegistry), appends the results and
//! asks again, until the model answers without calls or a cap stops it.
//!
//! The loop is split in two, so that every cap is testable without HTTP:
//! - `LoopState` (in `machine`) *decides*: ask the model, which calls of a
//!   response are executed, declined or dropped, when to stop and why. It is
//!   plain data, no I/O, no async.
//! - [`ToolRunner`] *performs*: it sends the requests, runs the calls
//!   concurrently, records timings, and yields one [`Iteration`] per model
//!   response.
//!
//! The [`Conversation`] invariant — every tool call id of an assistant
//! message is answered by exactly one tool result right after it, and no
//! result answers an unknown id — is checked before every request; a
//! violation ends the run with [`RunErrorKind::Invariant`] and the request is
//! never sent. Duplicate call ids within one response are renamed
//! deterministically first ([`dedupe_call_ids`](crate::llm::dedupe_call_ids)).
//!
//! Every knob and its default is on [`RunnerConfig`]; `docs/runner.md` has
//! the long version. A conversation outlives the process as a
//! [`Transcript`]. A run may open with a prompt's messages and attached
//! resources ([`prompt_messages`], [`attach_resource`]).

mod approval;
mod config;
mod conversation;
mod driver;
mod execute;
mod machine;
mod opening;
mod outcome;
mod paused;
mod record;
mod search;
mod spans;
mod transcript;

pub use approval::{PendingCall, PendingRound, RoundError};
pub use config::{
    DEFAULT_MAX_MEDIA_BYTES, DynamicTools, OnMaxIterations, OverLimitPolicy, RunnerConfig,
    ToolSearch, ToolSelection,
};
pub use conversation::Conversation;
pub use driver::{ToolRunner, UpdateParams};
// The state machine's steps (`LoopState`, `Plan`, `Verdict`, ...) are the
// driver's business, not an embedder's: only why a run stopped is public.
pub use machine::StopReason;
pub use opening::{
    OpeningError, attach_resource, message_of_resource, messages_of_prompt, prompt_messages,
};
pub use outcome::{
    CallRecord, CallStatus, Iteration, RequestInfo, RunError, RunErrorKind, RunItem, RunOutcome,
};
pub use transcript::{
    MEDIA_TRANSCRIPT_FORMAT, PAUSED_TRANSCRIPT_FORMAT, TRANSCRIPT_FORMAT, Transcript,
    TranscriptError,
};

#[cfg(test)]
mod tests;
