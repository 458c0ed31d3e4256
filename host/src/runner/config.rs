//! [`RunnerConfig`]: every knob of the loop, with its default and why.

use std::num::NonZeroUsize;
use std::time::Duration;

use crate::approval::{ApprovalPolicy, ToolPattern};
use crate::llm::GenerationParams;
use crate::tools::ExecOverrides;

/// Which registry tools the model is offered in every request (the run's
/// *base* tools; [`DynamicTools`] come on top).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolSelection {
    /// Every tool in the registry.
    #[default]
    All,
    /// Only these names. A name the registry does not know is skipped.
    Named(Vec<String>),
    /// No base tools (only dynamic ones, if any).
    None,
}

/// What to do with the calls of one response past
/// [`RunnerConfig::max_calls_per_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverLimitPolicy {
    /// End the run with an error that names the count and the limit. The
    /// offending response is returned in the error, not stored, so the
    /// conversation stays valid.
    Fail,
    /// Execute the first N calls and remove the rest from the stored
    /// assistant message, as if the model had never asked for them.
    Drop,
    /// Execute the first N calls, keep the rest and answer each with an
    /// error result "not executed: limit of N tool calls per response". The
    /// default, because the model learns why and can ask again.
    #[default]
    Decline,
}

impl OverLimitPolicy {
    /// The stable snake_case name, as the CLI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "fail",
            Self::Drop => "drop",
            Self::Decline => "decline",
        }
    }
}

/// What happens when [`RunnerConfig::max_iterations`] rounds are used up and
/// the model still wants tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMaxIterations {
    /// End with [`StopReason::MaxIterations`](super::StopReason); the
    /// conversation ends on tool results and there may be no final text.
    #[default]
    Stop,
    /// Send one last request with tools disabled
    /// ([`ToolChoice::None`](crate::llm::ToolChoice), whatever the run's
    /// [`GenerationParams::tool_choice`] or the `on_request` callback say,
    /// and no `parallel_tool_calls`), so the user gets an answer. Tool calls in that answer are removed from the stored message
    /// (they would never be answered); the stop reason is still
    /// `MaxIterations`.
    FinalAnswer,
}

/// Tools added to the base set for the coming requests, with a decorated
/// description so the model knows they are temporary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicTools {
    /// Registry names of the added tools.
    pub tool_ids: Vec<String>,
    /// How each description is shown: `{description}` is replaced by the
    /// tool's own description and `{name}` by its name, e.g.
    /// `"{description} (added for this step)"`.
    pub description_template: String,
}

/// Tools the model finds by searching instead of getting with every
/// request ([`RunnerConfig::tool_search`]). With hundreds of tools their
/// definitions cost more tokens than the conversation, and models pick the
/// wrong one more often; held back, they cost nothing until a search finds
/// them.
///
/// The base tools ([`RunnerConfig::tools`]) that match [`deferred`] are
/// held back; the model gets the others, the [`DynamicTools`], and a search
/// tool named [`tool_name`]. A search answers with the best matching held
/// back tools (names and descriptions, at most [`max_results`]), and from
/// the next request on those tools are offered too, until [`max_found`]
/// later finds push them out. A search is a call like any other: it counts
/// towards the caps, and an approval pattern that matches its name gates
/// it. What was found is read back from the conversation, so a resumed or
/// restored run offers the same tools.
///
/// With a provider that has a tool search of its own
/// ([`Provider::native_tool_search`](crate::llm::Provider::native_tool_search):
/// Anthropic's tool search tool) and [`provider_search`] on (the default),
/// the loop uses that instead: every tool is sent, those held back marked
/// deferred, the provider searches, and its search blocks stay in the
/// history ([`AssistantMessage::provider_blocks`](crate::llm::AssistantMessage)).
/// The found tools' calls are calls like any other (caps, approvals, the
/// invariant); `tool_name`, `max_results` and `max_found` are the
/// provider's then.
///
/// [`deferred`]: Self::deferred
/// [`provider_search`]: Self::provider_search
/// [`tool_name`]: Self::tool_name
/// [`max_results`]: Self::max_results
/// [`max_found`]: Self::max_found
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSearch {
    /// Name patterns (`*` wildcards) of the base tools held back until a
    /// search finds them. Default `*`: every base tool.
    pub deferred: Vec<ToolPattern>,
    /// The search tool's name, as the model sees it (it takes the place of
    /// a registry tool of that name). Default `tool_search`.
    pub tool_name: String,
    /// The most tools one search answers with. Default 5.
    pub max_results: usize,
    /// The most found tools offered at once: the most recently found ones
    /// are kept. Default 20.
    pub max_found: usize,
    /// Use the provider's own tool search where it has one. Default
    /// `true`; `false` keeps the loop's own everywhere (for a model or an
    /// Anthropic-compatible server without the tool search tool).
    pub provider_search: bool,
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self {
            deferred: vec![ToolPattern::any()],
            tool_name: crate::tools::search::TOOL_SEARCH_NAME.to_owned(),
            max_results: 5,
            max_found: 20,
            provider_search: true,
        }
    }
}

