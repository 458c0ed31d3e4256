//! Tools, the registry that names them, and how one call is executed.
//!
//! A [`Tool`] is anything with a name, a description, a JSON Schema for its
//! input and an async `call`: a function in a WebAssembly plugin, a native
//! Rust function, a REST endpoint ([`rest`]), later an MCP server's tool. The
//! [`ToolRegistry`] owns every tool by name, validates each input against the
//! tool's schema *once, here*, and applies the per-tool [`ExecOptions`]
//! (timeout, retries). Everything above it (CLI, loop, MCP server) calls
//! tools only through the registry. [`search`] finds the few tools a
//! request needs among many.

mod budget;
mod error;
mod handoff;
mod log;
mod log_sink;
mod native;
mod offers;
mod options;
mod output;
mod progress;
mod question;
mod registry;
pub mod rest;
pub(crate) mod retry_after;
mod schema;
pub mod search;
pub(crate) mod secrets;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use budget::PluginBudget;
pub(crate) use budget::{check_tool, check_tools};
pub use error::{ToolError, ToolErrorKind};
pub use handoff::TaskHandoff;
pub use log::{CallLog, CallLogEntry, CallLogStatus};
pub use log_sink::{LogLevel, LogLine, LogSink};
pub use native::NativeTool;
pub use offers::{
    CompleteFn, Completion, CompletionRef, CompletionRequest, GetFn, OfferBudget, OfferError,
    Offers, PromptArg, PromptEntry, PromptMessage, PromptReply, PromptRole, PromptSpec, ReadFn,
    ReadRequest, ResourceEntry, ResourcePart, ResourceSpec, SubscribeFn, TemplateEntry,
    TemplateSpec, complete_fn, get_fn, read_fn,
};
pub use options::{Backoff, ExecError, ExecOptions, ExecOverrides, MAX_RETRY_PAUSE};
pub use output::{Content, ResourceContents, ToolAnnotations, ToolOutput};
pub use progress::{Progress, ProgressSink};
pub use question::{
    Answer, MAX_QUESTION_CHOICES, MAX_QUESTION_FIELDS, MAX_QUESTIONS_PER_CALL, Question,
    QuestionError, QuestionSink, check_answer, check_question_schema,
};
pub use registry::{
    CallInput, CallReport, Observability, RegistryError, ToolRegistry, ToolSet, is_valid_version,
};
pub use schema::{
    InputBudget, InputOverBudget, SchemaBudget, SchemaError, check_input, check_schema,
};

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name, 1 to 64 characters of `a-z A-Z 0-9 _ -`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
}

/// Where a tool comes from, for listings and error messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOrigin {
    /// A Rust function registered by the embedding program.
    Native,
    /// A WebAssembly plugin file.
    Plugin {
        /// The plugin's name (its file stem).
        plugin: String,
        /// The `.wasm` file it was loaded from.
        path: std::path::PathBuf,
    },
    /// A REST endpoint declared in data (see [`rest`]).
    Rest {
        /// The URL template.
        url: String,
        /// The file it was declared in (`toolhost.toml` or a
        /// `NAME.rest.toml`), if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<std::path::PathBuf>,
    },
    /// An MCP server declared in data (see [`mcp`](crate::mcp)).
    Mcp {
        /// The server's name.
        server: String,
    },
}

/// Identifies one conversation, so that a stateful tool keeps one instance
/// per conversation and never shares it with another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(Arc<str>);

impl Serialize for SessionId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

