//! Calls that wait for a person: the gate every call of a round passes
//! before any of them runs, and the paused round ([`PendingRound`]) a run
//! ends with while a call waits for a decision.
//!
//! A round pauses as a whole: no call of it runs until every call that
//! needs approval is decided, so its results still come in call order and
//! the round is answered once, by one run, whether it was paused or not.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::conversation::error_result;
use super::record::{CallRecord, CallStatus};
use crate::approval::{ApprovalPolicy, ApprovalRequest, Approver, Decision, Denial};
use crate::llm::{AssistantMessage, ToolCall};
use crate::tools::{Content, ExecOverrides, QuestionSink, ToolErrorKind, ToolSet};

/// `ToolRunner::on_tool_call`: decides each call that needs approval.
pub(super) type OnToolCall = Arc<dyn Fn(&ToolCall) -> Decision + Send + Sync>;

/// A model response whose calls wait for decisions: the round a paused run
/// ([`StopReason::AwaitingApproval`](super::StopReason)) ends with, and
/// [`ToolRunner::resume`](super::ToolRunner::resume) continues from
/// without asking the model again. It is saved in a
/// [`Transcript`](super::Transcript) with the messages before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRound {
    /// The model's response, as it will be stored once its calls are
    /// answered.
    pub message: AssistantMessage,
    /// One entry per call of `message`, in call order.
    pub calls: Vec<PendingCall>,
}

/// Where one call of a [`PendingRound`] stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PendingCall {
    /// It runs when the round does: it needs no approval, or has it.
    Ready {
        /// The call's id.
        id: String,
    },
    /// It waits for a decision.
    Awaiting {
        /// The call's id.
        id: String,
    },
    /// It is answered: declined by a cap, not offered, or refused; or,
    /// in a round paused on a task, it ran to its end.
    Answered {
        /// The call's id.
        id: String,
        /// How it was handled.
        status: CallStatus,
        /// The error's kind.
        error_kind: Option<ToolErrorKind>,
        /// The result the model will see.
        content: String,
        /// The images and audio of a call that ran, as the model will see
        /// them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<Content>,
    },
    /// It runs as task `task` of its tool's source, which outlived the
    /// run's [`task_pause`](super::RunnerConfig::task_pause): a resumed run
    /// follows the task to its end, without calling the tool again.
    Running {
        /// The call's id.
        id: String,
        /// The task's id at the tool's source.
        task: String,
    },
}

impl PendingCall {
    /// The call's id.
    pub fn id(&self) -> &str {
        match self {
            Self::Ready { id }
            | Self::Awaiting { id }
            | Self::Answered { id, .. }
            | Self::Running { id, .. } => id,
        }
    }
}

impl PendingRound {
    /// The calls that wait for a decision, in call order: what to show a
    /// person.
    pub fn awaiting(&self) -> Vec<ApprovalRequest> {
        self.calls
            .iter()
            .filter(|c| matches!(c, PendingCall::Awaiting { .. }))
            .filter_map(|c| self.call(c.id()))
            .map(request)
            .collect()
    }

    /// The calls that run as tasks, in call order: the call and its task.
    pub fn running(&self) -> Vec<(&ToolCall, &str)> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                PendingCall::Running { id, task } => Some((self.call(id)?, task.as_str())),
                _ => None,
            })
            .collect()
    }

    fn call(&self, id: &str) -> Option<&ToolCall> {
        self.message.tool_calls.iter().find(|c| c.id == id)
    }

    /// Whether it is well formed: one entry per call of the message, in
    /// the same order, call ids unique, a call answered in it only as
    /// declined, unavailable or refused (or, in a round that waits on a
    /// task, as having run), and at least one call waiting for a decision
    /// or a task.
    ///
    /// Well formed is not trusted: whoever can write a saved round can
    /// write a well-formed one. [`ToolRunner::resume`](super::ToolRunner::resume)
    /// checks it too, and takes no approval from it.
    ///
    /// # Errors
    ///
    /// [`RoundError`], what is wrong.
    pub fn check(&self) -> Result<(), RoundError> {
        let ids = self.message.tool_calls.iter().map(|c| c.id.as_str());
        if !ids.eq(self.calls.iter().map(PendingCall::id)) {
            return Err(RoundError::Mismatch);
        }
        let on_task = self
            .calls
            .iter()
            .any(|c| matches!(c, PendingCall::Running { .. }));
        let mut seen = std::collections::BTreeSet::new();
        for call in &self.calls {
            if !seen.insert(call.id()) {
                return Err(RoundError::DuplicateId(
                    crate::text::escape_controls(call.id()).into_owned(),
                ));
            }
            if let PendingCall::Answered { id, status, .. } = call
                && !matches!(
                    status,
                    CallStatus::Declined | CallStatus::Unavailable | CallStatus::Refused
                )
                && !(on_task && matches!(status, CallStatus::Succeeded | CallStatus::Failed))
            {
                return Err(RoundError::AnsweredAs {
                    id: crate::text::escape_controls(id).into_owned(),
                    status: *status,
                });
            }
        }
        if !on_task
            && !self
                .calls
                .iter()
                .any(|c| matches!(c, PendingCall::Awaiting { .. }))
        {
            return Err(RoundError::NothingWaits);
        }
        Ok(())
    }
}

