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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::json;
use toolhost::approval::ApprovalPolicy;
use toolhost::fsread;
use toolhost::llm::{Message, ProviderKind, ProviderOptions, ResponseLimits, check_messages};
use toolhost::runner::{
    CallRecord, CallStatus, OnMaxIterations, OverLimitPolicy, RunOutcome, RunnerConfig, StopReason,
    ToolRunner, Transcript,
};
use toolhost::text::{
    escape_controls, escape_controls_indented, escape_controls_keep_lines, escape_json_controls,
};
use toolhost::tools::CallLog;

use super::generation::GenerationArgs;
use super::progress::CallProgress;
use super::run_approval::{ApprovalArgs, CliApprover, report_pending};
use super::run_question;
use super::{ChainDisplay, EXIT_FAILED, ExecArgs, PluginArgs, UsageError};

/// Exit code of a run that paused: a call waits for approval, and the
/// transcript holds the round (`--resume FILE --approve-call CALL_ID`).
pub const EXIT_AWAITING_APPROVAL: u8 = 3;

/// Which provider to talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// OpenAI Chat Completions, or any compatible server with --base-url
    /// (DeepSeek, vLLM, Ollama, llama.cpp, LiteLLM).
    Openai,
    /// OpenAI Responses (/v1/responses): nothing stored by OpenAI, reasoning
    /// carried back encrypted.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini generateContent.
    Gemini,
    /// Play a recorded conversation (--replay FILE); no key, no network.
    Replay,
}

impl From<ProviderArg> for ProviderKind {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::Openai => Self::OpenAi,
            ProviderArg::OpenaiResponses => Self::OpenAiResponses,
            ProviderArg::Anthropic => Self::Anthropic,
            ProviderArg::Gemini => Self::Gemini,
            ProviderArg::Replay => Self::Replay,
        }
    }
}

/// `--over-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverLimitArg {
    /// Run the first K calls, answer the others "not executed: limit K".
    Decline,
    /// Run the first K calls, remove the others from the conversation.
    Drop,
    /// Stop with an error.
    Fail,
}

/// `--on-max-iterations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnMaxIterationsArg {
    /// Stop.
    Stop,
    /// Ask once more with tools disabled, for a final answer.
    FinalAnswer,
}

