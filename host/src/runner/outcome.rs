//! What a run yields: one [`Iteration`] per model response, then a
//! [`RunOutcome`] or a [`RunError`].

use serde::Serialize;

use super::approval::{PendingRound, RoundError};
use super::machine::StopReason;
pub use super::record::{CallRecord, CallStatus};
use crate::llm::InvariantError;
use crate::llm::{AssistantMessage, FinishReason, LlmError, Message, ToolCall, Usage};
use crate::tools::{SessionId, ToolSpec};

/// One model response and what was done with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    /// 1-based number of the model request in this run; 0 for the round a
    /// resumed run starts with ([`ToolRunner::resume`](super::ToolRunner::resume)),
    /// which this run did not request.
    pub number: u32,
    /// Whether this was the tool-less request of
    /// [`OnMaxIterations::FinalAnswer`](super::OnMaxIterations).
    pub final_answer: bool,
    /// The assistant message as stored.
    pub message: AssistantMessage,
    /// One record per call of the stored message, in call order.
    pub calls: Vec<CallRecord>,
    /// Calls removed from the message before it was stored.
    pub dropped: Vec<ToolCall>,
    /// Tokens of this request.
    pub usage: Usage,
    /// Why the model stopped generating.
    pub finish_reason: FinishReason,
}

/// One item of the [`ToolRunner`](super::ToolRunner) stream.
#[derive(Debug, Clone, PartialEq)]
pub enum RunItem {
    /// A round is done: the response is stored and its calls answered.
    Iteration(Iteration),
    /// The run is over; always the last item of a run that did not fail.
    Finished(RunOutcome),
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// The whole conversation, the initial messages included. It always
    /// satisfies the tool-call invariant.
    pub messages: Vec<Message>,
    /// How many of `messages` the run started with (the history it was
    /// given); the rest were added during the run
    /// ([`added`](Self::added)).
    pub history_len: usize,
    /// The text of the last assistant message stored during this run
    /// ([`final_message`](Self::final_message)). Empty if that message had
    /// none (e.g. after `Stop` at the iteration cap), and empty when the run
    /// stored none: it ended before the model's first reply (an error, a
    /// response refused under `over_limit = fail`), and the stop reason
    /// says why. Never the text of an assistant message in the history.
    pub final_text: String,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// Rounds with tools enabled (the `FinalAnswer` request is not counted).
    pub iterations: u32,
    /// Tool calls admitted for execution (a call that `on_tool_call`
    /// refused was admitted, and counts against `max_total_calls`).
    pub tool_calls: u64,
    /// Tokens over all requests.
    pub usage: Usage,
    /// The session of the run's tool calls: pass it to
    /// [`ToolRunner::with_session`](super::ToolRunner::with_session) to
    /// continue a run made with
    /// [`keep_session`](super::ToolRunner::keep_session).
    pub session: SessionId,
    /// The round that waits for decisions, when the run paused
    /// ([`StopReason::AwaitingApproval`]); not in `messages` until it is
    /// answered. Save it with [`Transcript::from_outcome`](super::Transcript::from_outcome)
    /// and continue with [`ToolRunner::resume`](super::ToolRunner::resume).
    pub pending: Option<PendingRound>,
}

impl RunOutcome {
    /// The messages added during this run (responses, tool results,
    /// pushed messages), oldest first.
    pub fn added(&self) -> &[Message] {
        self.messages.get(self.history_len..).unwrap_or_default()
    }

    /// The last assistant message stored during this run; `None` when the
    /// run ended before the model's first reply was stored.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        final_message(self.added())
    }
}

/// The last assistant message of `messages`.
pub(super) fn final_message(messages: &[Message]) -> Option<&AssistantMessage> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a),
        _ => None,
    })
}

/// What [`ToolRunner::on_request`](super::ToolRunner::on_request) is told
/// about the coming model request.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    /// 1-based number of the request in this run.
    pub number: u32,
    /// Whether this is the tool-less request of
    /// [`OnMaxIterations::FinalAnswer`](super::OnMaxIterations): its tool
    /// choice is `None`, whatever the callback sets.
    pub final_answer: bool,
    /// The conversation the request sends.
    pub messages: &'a [Message],
    /// The tools it offers.
    pub tools: &'a [ToolSpec],
}

/// A run that ended with an error. The conversation so far is kept in
/// [`outcome`](Self::outcome) (with [`StopReason::OverLimit`] or
/// [`StopReason::Error`]).
#[derive(Debug)]
pub struct RunError {
    /// What went wrong.
    pub kind: RunErrorKind,
    /// Everything up to the error.
    pub outcome: Box<RunOutcome>,
}

impl RunError {
    /// The conversation up to the error.
    pub fn messages(&self) -> &[Message] {
        &self.outcome.messages
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

impl RunErrorKind {
    /// A short name of the kind, for a trace's `error.type`.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Self::Provider { .. } => "provider",
            Self::OverLimit { .. } => "over_limit",
            Self::Invariant(_) => "invariant",
            Self::AlreadyFinished => "already_finished",
            Self::Decision { .. } => "decision",
            Self::Round(_) => "round",
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

/// What ended a run with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunErrorKind {
    /// The model request failed (after the provider's retries).
    #[error("the model request of iteration {iteration} failed")]
    Provider {
        /// The 1-based request number.
        iteration: u32,
        /// The provider's error.
        #[source]
        source: LlmError,
    },
    /// A response asked for more calls than allowed under
    /// [`OverLimitPolicy::Fail`](super::OverLimitPolicy).
    #[error(
        "the model asked for {count} tool calls in one response, over the limit of {limit} \
         (over_limit = fail); raise max_calls_per_response or use the decline policy"
    )]
    OverLimit {
        /// Calls in the response.
        count: usize,
        /// The limit.
        limit: usize,
        /// The rejected response (not stored in the conversation).
        response: Box<AssistantMessage>,
    },
    /// The conversation broke the tool-call invariant, so the request was
    /// not sent. This is a bug (or messages pushed with
    /// [`ToolRunner::push_messages`](super::ToolRunner::push_messages)
    /// that break it).
    #[error("internal error: the conversation breaks the tool-call invariant, request not sent")]
    Invariant(#[source] InvariantError),
    /// The runner was awaited after its stream had already ended; the
    /// outcome was the stream's last item.
    #[error("the run already ended; its outcome was the last item of its stream")]
    AlreadyFinished,
    /// A decision was given for a call that does not wait for one
    /// ([`ToolRunner::decide`](super::ToolRunner::decide)).
    #[error(
        "a decision was given for call `{id}`, which does not wait for approval{}",
        waiting_list(waiting)
    )]
    Decision {
        /// The call id of the decision.
        id: String,
        /// The ids of the calls that do wait.
        waiting: Vec<String>,
    },
    /// The paused round given to [`ToolRunner::resume`](super::ToolRunner::resume)
    /// is not well formed (e.g. two calls with one id); none of its calls
    /// ran.
    #[error("the paused round cannot be resumed: {0}")]
    Round(RoundError),
}

fn waiting_list(waiting: &[String]) -> String {
    if waiting.is_empty() {
        "; this run resumes no paused round (resume a paused transcript)".to_owned()
    } else {
        format!("; the calls that wait are: {}", waiting.join(", "))
    }
}
