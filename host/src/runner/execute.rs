//! Executing the calls of one response: approval, bounded concurrency,
//! timings, results in call order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::conversation::error_result;
use super::machine::Disposition;
use super::outcome::{CallRecord, CallStatus, Iteration, RequestInfo};
use crate::llm::{GenerationParams, ToolCall, ToolResult};
use crate::tools::{CallContext, CallReport, ExecOverrides, ToolError, ToolErrorKind, ToolSet};

/// What the `on_tool_call` callback decides about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Run it.
    Allow,
    /// Do not run it; the model gets a `permission_denied` error result
    /// with this reason.
    Refuse(String),
}

pub(super) type OnIteration = Arc<dyn Fn(&Iteration) + Send + Sync>;
pub(super) type OnToolCall = Arc<dyn Fn(&ToolCall) -> ToolCallDecision + Send + Sync>;
pub(super) type OnToolResult = Arc<dyn Fn(&CallRecord) + Send + Sync>;
pub(super) type OnText = Arc<dyn Fn(&str) + Send + Sync>;
pub(super) type OnRequest = Arc<dyn Fn(&RequestInfo<'_>, &mut GenerationParams) + Send + Sync>;

/// The callbacks of a run.
#[derive(Clone, Default)]
pub(super) struct Callbacks {
    pub on_iteration: Option<OnIteration>,
    pub on_tool_call: Option<OnToolCall>,
    pub on_tool_result: Option<OnToolResult>,
    pub on_text: Option<OnText>,
    pub on_request: Option<OnRequest>,
}

/// A spawned task that is aborted when its handle is dropped, so a run
/// dropped mid-round leaves no tool running.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

fn record(
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

/// Answer every call of a response, in call order: run the `Execute` ones
/// (at most `concurrency` at once, each on its own task), answer the others
/// with an error result.
pub(super) async fn run_round(
    tools: &Arc<ToolSet>,
    cx: &CallContext,
    routes: &BTreeMap<String, String>,
    concurrency: usize,
    calls: &[ToolCall],
    dispositions: Vec<Disposition>,
    callbacks: &Callbacks,
) -> Vec<CallRecord> {
    let mut slots: Vec<Option<CallRecord>> = Vec::with_capacity(calls.len());
    let mut jobs = Vec::new();
    for (call, disposition) in calls.iter().zip(dispositions) {
        let slot = match disposition {
            Disposition::Decline(message) => {
                Some(record(call, CallStatus::Declined, None, message))
            }
            Disposition::Unavailable(message) => Some(record(
                call,
                CallStatus::Unavailable,
                Some(ToolErrorKind::UnknownTool),
                message,
            )),
            Disposition::Execute => {
                let decision = match &callbacks.on_tool_call {
                    Some(approve) => approve(call),
                    None => ToolCallDecision::Allow,
                };
                match decision {
                    ToolCallDecision::Allow => {
                        jobs.push(call.clone());
                        None
                    }
                    ToolCallDecision::Refuse(reason) => Some(record(
                        call,
                        CallStatus::Refused,
                        Some(ToolErrorKind::PermissionDenied),
                        format!("permission_denied: the host refused this call: {reason}"),
                    )),
                }
            }
        };
        slots.push(slot);
    }
    let mut executed = futures::stream::iter(jobs)
        .map(|call| {
            let tools = Arc::clone(tools);
            let cx = cx.clone();
            let target = routes
                .get(&call.name)
                .cloned()
                .unwrap_or_else(|| call.name.clone());
            AbortOnDrop(tokio::spawn(async move {
                let started = Instant::now();
                let report = tools.call_detailed(&target, &call.arguments, &cx).await;
                (call, report, started.elapsed())
            }))
        })
        .buffered(concurrency.max(1));
    let mut records = Vec::with_capacity(slots.len());
    for (slot, call) in slots.into_iter().zip(calls) {
        let done = match slot {
            Some(done) => done,
            None => match executed.next().await {
                Some(Ok((call, report, duration))) => executed_record(call, report, duration),
                Some(Err(join)) => executed_record(
                    call.clone(),
                    lost(
                        &cx.overrides,
                        ToolError::new(
                            ToolErrorKind::Trap,
                            format!("tool `{}` panicked or was cancelled: {join}", call.name),
                        ),
                    ),
                    Duration::ZERO,
                ),
                None => executed_record(
                    call.clone(),
                    lost(
                        &cx.overrides,
                        ToolError::failed("internal error: the call was lost"),
                    ),
                    Duration::ZERO,
                ),
            },
        };
        if let Some(on_result) = &callbacks.on_tool_result {
            on_result(&done);
        }
        records.push(done);
    }
    records
}

/// The report of a call whose task ended without one.
fn lost(overrides: &ExecOverrides, error: ToolError) -> CallReport {
    CallReport {
        output: Err(error),
        content: Vec::new(),
        structured: false,
        options: crate::tools::ExecOptions::default().with(overrides),
        attempts: 0,
    }
}

fn executed_record(call: ToolCall, report: CallReport, duration: Duration) -> CallRecord {
    let CallReport {
        output,
        options,
        attempts,
        ..
    } = report;
    let (result, status, error_kind) = match output {
        Ok(value) => (
            ToolResult {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: value.to_string(),
                is_error: false,
            },
            CallStatus::Succeeded,
            None,
        ),
        Err(e) => (
            // "kind: message", so the model sees the stable kind.
            error_result(&call.id, &call.name, e.to_string()),
            CallStatus::Failed,
            Some(e.kind),
        ),
    };
    CallRecord {
        call,
        result,
        status,
        error_kind,
        duration,
        options: Some(options),
        attempts,
    }
}