/// `toolhost run PROMPT ...`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to ask the model. Optional with --resume: a paused run
    /// continues without one.
    #[arg(required_unless_present = "resume")]
    pub prompt: Option<String>,
    /// The wire format to speak.
    #[arg(long, value_enum)]
    pub provider: ProviderArg,
    /// API root (default: the provider's own; for OpenAI-compatible servers
    /// e.g. http://127.0.0.1:8080/v1 or https://api.deepseek.com).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The model (default: an inexpensive one of the provider).
    #[arg(long)]
    pub model: Option<String>,
    /// The API key. Default, for the provider's own host only (exact match,
    /// HTTPS): OPENAI_API_KEY (DEEPSEEK_API_KEY for https://api.deepseek.com),
    /// ANTHROPIC_API_KEY, GEMINI_API_KEY; for another base URL, OPENAI_API_KEY
    /// (ANTHROPIC_API_KEY) only when OPENAI_BASE_URL (ANTHROPIC_BASE_URL)
    /// names that same URL.
    #[arg(long, hide_env_values = true, conflicts_with = "api_key_env")]
    pub api_key: Option<String>,
    /// Read the API key from this environment variable, for whatever base
    /// URL is given (a local server, a proxy).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The recording to play with --provider replay.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// The model takes no images: images that tools return go to it as a
    /// text stand-in naming their type and size (without this, that
    /// happens from the first answer saying it takes no image input).
    #[arg(long)]
    pub text_only: bool,
    /// The most bytes of a whole (not streamed) answer read (default 16 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = ResponseLimits::default().max_body_bytes)]
    pub max_body_bytes: usize,
    /// The most bytes of one streamed event, or of one line of a stream,
    /// read (default 4 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = ResponseLimits::default().max_event_bytes)]
    pub max_event_bytes: usize,
    /// The most bytes of one whole stream read (default 64 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = ResponseLimits::default().max_stream_bytes)]
    pub max_stream_bytes: usize,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Start from the messages in FILE, before PROMPT: a JSON array of
    /// neutral messages (a system prompt, few-shot examples), as in a
    /// transcript's "messages".
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
    /// Continue the conversation saved with --transcript FILE: its messages,
    /// then PROMPT. Tool state (stateful plugins) is not carried over.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["messages", "system"])]
    pub resume: Option<PathBuf>,
    /// Model/tool rounds at most.
    #[arg(long, default_value_t = RunnerConfig::default().max_iterations)]
    pub max_iterations: u32,
    /// Tool calls executed from one response at most (default: unlimited).
    #[arg(long, value_name = "K")]
    pub max_calls_per_response: Option<usize>,
    /// What to do with the calls past --max-calls-per-response.
    #[arg(long, value_enum, default_value_t = OverLimitArg::Decline)]
    pub over_limit: OverLimitArg,
    /// Tool calls executed across the run at most (default: unlimited).
    #[arg(long, value_name = "N")]
    pub max_total_calls: Option<u64>,
    /// What to do when the rounds are used up.
    #[arg(long, value_enum, default_value_t = OnMaxIterationsArg::Stop)]
    pub on_max_iterations: OnMaxIterationsArg,
    /// Run the calls of one response one after the other.
    #[arg(long)]
    pub sequential: bool,
    /// Stream the answer (SSE); its text is shown on stderr as it arrives.
    #[arg(long)]
    pub stream: bool,
    /// Write the whole conversation as neutral JSON to FILE (also on error).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Print a JSON summary on stdout:
    /// {"final", "stop_reason", "iterations", "tool_calls", "usage", "calls"}
    /// where each of "calls" has the call's effective options and attempts;
    /// "final" is null when the run ended before the model's first reply.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub generation: GenerationArgs,
    #[command(flatten)]
    pub approval: ApprovalArgs,
    #[command(flatten)]
    pub plugins: PluginArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Append one JSON line per tool call to FILE (created readable by you
    /// only): {"tool", "version"?, "session", "started_unix_ms",
    /// "duration_ms", "status", "error_kind", "attempts"}. No inputs or
    /// outputs unless --log-io.
    #[arg(long, value_name = "FILE")]
    pub log_calls: Option<PathBuf>,
    /// With --log-calls, also write each call's input and output (each
    /// clipped to 4 KiB). They may hold secrets the model or a tool saw.
    #[arg(long, requires = "log_calls")]
    pub log_io: bool,
}

impl RunArgs {
    /// The runner config the flags describe.
    fn config(&self) -> Result<RunnerConfig, UsageError> {
        Ok(RunnerConfig {
            max_iterations: self.max_iterations,
            max_calls_per_response: self.max_calls_per_response,
            over_limit: match self.over_limit {
                OverLimitArg::Decline => OverLimitPolicy::Decline,
                OverLimitArg::Drop => OverLimitPolicy::Drop,
                OverLimitArg::Fail => OverLimitPolicy::Fail,
            },
            max_total_calls: self.max_total_calls,
            parallel: !self.sequential,
            on_max_iterations: match self.on_max_iterations {
                OnMaxIterationsArg::Stop => OnMaxIterations::Stop,
                OnMaxIterationsArg::FinalAnswer => OnMaxIterations::FinalAnswer,
            },
            stream: self.stream,
            tool_options: self.exec.overrides(),
            generation: self.generation.params()?,
            ..RunnerConfig::default()
        })
    }

    /// The base URL: the flag, else the SDKs' variable for it
    /// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), else the provider's own.
    fn base_url(&self, kind: ProviderKind) -> Option<String> {
        self.base_url.clone().or_else(|| {
            let (var, _) = kind.base_url_env()?;
            env_value(var)
        })
    }

    /// The API key for `base_url`, and a note of where it came from.
    ///
    /// An environment key is only sent where it belongs: the provider's own
    /// host (matched exactly), or the base URL its SDK pair variable names.
    /// Anything else needs `--api-key` or `--api-key-env`.
    fn api_key(
        &self,
        kind: ProviderKind,
        base_url: Option<&str>,
    ) -> anyhow::Result<Option<String>> {
        if let Some(key) = &self.api_key {
            return Ok(Some(key.clone()));
        }
        if let Some(var) = &self.api_key_env {
            return env_value(var).map(Some).ok_or_else(|| {
                anyhow::anyhow!("--api-key-env {var}: the variable is not set (or empty); export it or pass another")
            });
        }
        let official = kind.api_key_env(base_url);
        if let Some(key) = official.iter().find_map(|var| env_value(var)) {
            return Ok(Some(key));
        }
        if let (Some(url), Some((url_var, key_var))) = (base_url, kind.base_url_env())
            && env_value(url_var).is_some_and(|paired| same_url(&paired, url))
        {
            return Ok(env_value(key_var));
        }
        Ok(None)
    }
}

