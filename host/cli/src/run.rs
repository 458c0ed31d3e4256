//! `toolhost run`: the capped tool loop from the command line.
//!
//! The final answer goes to stdout; progress (iterations, tool calls with
//! timings) to stderr. `--transcript FILE` writes the whole conversation as
//! provider-neutral JSON, also when the run fails, and `--resume FILE`
//! continues from one; `--json` prints a summary object instead of the bare
//! answer.
//!
//! A call that needs approval is asked about on the terminal; without one,
//! it is refused unless `--approve` covers it, or, with `--transcript`, the
//! run pauses (exit code [`EXIT_AWAITING_APPROVAL`]) and continues with
//! `--resume FILE --approve-call CALL_ID`.

mod args;
mod output;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;
use toolhost::approval::ApprovalPolicy;
use toolhost::llm::{ProviderKind, ProviderOptions, ResponseLimits};
use toolhost::runner::{CallRecord, CallStatus, RunOutcome, StopReason, ToolRunner};
use toolhost::text::{
    escape_controls, escape_controls_indented, escape_controls_keep_lines, escape_json_controls,
};
use toolhost::tools::Observability;

pub use args::RunArgs;
use output::{Progress, call_log, call_summary, summary, write_transcript};

use super::progress::CallProgress;
use super::run_approval::{CliApprover, report_pending};
use super::run_question;
use super::{ChainDisplay, EXIT_FAILED, UsageError};

/// Exit code of a run that paused: a call waits for approval, and the
/// transcript holds the round (`--resume FILE --approve-call CALL_ID`).
pub const EXIT_AWAITING_APPROVAL: u8 = 3;

/// Run `toolhost run`.
///
/// # Errors
///
/// Configuration problems ([`UsageError`], exit 2). A failed run is not an
/// `Err`: it is reported on stderr (and in `--json`) with exit code 1.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let kind = ProviderKind::from(args.provider);
    let options = provider_options(&args, kind)?;
    let config = args.config()?;
    let provider = kind
        .build(options)
        .context("cannot set up the provider")
        .map_err(UsageError)?;
    let mut start = args.start().map_err(UsageError)?;
    // The toolbox holds the plugins' sandbox and the MCP servers while the
    // loop runs.
    let log = match &args.log_calls {
        Some(path) => Some(Arc::new(call_log(path, args.log_io)?)),
        None => None,
    };
    let toolbox = args
        .plugins
        .load_observed(None, false, |_| match log {
            Some(log) => Observability::new().log(log),
            None => Observability::new(),
        })
        .await?;
    let registry = Arc::clone(toolbox.registry());
    args.open(&mut start, registry.offers()).await?;
    let mut config = config;
    config.approval = toolbox
        .host()
        .config()
        .approval
        .and(&ApprovalPolicy::requiring(
            args.approval.require_approval.iter().cloned(),
        ));
    let names: Vec<String> = registry.snapshot().keys().collect();
    let progress = Progress::new(args.plugins.quiet_progress());
    progress.line(format_args!(
        "toolhost: {} with {} tool(s){}{}",
        provider.name(),
        names.len(),
        if names.is_empty() { "" } else { ": " },
        escape_controls(&names.join(", "))
    ));
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The live line of calls that report progress (a terminal only).
    let live = CallProgress::new(args.plugins.quiet_progress());
    let flags = args
        .approval
        .sort(start.pending.as_ref(), &names)
        .map_err(UsageError)?;
    let decisions = flags.decisions.clone();
    let approver = CliApprover::new(flags, args.transcript.is_some());
    let mut runner = ToolRunner::resume(provider, registry, config, start).approver(approver);
    for (id, decision) in decisions {
        runner = runner.decide(id, decision);
    }
    // A tool's questions go to the person at the terminal; without one,
    // the tool hears that no one can be asked.
    if let Some(answerer) = run_question::terminal_answerer() {
        runner = runner.answerer(answerer);
    }
    let runner = with_progress(runner, &progress, &live, &calls, args.stream);
    let result = runner.await;
    live.clear();
    let (outcome, error) = match result {
        Ok(outcome) => (outcome, None),
        Err(e) => {
            let message = ChainDisplay(&e).to_string();
            (*e.outcome, Some(message))
        }
    };
    progress.end_line();
    let calls = std::mem::take(&mut *calls.lock().unwrap_or_else(|e| e.into_inner()));
    report(&args, &progress, &outcome, error, calls)
}

