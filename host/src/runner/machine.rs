//! The loop's decisions, without I/O.
//!
//! [`LoopState`] decides what happens next: ask the model, which calls of a
//! response to execute, decline or drop, and when to stop. The driver
//! ([`ToolRunner`](super::ToolRunner)) performs the requests and calls and
//! reports back. Nothing here is async or touches the network, so every cap
//! is unit- and property-tested without HTTP.

use std::num::NonZeroUsize;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{OnMaxIterations, OverLimitPolicy, RunnerConfig};
use crate::llm::{AssistantMessage, ToolCall, dedupe_call_ids};

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without tool calls.
    Completed,
    /// `max_iterations` rounds were used (with `FinalAnswer`, after the last
    /// tool-less request).
    MaxIterations,
    /// A call was refused because `max_total_calls` were already made.
    MaxTotalCalls,
    /// The same call failed the same way `max_repeated_failures` times in a
    /// row.
    RepeatedFailure,
    /// A response had more calls than `max_calls_per_response` under
    /// [`OverLimitPolicy::Fail`] (the run ends with an error).
    OverLimit,
    /// The run ended with an error (provider, or an internal invariant
    /// violation).
    Error,
    /// A call needs approval and no decision came: the run paused on that
    /// round ([`RunOutcome::pending`](super::RunOutcome::pending)) and is
    /// continued with [`ToolRunner::resume`](super::ToolRunner::resume).
    AwaitingApproval,
    /// A call runs as a task of its source that outlived
    /// [`RunnerConfig::task_pause`](super::RunnerConfig::task_pause): the
    /// run paused on that round ([`RunOutcome::pending`](super::RunOutcome::pending),
    /// its calls [`PendingCall::Running`](super::PendingCall::Running))
    /// and is continued with [`ToolRunner::resume`](super::ToolRunner::resume),
    /// which follows the task to its end.
    AwaitingTask,
}

impl StopReason {
    /// The stable snake_case name, e.g. `"max_iterations"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxIterations => "max_iterations",
            Self::MaxTotalCalls => "max_total_calls",
            Self::RepeatedFailure => "repeated_failure",
            Self::OverLimit => "over_limit",
            Self::Error => "error",
            Self::AwaitingApproval => "awaiting_approval",
            Self::AwaitingTask => "awaiting_task",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the driver must do next, before a model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send a request.
    Request {
        /// Whether this is the `FinalAnswer` request after the cap, with
        /// tools disabled ([`ToolChoice::None`](crate::llm::ToolChoice::None)).
        final_answer: bool,
    },
    /// The run is over.
    Finish(StopReason),
}

/// What happens to one call of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Run it.
    Execute,
    /// Answer with this error message, do not run it: over a cap.
    Decline(String),
    /// Answer with this error message, do not run it: not offered now.
    Unavailable(String),
}

/// The decision about one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// One disposition per call left in the (changed) message, in call
    /// order.
    pub dispositions: Vec<Disposition>,
    /// Calls removed from the message (by [`OverLimitPolicy::Drop`], or
    /// because tools were disabled for the final answer).
    pub dropped: Vec<ToolCall>,
    /// What happens after this response.
    pub verdict: Verdict,
}

/// What happens after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Store the message, handle its calls, ask the model again.
    Continue,
    /// Store the message (it has no calls left) and stop.
    Stop(StopReason),
    /// Do not store the message; end with an error: more calls than the
    /// limit under [`OverLimitPolicy::Fail`].
    OverLimit {
        /// Calls in the response.
        count: usize,
        /// The limit.
        limit: usize,
    },
}

/// How one call of a round ended, as the driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome<'a> {
    /// It ran and returned an output.
    Succeeded,
    /// It failed (ran and failed, was unavailable, or was refused); the
    /// text is the error the model was shown.
    Failed(&'a str),
    /// It was declined by a cap of ours.
    Declined,
}

/// What the driver reports about one call of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallReport<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// How it ended.
    pub outcome: CallOutcome<'a>,
}

/// The loop's counters and the decisions over them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopState {
    iterations: u32,
    total_calls: u64,
    final_requested: bool,
    pending_stop: Option<StopReason>,
    streak: Option<(FailureKey, usize)>,
    finished: Option<StopReason>,
}