impl RunArgs {
    /// What the run starts from: the transcript for `--resume` (with the
    /// prompt after its messages, unless it paused on a round), else
    /// `--system`, the messages of `--messages`, then the prompt.
    fn start(&self) -> anyhow::Result<Transcript> {
        if let Some(path) = &self.resume {
            let mut transcript =
                Transcript::load(path).with_context(|| format!("--resume {}", path.display()))?;
            if transcript.messages.is_empty() && transcript.pending.is_none() {
                bail!(
                    "--resume {}: the transcript has no messages: there is nothing to resume",
                    path.display()
                );
            }
            match (&self.prompt, &transcript.pending) {
                (Some(_), Some(_)) => bail!(
                    "--resume {}: the run paused waiting for approval; resume it without a                      PROMPT (decide with --approve-call/--deny-call CALL_ID), then ask the next question",
                    path.display()
                ),
                (None, None) => bail!(
                    "--resume {}: the run did not pause; give a PROMPT to continue the conversation",
                    path.display()
                ),
                (Some(prompt), None) => transcript.messages.push(Message::user(prompt.clone())),
                (None, Some(_)) => {}
            }
            return Ok(transcript);
        }
        let mut start: Vec<Message> = self.system.iter().map(Message::system).collect();
        if let Some(path) = &self.messages {
            start.extend(
                read_messages(path).with_context(|| format!("--messages {}", path.display()))?,
            );
        }
        start.extend(self.prompt.iter().map(|p| Message::user(p.clone())));
        Ok(Transcript::new(start))
    }
}

/// A `--messages` file: a JSON array of neutral messages that keep the
/// tool-call invariant.
fn read_messages(path: &Path) -> anyhow::Result<Vec<Message>> {
    let text =
        fsread::read_text(path, fsread::TRANSCRIPT_MAX_BYTES, None).context("cannot open it")?;
    let value: serde_json::Value = serde_json::from_str(&text).context("not valid JSON")?;
    let messages: Vec<Message> =
        serde_json::from_value(value).context("expected a JSON array of messages")?;
    check_messages(&messages).context(
        "the messages break the tool-call invariant (every tool call is answered by one tool \
         result right after it); fix the file",
    )?;
    Ok(messages)
}