/// Why a paused round ([`PendingRound`]) is not well formed: it is
/// refused before any of its calls runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// Its calls are not those of its message, one each, in order.
    #[error("its calls are not those of its message, in order")]
    Mismatch,
    /// Two of its calls have one id (escaped for display).
    #[error("two of its calls have the id `{0}`, and the calls of a round have unique ids")]
    DuplicateId(String),
    /// A call is answered in it with a status a paused round never gives
    /// (only declined, unavailable and refused calls are answered before
    /// the round runs).
    #[error(
        "call `{id}` is answered in it as {status:?}, and a paused round answers a call only as declined, unavailable or refused (or as run, when it waits on a task)"
    )]
    AnsweredAs {
        /// The call's id (escaped for display).
        id: String,
        /// The status it is answered with.
        status: CallStatus,
    },
    /// No call of it waits for a decision or a task: it is not a paused
    /// round.
    #[error("no call of it waits for a decision or a task")]
    NothingWaits,
}

fn request(call: &ToolCall) -> ApprovalRequest {
    ApprovalRequest {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// How one call passes the gate.
#[derive(Debug)]
pub(super) enum Gate {
    /// Run it: it needs no approval.
    Run,
    /// Run it: it needed approval and has it, given in this run. A round
    /// that pauses keeps no approval: saved, such a call waits again.
    Approved,
    /// Answer it with this record, without running it.
    Answered(Box<CallRecord>),
    /// Wait for a decision.
    Awaiting,
    /// Follow this task, which an earlier run of the call left running,
    /// to its end: the tool is not called again.
    Follow(String),
}

/// A record for a call answered without running.
pub(super) fn answered(
    call: &ToolCall,
    status: CallStatus,
    kind: Option<ToolErrorKind>,
    content: String,
) -> CallRecord {
    CallRecord {
        call: call.clone(),
        result: error_result(&call.id, &call.name, content),
        status,
        error_kind: kind,
        duration: Duration::ZERO,
        options: None,
        attempts: 0,
    }
}

/// Who decides, and the decisions given up front: a run's approval
/// settings.
#[derive(Clone, Default)]
pub(super) struct Approval {
    /// The async approver, if any.
    pub approver: Option<Arc<dyn Approver>>,
    /// The sync callback, if any: asked about every call.
    pub on_tool_call: Option<OnToolCall>,
    /// Decisions by call id, for the round a resumed run starts with
    /// only: that round takes them all at its start, so that no later
    /// call (whose id the model chose) ever meets one.
    pub decisions: BTreeMap<String, Decision>,
    /// Who answers the tools' own questions for the user, if anyone.
    pub questions: Option<QuestionSink>,
}

impl Approval {
    /// Whether `call` (routed to registry name `target`) needs a decision:
    /// every call when an `on_tool_call` callback is set, else those the
    /// run's policy names or whose tool asks for it.
    pub fn needs(
        &self,
        policy: &ApprovalPolicy,
        run_options: &ExecOverrides,
        tools: &ToolSet,
        call: &ToolCall,
        target: &str,
    ) -> bool {
        self.on_tool_call.is_some()
            || policy.requires(&call.name)
            || tools.needs_approval(target, policy, run_options)
    }

    /// The gate of a call that needs a decision: `given` (a decision for
    /// it given up front), else the callback's or the approver's, else it
    /// waits.
    pub async fn ask(&self, call: &ToolCall, given: Option<Decision>) -> Gate {
        let decision = if let Some(decision) = given {
            decision
        } else if let Some(on_tool_call) = &self.on_tool_call {
            on_tool_call(call)
        } else if let Some(approver) = &self.approver {
            approver.decide(request(call)).await
        } else {
            Decision::Defer
        };
        match decision {
            Decision::Approve => Gate::Approved,
            Decision::Deny(denial) => Gate::Answered(Box::new(refused(call, &denial))),
            // `Decision` is non-exhaustive; anything else is not an approval.
            _ => Gate::Awaiting,
        }
    }
}

/// The record of a call a person (or the host) refused.
pub(super) fn refused(call: &ToolCall, denial: &Denial) -> CallRecord {
    answered(
        call,
        CallStatus::Refused,
        Some(ToolErrorKind::PermissionDenied),
        denial.to_result_text(),
    )
}

/// The paused round of `message` whose calls passed `gates`. A call
/// approved in this run waits again in it: an approval is not kept in a
/// saved round, where anyone who can write the file could forge one.
pub(super) fn pending_round(message: AssistantMessage, gates: Vec<Gate>) -> PendingRound {
    let calls = message
        .tool_calls
        .iter()
        .zip(gates)
        .map(|(call, gate)| match gate {
            Gate::Run => PendingCall::Ready {
                id: call.id.clone(),
            },
            Gate::Approved | Gate::Awaiting => PendingCall::Awaiting {
                id: call.id.clone(),
            },
            Gate::Answered(record) => answered_call(*record),
            Gate::Follow(task) => PendingCall::Running {
                id: call.id.clone(),
                task,
            },
        })
        .collect();
    PendingRound { message, calls }
}

/// A call answered by `record`, as a paused round keeps it.
pub(super) fn answered_call(record: CallRecord) -> PendingCall {
    PendingCall::Answered {
        id: record.call.id,
        status: record.status,
        error_kind: record.error_kind,
        content: record.result.content,
        parts: record.result.parts,
    }
}

/// The record of a call a paused round answers (`status`, `content`,
/// `parts`): an error result unless it ran and succeeded.
pub(super) fn kept(
    call: &ToolCall,
    status: CallStatus,
    kind: Option<ToolErrorKind>,
    content: String,
    parts: Vec<Content>,
) -> CallRecord {
    let mut record = answered(call, status, kind, content);
    if status == CallStatus::Succeeded {
        record.result.is_error = false;
    }
    record.result.parts = parts;
    record
}