/// One failing call, compared for repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FailureKey {
    name: String,
    arguments: String,
    error: String,
}

impl LoopState {
    /// A run that has not started.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rounds with tools enabled so far (the `FinalAnswer` request is not
    /// one).
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Tool calls executed so far.
    pub fn total_calls(&self) -> u64 {
        self.total_calls
    }

    /// What to do before the next model request.
    pub fn next(&mut self, config: &RunnerConfig) -> Next {
        if let Some(reason) = self.finished {
            return Next::Finish(reason);
        }
        if let Some(reason) = self.pending_stop.take() {
            return self.finish(reason);
        }
        if self.iterations < config.max_iterations {
            return Next::Request {
                final_answer: false,
            };
        }
        match config.on_max_iterations {
            OnMaxIterations::FinalAnswer if !self.final_requested => {
                self.final_requested = true;
                Next::Request { final_answer: true }
            }
            _ => self.finish(StopReason::MaxIterations),
        }
    }

    fn finish(&mut self, reason: StopReason) -> Next {
        self.finished = Some(reason);
        Next::Finish(reason)
    }

    /// Mark the run as paused, waiting for approval or a task
    /// (`reason`).
    pub fn pause(&mut self, reason: StopReason) {
        self.finished = Some(reason);
    }

    /// Mark the run as ended by an error.
    pub fn fail(&mut self, reason: StopReason) {
        self.finished = Some(reason);
    }

    /// Decide about one response: make its call ids unique
    /// ([`dedupe_call_ids`]), apply the caps, and mark calls to tools that
    /// `is_offered` rejects as unavailable. `message` is changed in place
    /// to what must be stored.
    pub fn plan(
        &mut self,
        config: &RunnerConfig,
        message: &mut AssistantMessage,
        is_offered: impl Fn(&str) -> bool,
    ) -> Plan {
        dedupe_call_ids(message);
        let mut plan = Plan {
            dispositions: Vec::new(),
            dropped: Vec::new(),
            verdict: Verdict::Continue,
        };
        if self.final_requested {
            // Tools were disabled; a call now would never be answered.
            plan.dropped = std::mem::take(&mut message.tool_calls);
            return self.stop(plan, StopReason::MaxIterations);
        }
        if message.tool_calls.is_empty() {
            self.iterations += 1;
            return self.stop(plan, StopReason::Completed);
        }
        let Some((admitted, decline_reason)) = self.admit(config, message, &mut plan) else {
            return plan;
        };
        self.iterations += 1;
        let over_budget = self.dispose(
            config,
            &message.tool_calls,
            admitted,
            &decline_reason,
            is_offered,
            &mut plan,
        );
        if !over_budget.is_empty() {
            self.pending_stop = Some(StopReason::MaxTotalCalls);
            if config.over_limit == OverLimitPolicy::Drop {
                drop_over_budget(message, &mut plan, over_budget);
            }
        }
        if message.tool_calls.is_empty() {
            // Everything was dropped: nothing to answer.
            let reason = self.pending_stop.take().unwrap_or(StopReason::Completed);
            return self.stop(plan, reason);
        }
        plan
    }

    /// Apply `max_calls_per_response`: how many of the response's calls are
    /// admitted, and the reason given to those declined past it. Calls
    /// dropped past it go to `plan.dropped`. `None` when the policy fails
    /// the run: `plan` then says so.
    fn admit(
        &mut self,
        config: &RunnerConfig,
        message: &mut AssistantMessage,
        plan: &mut Plan,
    ) -> Option<(usize, String)> {
        let count = message.tool_calls.len();
        let Some(limit) = config.max_calls_per_response.filter(|&limit| count > limit) else {
            return Some((count, String::new()));
        };
        let mut decline_reason = String::new();
        match config.over_limit {
            OverLimitPolicy::Fail => {
                self.finished = Some(StopReason::OverLimit);
                plan.verdict = Verdict::OverLimit { count, limit };
                return None;
            }
            OverLimitPolicy::Drop => plan.dropped = message.tool_calls.split_off(limit),
            OverLimitPolicy::Decline => {
                decline_reason = format!(
                    "not executed: limit of {limit} tool calls per response; \
                     ask for it again in a later response if it is still needed"
                );
            }
        }
        Some((limit, decline_reason))
    }