/// A set, non-empty environment variable.
fn env_value(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// Whether two base URLs are the same, trailing slashes aside.
fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Run `toolhost run`.
///
/// # Errors
///
/// Configuration problems ([`UsageError`], exit 2). A failed run is not an
/// `Err`: it is reported on stderr (and in `--json`) with exit code 1.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let kind = ProviderKind::from(args.provider);
    if args.replay.is_some() && kind != ProviderKind::Replay {
        return Err(UsageError(anyhow::anyhow!("--replay needs --provider replay")).into());
    }
    let base_url = args.base_url(kind);
    let api_key = args
        .api_key(kind, base_url.as_deref())
        .map_err(UsageError)?;
    let config = args.config()?;
    let provider = kind
        .build(ProviderOptions {
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
        .context("cannot set up the provider")
        .map_err(UsageError)?;
    let start = args.start().map_err(UsageError)?;
    // The toolbox holds the plugins' sandbox and the MCP servers while the
    // loop runs.
    let (registry, toolbox) = args.plugins.load_registry().await?;
    let mut config = config;
    config.approval = toolbox
        .host()
        .config()
        .approval
        .and(&ApprovalPolicy::requiring(
            args.approval.require_approval.iter().cloned(),
        ));
    if let Some(path) = &args.log_calls {
        registry.set_log(Some(Arc::new(call_log(path, args.log_io)?)));
    }
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
    let seen = Arc::clone(&calls);
    let on_result = progress.clone();
    let on_iteration = progress.clone();
    // The live line of calls that report progress (a terminal only).
    let live = CallProgress::new(args.plugins.quiet_progress());
    let live_result = live.clone();
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
    let mut runner = runner
        .on_tool_result(move |record| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(call_summary(record));
            }
            let what = match record.status {
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
            };
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
    if args.stream {
        let stream = progress.clone();
        runner = runner.on_text(move |text| stream.text(text));
    }
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
    let paused = outcome.stop_reason == StopReason::AwaitingApproval;
    if paused {
        report_pending(&outcome, args.transcript.as_deref());
    } else if outcome.final_message().is_none() {
        eprintln!("no answer: the run ended before the model's first reply");
    }
    if let Some(path) = &args.transcript {
        write_transcript(path, &outcome, error.as_deref())?;
    }
    progress.line(format_args!(
        "stopped: {} after {} iteration(s), {} tool call(s)",
        outcome.stop_reason, outcome.iterations, outcome.tool_calls
    ));
    if args.json {
        let mut summary = summary(&outcome);
        summary["calls"] = json!(*calls.lock().unwrap_or_else(|e| e.into_inner()));
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

/// What `run` writes on stderr as it goes: progress lines (none with
/// `-q`, which leaves errors only) and the streamed answer (`--stream`
/// asked for it, so it is shown with `-q` too). A line never starts where
/// streamed text left off: the text's line is ended first.
#[derive(Clone)]
struct Progress {
    quiet: bool,
    /// Whether streamed text left the cursor mid-line.
    mid_line: Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    fn new(quiet: bool) -> Self {
        Self {
            quiet,
            mid_line: Arc::default(),
        }
    }

    fn line(&self, line: std::fmt::Arguments<'_>) {
        // Also with `-q`: the texts of two replies stay on lines of their own.
        self.end_line();
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    fn text(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(escape_controls_keep_lines(text).as_bytes());
        let _ = err.flush();
        self.mid_line
            .store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
    }

    /// End the streamed text's line, if it left one open.
    fn end_line(&self) {
        if self
            .mid_line
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!();
        }
    }
}

/// The `--json` object. `"final"` is this run's answer only: `null` when
/// the run stored no reply (never the resumed history's last answer).
fn summary(outcome: &RunOutcome) -> serde_json::Value {
    json!({
        "final": outcome.final_message().map(|m| m.content.as_str()),
        "stop_reason": outcome.stop_reason.as_str(),
        "iterations": outcome.iterations,
        "tool_calls": outcome.tool_calls,
        "usage": outcome.usage,
    })
}

/// The `--log-calls` log: a small ring (the file is the record) whose sink
/// appends each entry to `path` as one JSON line.
fn call_log(path: &Path, io: bool) -> anyhow::Result<CallLog> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(path)
        .with_context(|| format!("--log-calls: cannot open {}", path.display()))
        .map_err(UsageError)?;
    let file = std::sync::Mutex::new(file);
    let warned = std::sync::atomic::AtomicBool::new(false);
    let shown = path.display().to_string();
    let log = CallLog::new(256, 256 * 1024).with_sink(move |entry| {
        let Ok(line) = serde_json::to_string(entry) else {
            return;
        };
        let line = escape_json_controls(&line).into_owned() + "\n";
        let written = file
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written
            && !warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!("toolhost: cannot write the call log to {shown}: {e}");
        }
    });
    Ok(if io { log.with_io(4096) } else { log })
}

/// One entry of `--json`'s `"calls"`: what was called, how it went, and
/// the effective options it ran under (`null` when it was not run).
fn call_summary(record: &CallRecord) -> serde_json::Value {
    json!({
        "name": record.call.name,
        "id": record.call.id,
        "status": record.status,
        "error_kind": record.error_kind,
        "duration_ms": u64::try_from(record.duration.as_millis()).unwrap_or(u64::MAX),
        "attempts": record.attempts,
        "options": record.options,
    })
}

/// The run's [`Transcript`], with the run's error: what `--resume` reads.
fn write_transcript(path: &Path, outcome: &RunOutcome, error: Option<&str>) -> anyhow::Result<()> {
    let mut transcript = Transcript::from_outcome(outcome);
    transcript.error = error.map(str::to_owned);
    transcript
        .save(path)
        .with_context(|| format!("cannot write the transcript to {}", path.display()))
}