impl SessionId {
    /// A session named `id`.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// A fresh, random session id.
    pub fn random() -> Self {
        Self::new(format!("session-{:016x}", rand::random::<u64>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Per-call context handed to a tool.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The conversation this call belongs to. Stateful tools keep one
    /// instance per session; without a session every call is fresh.
    pub session: Option<SessionId>,
    /// Changes to the tool's [`ExecOptions`] for this call; they win over
    /// every other layer (see [`ExecOverrides`]).
    pub overrides: ExecOverrides,
    /// The span the call's `execute_tool` span continues: the model
    /// request that asked for it, or an MCP client's `traceparent`.
    pub trace_parent: Option<crate::telemetry::TraceParent>,
    /// The model's id for this call (`gen_ai.tool.call.id`), if a model
    /// asked for it.
    pub call_id: Option<String>,
    /// Where the call's progress reports go; none: nowhere.
    pub progress: Option<ProgressSink>,
    /// Who answers the call's questions for the user; none: each question
    /// gets `unavailable`.
    pub questions: Option<QuestionSink>,
    /// Who hears the call's log lines besides the host's log; none: no one.
    pub logs: Option<LogSink>,
    /// Who the call is made for, when the caller knows (an MCP server's
    /// verified principal: its subject): kept in the call log.
    pub principal: Option<String>,
    /// The call's link to the task its source may run it as (an `[[mcp]]`
    /// server's), for a caller that may stop waiting and pick it up later;
    /// none: a dropped call cancels its task. See [`TaskHandoff`].
    pub handoff: Option<TaskHandoff>,
}

impl CallContext {
    /// A context for calls inside `session`.
    pub fn in_session(session: SessionId) -> Self {
        Self {
            session: Some(session),
            ..Self::default()
        }
    }

    /// The same context with `overrides` for the tool's options.
    #[must_use]
    pub fn with_overrides(mut self, overrides: ExecOverrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// The same context with its progress reports going to `sink`.
    #[must_use]
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// The same context with its questions for the user going to `sink`.
    #[must_use]
    pub fn with_questions(mut self, sink: QuestionSink) -> Self {
        self.questions = Some(sink);
        self
    }

    /// The same context with its log lines (at the sink's level and above)
    /// also going to `sink`.
    #[must_use]
    pub fn with_logs(mut self, sink: LogSink) -> Self {
        self.logs = Some(sink);
        self
    }
}

/// Something the model can call.
///
/// Implementors get an input that already matches [`ToolSpec::input_schema`]
/// (the registry validated it) and return a [`ToolOutput`]: a structured
/// JSON value, content parts (images, audio, text, resources), or both. A
/// tool that answers JSON only returns `Ok(value.into())`.
///
/// # Examples
///
/// ```
/// use futures::future::BoxFuture;
/// use serde_json::{Value, json};
/// use toolhost::tools::{CallContext, Tool, ToolError, ToolOutput, ToolSpec};
///
/// struct Clock(ToolSpec);
///
/// impl Tool for Clock {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     fn call(&self, _: Value, _: &CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
///         Box::pin(async { Ok(json!({"time": "12:00"}).into()) })
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name, description and input schema.
    fn spec(&self) -> &ToolSpec;

    /// Run the tool once, and answer everything it has: the structured
    /// value and any content parts.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] whose kind says what went wrong; the loop shows it to
    /// the model.
    fn call(
        &self,
        input: Value,
        cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;

    /// The JSON Schema of the tool's structured result, if it declares one.
    /// The registry checks every structured result against it; one that
    /// does not match is an `output_schema_mismatch` error.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    /// Hints about how the tool behaves (MCP's tool annotations).
    fn annotations(&self) -> Option<&ToolAnnotations> {
        None
    }

    /// Whether the tool's input and output schemas were already compiled
    /// and checked as valid JSON Schema by whoever made it (a plugin's
    /// loader does, from the component or when it wrote the compile
    /// cache's note): the registry then still holds them to its budgets
    /// at registration, but compiles them at the first call instead (a
    /// process that lists tools, `toolhost list`, compiles none).
    fn schemas_checked(&self) -> bool {
        false
    }

    /// Whether a call may ask its user questions through
    /// [`CallContext::questions`] (a plugin that imports `user`), so that a
    /// server sends it where a person can be reached.
    fn may_ask_user(&self) -> bool {
        false
    }

    /// The `ui://` resource that shows the tool's result (MCP Apps, the
    /// `io.modelcontextprotocol/ui` extension), if it has one: a plugin's
    /// manifest names it (`[ui]`); `serve` lists it in the tool's `_meta`.
    fn ui_resource(&self) -> Option<&str> {
        None
    }

    /// Where the tool comes from.
    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Native
    }

    /// The tool's version, if it has one (e.g. `"1.2.0"`). Two tools may
    /// share a name in a [`ToolRegistry`] only when both have versions and
    /// they differ; `name@version` then addresses each.
    fn version(&self) -> Option<&str> {
        None
    }

    /// Drop whatever the tool keeps for `session` (stateful tools only).
    fn end_session(&self, _session: &SessionId) {}

    /// Whether calls in one session share state (a stateful plugin keeps
    /// one instance per session), so a caller must keep using the same
    /// [`SessionId`] for the state to carry from one call to the next.
    fn is_stateful(&self) -> bool {
        false
    }

    /// Whether a call may run as a task (MCP's `execution.taskSupport`):
    /// a plugin's manifest says it (`[task] support`). Default
    /// `forbidden`.
    fn task_support(&self) -> crate::tasks::TaskSupport {
        crate::tasks::TaskSupport::Forbidden
    }

    /// How long one of its tasks may run, if it says (`[task]
    /// deadline_secs`); the host's `[tasks]` bounds it.
    fn task_deadline_secs(&self) -> Option<u64> {
        None
    }

    /// Whether its calls may run as tasks of its source that outlive the
    /// call (an `[[mcp]]` server's MCP tasks), reported through
    /// [`CallContext::handoff`] and picked up again with
    /// [`TaskHandoff::resuming`]. The registry refuses a resuming call of a
    /// tool that does not, so that no call is ever run twice.
    fn follows_tasks(&self) -> bool {
        false
    }
}

impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn spec(&self) -> &ToolSpec {
        (**self).spec()
    }
    fn call(
        &self,
        input: Value,
        cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (**self).call(input, cx)
    }
    fn output_schema(&self) -> Option<&Value> {
        (**self).output_schema()
    }
    fn annotations(&self) -> Option<&ToolAnnotations> {
        (**self).annotations()
    }
    fn may_ask_user(&self) -> bool {
        (**self).may_ask_user()
    }
    fn schemas_checked(&self) -> bool {
        (**self).schemas_checked()
    }
    fn origin(&self) -> ToolOrigin {
        (**self).origin()
    }
    fn version(&self) -> Option<&str> {
        (**self).version()
    }
    fn end_session(&self, session: &SessionId) {
        (**self).end_session(session)
    }
    fn is_stateful(&self) -> bool {
        (**self).is_stateful()
    }
    fn task_support(&self) -> crate::tasks::TaskSupport {
        (**self).task_support()
    }
    fn task_deadline_secs(&self) -> Option<u64> {
        (**self).task_deadline_secs()
    }
    fn follows_tasks(&self) -> bool {
        (**self).follows_tasks()
    }
}

/// Whether `name` is a tool name every LLM provider accepts
/// (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