    /// Give each of `calls` its disposition, in call order: declined past
    /// the first `admitted`, unavailable when not offered, declined once
    /// `max_total_calls` are used, else executed (and counted). Returns the
    /// positions declined over `max_total_calls`.
    fn dispose(
        &mut self,
        config: &RunnerConfig,
        calls: &[ToolCall],
        admitted: usize,
        decline_reason: &str,
        is_offered: impl Fn(&str) -> bool,
        plan: &mut Plan,
    ) -> Vec<usize> {
        let mut budget = config
            .max_total_calls
            .map(|max| max.saturating_sub(self.total_calls));
        let mut over_budget = Vec::new();
        for (position, call) in calls.iter().enumerate() {
            let disposition = if position >= admitted {
                Disposition::Decline(decline_reason.to_owned())
            } else if !is_offered(&call.name) {
                Disposition::Unavailable(unavailable_message(&call.name))
            } else {
                match &mut budget {
                    Some(0) => {
                        over_budget.push(position);
                        Disposition::Decline(format!(
                            "not executed: limit of {} tool calls per run reached",
                            config.max_total_calls.unwrap_or_default()
                        ))
                    }
                    Some(left) => {
                        *left -= 1;
                        Disposition::Execute
                    }
                    None => Disposition::Execute,
                }
            };
            plan.dispositions.push(disposition);
        }
        self.total_calls += plan
            .dispositions
            .iter()
            .filter(|d| matches!(d, Disposition::Execute))
            .count() as u64;
        over_budget
    }
    fn stop(&mut self, mut plan: Plan, reason: StopReason) -> Plan {
        self.finished = Some(reason);
        plan.verdict = Verdict::Stop(reason);
        plan
    }

    /// Record the outcome of one round's calls, in call order; returns a
    /// stop reason if the same failing call has now repeated
    /// `max_repeated_failures` times in a row.
    ///
    /// Failed calls count (whether they ran, were unavailable or were
    /// refused); a success ends a streak; declined calls (our own caps)
    /// neither count nor end one.
    pub fn record<'a>(
        &mut self,
        config: &RunnerConfig,
        reports: impl IntoIterator<Item = CallReport<'a>>,
    ) -> Option<StopReason> {
        let limit = config.max_repeated_failures.map(NonZeroUsize::get);
        let mut hit = false;
        for report in reports {
            match report.outcome {
                CallOutcome::Succeeded => self.streak = None,
                CallOutcome::Declined => {}
                CallOutcome::Failed(error) => {
                    let key = FailureKey {
                        name: report.call.name.clone(),
                        arguments: normalize_arguments(&report.call.arguments),
                        error: error.to_owned(),
                    };
                    let n = match &self.streak {
                        Some((prev, n)) if *prev == key => n + 1,
                        _ => 1,
                    };
                    self.streak = Some((key, n));
                    if limit.is_some_and(|limit| n >= limit) {
                        hit = true;
                    }
                }
            }
        }
        if hit {
            self.pending_stop = Some(StopReason::RepeatedFailure);
            return Some(StopReason::RepeatedFailure);
        }
        None
    }
}

/// Under [`OverLimitPolicy::Drop`], move the calls at `over_budget`
/// (ascending positions) out of `message` and `plan.dispositions` into
/// `plan.dropped`. `dropped` stays in call order: these come before the
/// calls past the per-response limit.
fn drop_over_budget(message: &mut AssistantMessage, plan: &mut Plan, over_budget: Vec<usize>) {
    let mut removed = Vec::with_capacity(over_budget.len());
    for position in over_budget.into_iter().rev() {
        removed.push(message.tool_calls.remove(position));
        plan.dispositions.remove(position);
    }
    removed.reverse();
    removed.append(&mut plan.dropped);
    plan.dropped = removed;
}

/// The error result of a call of a tool not offered now.
pub(super) fn unavailable_message(name: &str) -> String {
    format!(
        "unknown_tool: tool `{name}` is not available in this step; use one of the tools listed"
    )
}

/// Arguments up to JSON formatting: parsed and written back with sorted
/// keys and no whitespace; text that is not JSON is only trimmed.
pub fn normalize_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments.trim()) {
        Ok(value) => {
            let mut out = String::new();
            crate::json::write_canonical(&value, &mut out);
            out
        }
        Err(_) => arguments.trim().to_owned(),
    }
}
