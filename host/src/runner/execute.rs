//! Executing the calls of one response: approval, bounded concurrency,
//! timings, results in call order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::RunnerConfig;
use super::conversation::error_result;
use super::outcome::{CallRecord, CallStatus, Iteration, RequestInfo};
use crate::llm::{GenerationParams, ToolCall, ToolResult, media};
use crate::tools::{
    CallContext, CallReport, Content, ExecOverrides, Progress, ProgressSink, TaskHandoff,
    ToolError, ToolErrorKind, ToolSet,
};

pub(super) type OnIteration = Arc<dyn Fn(&Iteration) + Send + Sync>;
pub(super) type OnToolResult = Arc<dyn Fn(&CallRecord) + Send + Sync>;
pub(super) type OnText = Arc<dyn Fn(&str) + Send + Sync>;
pub(super) type OnRequest = Arc<dyn Fn(&RequestInfo<'_>, &mut GenerationParams) + Send + Sync>;
pub(super) type OnProgress = Arc<dyn Fn(&ToolCall, &Progress) + Send + Sync>;

/// The callbacks of a run.
#[derive(Clone, Default)]
pub(super) struct Callbacks {
    pub on_iteration: Option<OnIteration>,
    pub on_tool_result: Option<OnToolResult>,
    pub on_text: Option<OnText>,
    pub on_request: Option<OnRequest>,
    pub on_progress: Option<OnProgress>,
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

/// How one call of a round ended.
pub(super) enum Done {
    /// Answered: it ran, or a record answered it.
    Record(CallRecord),
    /// It runs on as task `task` of its tool's source, past the run's
    /// [`task_pause`](RunnerConfig::task_pause).
    Running {
        /// The call.
        call: ToolCall,
        /// The task's id at the source.
        task: String,
    },
}

/// The records of a round every call of which was answered; the round as
/// it is when a call runs on as a task.
pub(super) fn answered(done: Vec<Done>) -> Result<Vec<CallRecord>, Vec<Done>> {
    if done.iter().any(|d| matches!(d, Done::Running { .. })) {
        return Err(done);
    }
    Ok(done
        .into_iter()
        .filter_map(|d| match d {
            Done::Record(record) => Some(record),
            Done::Running { .. } => None,
        })
        .collect())
}

/// What answers one call of a round.
pub(super) enum Slot {
    /// This record, without running anything.
    Answered(Box<CallRecord>),
    /// The call, run now.
    Run,
    /// The task an earlier run of the call left running, followed to its
    /// end (the tool is not called again).
    Follow(String),
}

/// How a call's job ended.
enum Ended {
    Report(CallReport),
    Running(String),
}

/// Answer every call of a response, in call order: run those without a
/// record (at most the config's concurrency at once, each on its own
/// task, its progress going to `on_progress`); the others are answered by
/// their record. A call whose slot follows a task picks it up instead of
/// calling the tool again. Under a [`task_pause`](RunnerConfig::task_pause),
/// a call its source runs as a task that is still running then is left to
/// run on.
pub(super) async fn run_round(
    tools: &Arc<ToolSet>,
    cx: &CallContext,
    routes: &BTreeMap<String, String>,
    config: &RunnerConfig,
    calls: &[ToolCall],
    slots: Vec<Slot>,
    callbacks: &Callbacks,
) -> Vec<Done> {
    let jobs: Vec<(ToolCall, Option<String>)> = calls
        .iter()
        .zip(&slots)
        .filter_map(|(call, slot)| match slot {
            Slot::Answered(_) => None,
            Slot::Run => Some((call.clone(), None)),
            Slot::Follow(task) => Some((call.clone(), Some(task.clone()))),
        })
        .collect();
    let mut executed = futures::stream::iter(jobs)
        .map(|(call, follow)| {
            let tools = Arc::clone(tools);
            let mut cx = cx.clone();
            cx.call_id = Some(call.id.clone());
            if let Some(on_progress) = &callbacks.on_progress {
                let on_progress = Arc::clone(on_progress);
                let call = call.clone();
                cx.progress = Some(ProgressSink::new(move |p| on_progress(&call, &p)));
            }
            let target = routes
                .get(&call.name)
                .cloned()
                .unwrap_or_else(|| call.name.clone());
            let pause = config.task_pause;
            cx.handoff = match follow {
                Some(task) => Some(TaskHandoff::resuming(task)),
                None => pause.map(|_| TaskHandoff::new()),
            };
            AbortOnDrop(tokio::spawn(async move {
                let started = Instant::now();
                let report = tools.call(&target, &call.arguments, &cx);
                let ended = match (pause, &cx.handoff) {
                    (Some(after), Some(handoff)) => tokio::select! {
                        report = report => Ended::Report(report),
                        task = running_past(handoff, after) => Ended::Running(task),
                    },
                    _ => Ended::Report(report.await),
                };
                (call, ended, started.elapsed())
            }))
        })
        .buffered(config.concurrency().max(1));
    let budget = config.max_media_bytes;
    let mut records = Vec::with_capacity(slots.len());
    for (slot, call) in slots.into_iter().zip(calls) {
        let done = match slot {
            Slot::Answered(done) => *done,
            Slot::Run | Slot::Follow(_) => match executed.next().await {
                Some(Ok((call, Ended::Report(report), duration))) => {
                    executed_record(call, report, duration, budget)
                }
                Some(Ok((call, Ended::Running(task), _))) => {
                    records.push(Done::Running { call, task });
                    continue;
                }
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
                    budget,
                ),
                None => executed_record(
                    call.clone(),
                    lost(
                        &cx.overrides,
                        ToolError::failed("internal error: the call was lost"),
                    ),
                    Duration::ZERO,
                    budget,
                ),
            },
        };
        if let Some(on_result) = &callbacks.on_tool_result {
            on_result(&done);
        }
        records.push(Done::Record(done));
    }
    records
}

/// The task of a call that still runs as one `after` it began, detached:
/// the call, dropped next, leaves it running. Detached here, before this
/// future ends, since `select!` drops the call before its handler runs.
async fn running_past(handoff: &TaskHandoff, after: Duration) -> String {
    tokio::time::sleep(after).await;
    let task = handoff.running().await;
    handoff.detach();
    task
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

pub(super) fn executed_record(
    call: ToolCall,
    report: CallReport,
    duration: Duration,
    media_budget: usize,
) -> CallRecord {
    let CallReport {
        output,
        content,
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
                parts: media_parts(content, media_budget),
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

/// The images and audio of a result, in order, for the model: while their
/// bytes stay within `budget`, as they are; one that would go past it, a
/// text stand-in.
/// Text and resource parts are left out: a result of content only already
/// carries them in its text (the content's stand-ins), and a structured
/// result is its value.
fn media_parts(content: Vec<Content>, budget: usize) -> Vec<Content> {
    let mut spent = 0usize;
    content
        .into_iter()
        .filter_map(|part| match part {
            Content::Image {
                ref media_type,
                ref data,
            }
            | Content::Audio {
                ref media_type,
                ref data,
            } => {
                if spent.saturating_add(data.len()) <= budget {
                    spent += data.len();
                    Some(part)
                } else {
                    let why = format!(
                        "over the limit of {budget} bytes of images and audio per tool result"
                    );
                    Some(Content::Text {
                        text: media::stand_in(media_type, data.len(), &why),
                    })
                }
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_past_the_budget_becomes_a_stand_in_and_text_parts_stay_out() {
        let image = |n: usize| Content::Image {
            media_type: "image/png".into(),
            data: vec![1; n],
        };
        let parts = media_parts(
            vec![
                image(60),
                Content::Text {
                    text: "in the JSON text already".into(),
                },
                image(50),
                image(40),
            ],
            100,
        );
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], image(60));
        assert_eq!(
            parts[1],
            Content::Text {
                text: "[image/png, 50 bytes, not shown: over the limit of 100 bytes of images and \
                       audio per tool result]"
                    .into()
            }
        );
        assert_eq!(parts[2], image(40), "a later part that fits still goes");
    }
}
