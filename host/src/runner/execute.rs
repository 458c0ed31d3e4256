//! Executing the calls of one response: approval, bounded concurrency,
//! timings, results in call order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::approval::ToolCallDecision;
use super::conversation::error_result;
use super::outcome::{CallRecord, CallStatus, Iteration, RequestInfo};
use crate::llm::{GenerationParams, ToolCall, ToolResult};
use crate::tools::{CallContext, CallReport, ExecOverrides, ToolError, ToolErrorKind, ToolSet};

pub(super) type OnIteration = Arc<dyn Fn(&Iteration) + Send + Sync>;
pub(super) type OnToolCall = Arc<dyn Fn(&ToolCall) -> ToolCallDecision + Send + Sync>;
pub(super) type OnToolResult = Arc<dyn Fn(&CallRecord) + Send + Sync>;
pub(super) type OnText = Arc<dyn Fn(&str) + Send + Sync>;
pub(super) type OnRequest = Arc<dyn Fn(&RequestInfo<'_>, &mut GenerationParams) + Send + Sync>;

/// The callbacks of a run.
#[derive(Clone, Default)]
pub(super) struct Callbacks {
    pub on_iteration: Option<OnIteration>,
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

/// Answer every call of a response, in call order: run those without a
/// record (at most `concurrency` at once, each on its own task); the others
/// are answered by their record.
pub(super) async fn run_round(
    tools: &Arc<ToolSet>,
    cx: &CallContext,
    routes: &BTreeMap<String, String>,
    concurrency: usize,
    calls: &[ToolCall],
    slots: Vec<Option<CallRecord>>,
    callbacks: &Callbacks,
) -> Vec<CallRecord> {
    let jobs: Vec<ToolCall> = calls
        .iter()
        .zip(&slots)
        .filter(|(_, slot)| slot.is_none())
        .map(|(call, _)| call.clone())
        .collect();
    let mut executed = futures::stream::iter(jobs)
        .map(|call| {
            let tools = Arc::clone(tools);
            let mut cx = cx.clone();
            cx.call_id = Some(call.id.clone());
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
