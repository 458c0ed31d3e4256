//! `toolhost run`'s flags, and what they mean: the runner config, the
//! provider's base URL and key (from the flags or the provider SDKs'
//! variables), and the messages the run starts from.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use toolhost::approval::ToolPattern;
use toolhost::fsread;
use toolhost::llm::{Message, ProviderKind, ResponseLimits, check_messages};
use toolhost::runner::{OnMaxIterations, OverLimitPolicy, RunnerConfig, ToolSearch, Transcript};

use crate::generation::GenerationArgs;
use crate::run_approval::ApprovalArgs;
use crate::{ExecArgs, PluginArgs, UsageError};

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
    /// What to ask the model. Optional with --resume (a paused run
    /// continues without one) and with --prompt NAME (whose messages it
    /// follows, as a user message, when given).
    #[arg(required_unless_present_any = ["resume", "prompt_name"])]
    pub prompt: Option<String>,
    /// Open the run with the messages of prompt NAME, as `toolhost prompt`
    /// lists it (a prompt of an `[[mcp]]` server in the host config).
    #[arg(long = "prompt", value_name = "NAME", conflicts_with = "resume")]
    pub prompt_name: Option<String>,
    /// An argument of --prompt NAME, KEY=VALUE (repeatable).
    #[arg(
        long = "arg",
        value_name = "KEY=VALUE",
        value_parser = crate::offers::parse_arg,
        requires = "prompt_name"
    )]
    pub prompt_args: Vec<(String, String)>,
    /// Attach the content of resource URI (as `toolhost resources` lists
    /// it) as a user message, after the prompt's messages and before
    /// PROMPT: text, or an image (repeatable).
    #[arg(long, value_name = "URI", conflicts_with = "resume")]
    pub attach: Vec<String>,
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
    /// Hold back the tools matching PATTERN (`*` wildcards; repeat for
    /// more) until the model finds them with a search tool, `tool_search`:
    /// for hundreds of tools, whose definitions would cost more tokens than
    /// the conversation. `--defer-tools '*'` holds back every one. With
    /// `--provider anthropic` the API's own tool search tool does the
    /// searching (see --own-tool-search).
    #[arg(long, value_name = "PATTERN")]
    pub defer_tools: Vec<ToolPattern>,
    /// With --defer-tools, search with toolhost's own `tool_search` even
    /// where the provider has a tool search of its own (Anthropic): for a
    /// model or an Anthropic-compatible server without it.
    #[arg(long, requires = "defer_tools")]
    pub own_tool_search: bool,
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
    pub(super) fn config(&self) -> Result<RunnerConfig, UsageError> {
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
            tool_search: (!self.defer_tools.is_empty()).then(|| ToolSearch {
                provider_search: !self.own_tool_search,
                ..ToolSearch::deferring(self.defer_tools.iter().cloned())
            }),
            tool_options: self.exec.overrides(),
            generation: self.generation.params()?,
            ..RunnerConfig::default()
        })
    }

    /// The base URL: the flag, else the SDKs' variable for it
    /// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), else the provider's own.
    pub(super) fn base_url(&self, kind: ProviderKind) -> Option<String> {
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
    pub(super) fn api_key(
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

mod opening;

impl RunArgs {
    /// What the run starts from: the transcript for `--resume` (with the
    /// prompt after its messages, unless it paused on a round), else
    /// `--system`, the messages of `--messages`, then the prompt.
    pub(super) fn start(&self) -> anyhow::Result<Transcript> {
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