impl ToolSearch {
    /// Hold back the base tools matching `patterns`; the rest as
    /// [`Default`].
    pub fn deferring(patterns: impl IntoIterator<Item = ToolPattern>) -> Self {
        Self {
            deferred: patterns.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Whether base tool `name` is held back until found.
    pub fn defers(&self, name: &str) -> bool {
        self.deferred.iter().any(|p| p.matches(name))
    }
}

impl DynamicTools {
    /// The default template: `"{description} (added for this step)"`.
    pub const DEFAULT_TEMPLATE: &'static str = "{description} (added for this step)";

    /// `tool_ids` with the default template.
    pub fn new<I, S>(tool_ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            tool_ids: tool_ids.into_iter().map(Into::into).collect(),
            description_template: Self::DEFAULT_TEMPLATE.to_owned(),
        }
    }

    /// The description shown for tool `name` whose own description is
    /// `description`.
    pub fn decorate(&self, name: &str, description: &str) -> String {
        self.description_template
            .replace("{description}", description)
            .replace("{name}", name)
    }
}

/// Every knob of the loop. `RunnerConfig::default()` gives the documented
/// defaults; nothing else in the runner hard-codes a limit.
///
/// | knob | default | why |
/// | --- | --- | --- |
/// | `max_iterations` | 10 | the common default of peers (OpenAI Agents `max_turns`) |
/// | `max_calls_per_response` | unlimited | providers offer no "at most N"; opt in |
/// | `over_limit` | `Decline` | the model sees why a call was skipped |
/// | `max_total_calls` | unlimited | opt in |
/// | `parallel` / `max_concurrency` | on / 8 | calls of one response are independent |
/// | `on_max_iterations` | `Stop` | no hidden extra request unless asked |
/// | `max_repeated_failures` | 3 | a model repeating the same failing call twice more will not fix it |
/// | `stream` | off | whole answers are simpler to log |
/// | `tools` | all registry tools | |
/// | `dynamic_tools` | none | |
/// | `tool_search` | none | every base tool is sent; set it for hundreds of tools |
/// | `tool_options` | no change | each tool's own [`ExecOptions`](crate::tools::ExecOptions) |
/// | `generation` | provider defaults | temperature, output cap, tool choice, ... of every request |
/// | `approval` | none | which tools' calls wait for a person; tools may also ask themselves |
/// | `max_media_bytes` | 5 MB | images and audio of one tool result sent to the model (Anthropic's limit per image) |
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerConfig {
    /// Model↔tool rounds: each round is one model request plus the
    /// execution of its calls. Default 10.
    pub max_iterations: u32,
    /// Tool calls executed from one response; `None` is unlimited
    /// (the default).
    pub max_calls_per_response: Option<usize>,
    /// What to do with the calls past `max_calls_per_response`
    /// (default [`OverLimitPolicy::Decline`]).
    pub over_limit: OverLimitPolicy,
    /// Tool calls executed across the whole run; `None` is unlimited (the
    /// default). Calls past it are declined (or dropped under
    /// [`OverLimitPolicy::Drop`]) and the run ends with
    /// [`StopReason::MaxTotalCalls`](super::StopReason) after that round.
    pub max_total_calls: Option<u64>,
    /// Run the calls of one response concurrently (default true).
    pub parallel: bool,
    /// At most this many calls at once when `parallel` (default 8).
    pub max_concurrency: NonZeroUsize,
    /// What to do when the rounds are used up (default
    /// [`OnMaxIterations::Stop`]).
    pub on_max_iterations: OnMaxIterations,
    /// Stop with [`StopReason::RepeatedFailure`](super::StopReason) after
    /// this many identical failing calls in a row (same tool, same
    /// arguments up to JSON formatting, same error). Default 3; `None`
    /// never stops for this.
    pub max_repeated_failures: Option<NonZeroUsize>,
    /// Ask the provider to stream (SSE) its answers (default false).
    pub stream: bool,
    /// The base tools offered in every request (default all).
    pub tools: ToolSelection,
    /// Tools added on top of the base ones (default none).
    pub dynamic_tools: Option<DynamicTools>,
    /// Base tools held back until the model finds them with a search tool
    /// (default none: every base tool is sent with every request).
    pub tool_search: Option<ToolSearch>,
    /// Changes to every tool's [`ExecOptions`](crate::tools::ExecOptions)
    /// for the calls of this run (an outer timeout, retries). Default: none;
    /// each tool keeps its own. A timeout never lengthens a plugin's
    /// sandbox deadline: the smaller one ends the call.
    pub tool_options: ExecOverrides,
    /// The generation parameters of every request of the run (temperature,
    /// output cap, stop sequences, seed, tool choice, provider-specific
    /// `extra`). Default: none set, the provider's defaults. Change them for
    /// one request with
    /// [`ToolRunner::on_request`](super::ToolRunner::on_request), from the
    /// next request on with
    /// [`ToolRunner::set_params`](super::ToolRunner::set_params). A
    /// `tool_choice` of `Required` or a named tool makes every request end in
    /// a call, so such a run only ends at a cap: set it per request, or use
    /// [`OnMaxIterations::FinalAnswer`] for a last answer in text.
    pub generation: GenerationParams,
    /// Which tools' calls need approval before they run, by name pattern
    /// (the operator's `[approval] require`, the run's own). A tool that
    /// declares `needs_approval` needs it too. Default: none. Who decides:
    /// [`ToolRunner::approver`](super::ToolRunner::approver); without one,
    /// such a call pauses the run.
    pub approval: ApprovalPolicy,
    /// The most bytes of images and audio of one tool result that the loop
    /// keeps for the model (default [`DEFAULT_MAX_MEDIA_BYTES`], 5 MB,
    /// Anthropic's limit for one image). A part that would go past it is
    /// replaced by a text stand-in naming its media type and size; the
    /// result's text is always kept.
    pub max_media_bytes: usize,
    /// How long the loop waits for a call that its source runs as a task
    /// (an `[[mcp]]` server's MCP task, [`TaskHandoff`](crate::tools::TaskHandoff))
    /// before it pauses the run on it
    /// ([`StopReason::AwaitingTask`](super::StopReason::AwaitingTask)):
    /// the task runs on at its source, the round's finished calls keep
    /// their results, and [`ToolRunner::resume`](super::ToolRunner::resume)
    /// picks the task up, without calling the tool again. A call that is no
    /// task is always waited for. Default `None`: wait for every call to
    /// its end.
    pub task_pause: Option<Duration>,
}

/// The default of [`RunnerConfig::max_media_bytes`]: 5 MB.
pub const DEFAULT_MAX_MEDIA_BYTES: usize = 5_000_000;

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_calls_per_response: None,
            over_limit: OverLimitPolicy::Decline,
            max_total_calls: None,
            parallel: true,
            max_concurrency: NonZeroUsize::new(8).unwrap_or(NonZeroUsize::MIN),
            on_max_iterations: OnMaxIterations::Stop,
            max_repeated_failures: NonZeroUsize::new(3),
            stream: false,
            tools: ToolSelection::All,
            dynamic_tools: None,
            tool_search: None,
            tool_options: ExecOverrides::default(),
            generation: GenerationParams::default(),
            approval: ApprovalPolicy::default(),
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
            task_pause: None,
        }
    }
}

impl RunnerConfig {
    /// How many calls of one response may run at once under this config.
    pub fn concurrency(&self) -> usize {
        if self.parallel {
            self.max_concurrency.get()
        } else {
            1
        }
    }
}