/// What the flags say about provider `kind`: its address, key and limits.
fn provider_options(args: &RunArgs, kind: ProviderKind) -> anyhow::Result<ProviderOptions> {
    if args.replay.is_some() && kind != ProviderKind::Replay {
        return Err(UsageError(anyhow::anyhow!("--replay needs --provider replay")).into());
    }
    let base_url = args.base_url(kind);
    let api_key = args
        .api_key(kind, base_url.as_deref())
        .map_err(UsageError)?;
    Ok(ProviderOptions {
        base_url,
        model: args.model.clone(),
        api_key,
        replay_file: args.replay.clone(),
        limits: ResponseLimits {
            max_body_bytes: args.max_body_bytes,
            max_event_bytes: args.max_event_bytes,
            max_stream_bytes: args.max_stream_bytes,
        },
        text_only: args.text_only,
    })
}

/// `runner`, showing its progress on stderr: a line per call result (whose
/// summary also goes to `calls`, for `--json`) and per iteration, the live
/// line of calls that report progress, and with `stream` the answer's
/// text as it comes.
fn with_progress(
    runner: ToolRunner,
    progress: &Progress,
    live: &CallProgress,
    calls: &Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    stream: bool,
) -> ToolRunner {
    let seen = Arc::clone(calls);
    let on_result = progress.clone();
    let on_iteration = progress.clone();
    let live_result = live.clone();
    let mut runner = runner
        .on_tool_result(move |record| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(call_summary(record));
            }
            let what = call_result(record);
            // The name and id are the model's text: shown escaped.
            live_result.finish(&record.call.id, || {
                on_result.line(format_args!(
                    "  tool {} [{}] {what}",
                    escape_controls(&record.call.name),
                    escape_controls(&record.call.id)
                ));
            });
        })
        .on_iteration(move |it| {
            let label = if it.final_answer {
                "final answer"
            } else {
                "iteration"
            };
            on_iteration.line(format_args!(
                "{label} {}: {} tool call(s){}, {} in / {} out tokens",
                it.number,
                it.calls.len(),
                if it.dropped.is_empty() {
                    String::new()
                } else {
                    format!(", {} dropped", it.dropped.len())
                },
                it.usage.input_tokens,
                it.usage.output_tokens
            ));
        });
    if live.is_live() {
        let live = live.clone();
        runner = runner.on_progress(move |call, p| live.report(&call.id, &call.name, p));
    }
    if stream {
        let stream = progress.clone();
        runner = runner.on_text(move |text| stream.text(text));
    }
    runner
}

/// How a call's result is shown on its progress line.
fn call_result(record: &CallRecord) -> String {
    match record.status {
        CallStatus::Succeeded => format!("ok in {:.1?}", record.duration),
        // What the model is told, a traceback's lines included:
        // shown indented under the call's line.
        CallStatus::Failed => format!(
            "failed ({}) in {:.1?}: {}",
            record.error_kind.map_or("error", |k| k.as_str()),
            record.duration,
            escape_controls_indented(&record.result.content, "      ")
        ),
        CallStatus::Declined => "declined (over a limit)".to_owned(),
        CallStatus::Unavailable => "not available".to_owned(),
        CallStatus::Refused => {
            format!("refused: {}", escape_controls(&record.result.content))
        }
        _ => "not run".to_owned(),
    }
}

/// Report how the run ended: a pause or a missing answer on stderr, the
/// transcript to its file, then the answer (or with `--json` the summary,
/// with the `calls` made) on stdout, and the exit code.
fn report(
    args: &RunArgs,
    progress: &Progress,
    outcome: &RunOutcome,
    error: Option<String>,
    calls: Vec<serde_json::Value>,
) -> anyhow::Result<ExitCode> {
    let paused = matches!(
        outcome.stop_reason,
        StopReason::AwaitingApproval | StopReason::AwaitingTask
    );
    if paused {
        report_pending(outcome, args.transcript.as_deref());
    } else if outcome.final_message().is_none() {
        eprintln!("no answer: the run ended before the model's first reply");
    }
    if let Some(path) = &args.transcript {
        write_transcript(path, outcome, error.as_deref())?;
    }
    progress.line(format_args!(
        "stopped: {} after {} iteration(s), {} tool call(s)",
        outcome.stop_reason, outcome.iterations, outcome.tool_calls
    ));
    if args.json {
        let mut summary = summary(outcome);
        summary["calls"] = json!(calls);
        if let Some(error) = &error {
            summary["error"] = json!(error);
        }
        if let Some(round) = &outcome.pending {
            summary["pending"] = json!(round.awaiting());
        }
        println!("{}", escape_json_controls(&summary.to_string()));
    } else if !outcome.final_text.is_empty() {
        // The answer may quote tool output: line breaks stay, escape
        // sequences do not reach the terminal.
        println!("{}", escape_controls_keep_lines(&outcome.final_text));
    }
    match error {
        Some(error) => {
            eprintln!("error: {}", escape_controls(&error));
            Ok(ExitCode::from(EXIT_FAILED))
        }
        None if paused => Ok(ExitCode::from(EXIT_AWAITING_APPROVAL)),
        None => Ok(ExitCode::SUCCESS),
    }
}
