//! The MCP side of the server: every registry tool as an MCP tool.
//!
//! One [`McpTools`] serves one MCP connection (a stdio process, an HTTP
//! `Mcp-Session-Id` session, or one request of the stateless 2026-07-28
//! revision) and owns one plugin [`SessionId`], so a stateful plugin keeps
//! one instance per connection and never shares it. The session ends when
//! the handler is dropped: rmcp drops it when the connection closes, the
//! HTTP session is deleted or expires, or a stateless request is answered.
//! A request may instead name a session of its own in `_meta`
//! ([`SESSION_META_KEY`]).
//!
//! Over HTTP, clients of the sessionless 2026-07-28 revision (and any
//! request of a stateless server) have no connection to keep state in (over
//! stdio they do: the process is one connection, on every revision, so its
//! handler keeps one session), and generic clients
//! send no toolhost `_meta`. So a stateful plugin's tools also take the
//! handle as an argument, as MCP recommends for state: each such tool's
//! schema gets an optional [`SESSION_ARG`] property; a sessionless call
//! without one starts a new session and its result says the handle (as
//! text the model reads, and in the result's `_meta` for programs), which
//! later calls pass back to see the same state.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, RequestId, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::approval;
use super::notify::{self, CallNotifier, SessionLevel};
use super::question::Questions;
use crate::approval::ApprovalPolicy;
use crate::telemetry::TraceParent;
use crate::tools::{
    CallContext, CallReport, Content, ExecOverrides, ResourceContents, SessionId, ToolRegistry,
    ToolSet, ToolSpec,
};

/// The request `_meta` key that names a plugin session: calls carrying the
/// same value share a stateful plugin's instance, whatever connection (or
/// stateless request) they come on.
pub const SESSION_META_KEY: &str = "toolhost.dev/session";

/// The argument of a stateful plugin's tools that names the session (a
/// tool whose own schema has a `session` property gets
/// `SESSION_ARG_FALLBACK` instead).
pub const SESSION_ARG: &str = "session";
const SESSION_ARG_FALLBACK: &str = "toolhost_session";

/// The length a session key must have: long enough to be unguessable when
/// it is random (the key is the only thing that keeps one client out of
/// another's session), short enough to bound what a client makes us store.
const SESSION_KEY_LEN: std::ops::RangeInclusive<usize> = 16..=128;

/// How long a change to the tool set waits for more before clients are
/// told: a burst (an MCP server re-listing its tools one by one, a reload
/// of many plugins) becomes one `notifications/tools/list_changed`.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(50);

/// What every connection's handler shares.
#[derive(Debug, Clone)]
pub(super) struct Tools {
    pub(super) registry: Arc<ToolRegistry>,
    pub(super) overrides: ExecOverrides,
    pub(super) approval: ApprovalPolicy,
    /// Where an HTTP session's connection is registered once its
    /// handshake is over, so that the fast lane may answer its plain calls
    /// (`None` on stdio, when stateless, or with the lane off).
    pub(super) lane: Option<Arc<dyn Lane>>,
}

/// A fast lane in front of the server: told of each HTTP session whose
/// handshake is over (by the headers of its `notifications/initialized`)
/// and of the connection that answers its calls. What it gives back is
/// kept until the session's handler goes, and dropped first (its drop is
/// where the lane forgets the session).
pub(super) trait Lane: Send + Sync + std::fmt::Debug {
    /// Let the session named in `headers` be answered by `conn`.
    fn register(
        self: Arc<Self>,
        headers: &axum::http::HeaderMap,
        conn: &Arc<Connection>,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>>;
}

/// Wait for the next change to the tool set (and the changes that follow
/// it within [`COALESCE`]); false when the registry is gone or `stop` is
/// cancelled.
async fn next_change(changes: &mut watch::Receiver<u64>, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = stop.cancelled() => return false,
        changed = changes.changed() => if changed.is_err() {
            return false;
        },
    }
    tokio::select! {
        () = stop.cancelled() => return false,
        () = tokio::time::sleep(COALESCE) => {}
    }
    // Everything up to now is in the one notification about to go out.
    changes.borrow_and_update();
    true
}

/// The tools of one registry, for one MCP connection: rmcp's handler.
#[derive(Debug)]
pub(super) struct McpTools {
    /// This connection's place among the direct sessions, once it has one
    /// (dropped first: no direct call starts once the handler goes).
    lane: OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Stops this connection's list_changed forwarder and its direct
    /// calls when it goes.
    _stop_on_drop: DropGuard,
    _session: SessionGuard,
    conn: Arc<Connection>,
}

/// What answers one connection's calls, through rmcp or directly
/// (the fast lane, `direct.rs`).
#[derive(Debug)]
pub(super) struct Connection {
    tools: Tools,
    cx: CallContext,
    stop: CancellationToken,
    /// Whether this handler serves a connection whose plugin session
    /// outlives each request: a stdio connection (on every revision, the
    /// sessionless 2026-07-28 included: the process is the connection), or
    /// an HTTP session (once it answered `initialize`). Without it, it
    /// serves one request of the sessionless revision or of a stateless
    /// server over HTTP.
    lasting: AtomicBool,
    /// The direct calls in flight, so `notifications/cancelled` (which
    /// reaches rmcp, not them) can stop them.
    direct_calls: Mutex<HashMap<RequestId, CancellationToken>>,
    /// The level the client asked for log lines from (`logging/setLevel`).
    log_level: SessionLevel,
    /// Calls running now, by either path ([`Connection::end_calls`]).
    calls: AtomicUsize,
    /// Told when the last running call ends.
    calls_ended: Notify,
}

/// How long the end of a session waits for its cancelled calls to be
/// answered (a guest stops within a 10 ms epoch tick).
const END_CALLS_WAIT: Duration = Duration::from_secs(2);

/// After a session's last call returned its answer, how long rmcp gets to
/// pass it on (a few task hops) before the session is closed under it.
/// Paid only by a DELETE that found calls running; generous, because a
/// busy machine can hold those hops up well past a quiet one's 1 ms.
const END_CALLS_GRACE: Duration = Duration::from_millis(250);

/// One call counted in [`Connection::calls`] until it drops.
struct RunningCall<'a>(&'a Connection);

impl Drop for RunningCall<'_> {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.calls_ended.notify_waiters();
        }
    }
}

impl McpTools {
    /// The handler of a connection that lasts as long as its transport
    /// (stdio): one plugin session for all its requests, whatever revision
    /// the client speaks.
    pub(super) fn for_connection(tools: Tools) -> Self {
        let handler = Self::new(tools);
        handler.conn.lasting.store(true, Ordering::Relaxed);
        handler
    }

    /// A handler with a fresh plugin session (an HTTP session's once it
    /// answers `initialize`; until then, or without it, a request's).
    pub(super) fn new(tools: Tools) -> Self {
        let session = SessionId::random();
        let stop = CancellationToken::new();
        Self {
            _session: SessionGuard {
                registry: Arc::clone(&tools.registry),
                id: session.clone(),
            },
            _stop_on_drop: stop.clone().drop_guard(),
            conn: Arc::new(Connection {
                cx: CallContext::in_session(session).with_overrides(tools.overrides.clone()),
                stop,
                tools,
                lasting: AtomicBool::new(false),
                direct_calls: Mutex::default(),
                log_level: SessionLevel::default(),
                calls: AtomicUsize::new(0),
                calls_ended: Notify::new(),
            }),
            lane: OnceLock::new(),
        }
    }
}

impl McpTools {
    /// What answers this handler's calls (a stdio connection's direct
    /// path holds it too).
    pub(super) fn connection(&self) -> &Arc<Connection> {
        &self.conn
    }
}

impl Connection {
    /// Cancelled when the connection's handler goes (the session ended).
    pub(super) fn stopped(&self) -> &CancellationToken {
        &self.stop
    }

    /// Before the session ends (DELETE): stop its running calls and let
    /// their answers (errors that say so) reach the client, as a call
    /// cancelled by `notifications/cancelled` is not answered but a call
    /// cut off by the end of its session is. Bounded: a call that will not
    /// end is closed under as before.
    pub(super) async fn end_calls(&self) {
        self.stop.cancel();
        let ended = self.calls_ended.notified();
        let mut ended = std::pin::pin!(ended);
        ended.as_mut().enable();
        if self.calls.load(Ordering::Acquire) == 0 {
            return;
        }
        let _ = tokio::time::timeout(END_CALLS_WAIT, ended).await;
        tokio::time::sleep(END_CALLS_GRACE).await;
    }

    /// Note a direct call in flight until the guard drops, cancelling
    /// `cancel` on `notifications/cancelled` for `id`.
    pub(super) fn direct_call(&self, id: RequestId, cancel: CancellationToken) -> DirectCall<'_> {
        let mut calls = self.direct_calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.insert(id.clone(), cancel);
        DirectCall { conn: self, id }
    }

    /// What a call of `name` with `_meta` `meta` needs of the client
    /// besides its answer: the facts [`call_tool`](Self::call_tool)
    /// branches on.
    fn needs(&self, tools: &ToolSet, name: &str, meta: &JsonObject) -> Needs {
        Needs {
            approval: tools.needs_approval(name, &self.tools.approval, &self.tools.overrides),
            questions: tools.get(name).is_some_and(|tool| tool.may_ask_user()),
            progress: meta.contains_key("progressToken"),
            logs: self.log_level.is_set() || meta.contains_key(notify::LOG_LEVEL_META_KEY),
        }
    }

    /// The proof that a call of `request` (its `_meta` in `meta`) needs
    /// nothing of the client but its answer, so the fast lane
    /// (`direct.rs`) may answer it; `None` when it needs rmcp's
    /// request (the client's user, or notifications on its stream). The
    /// same facts [`call_tool`](Self::call_tool) branches on decide.
    pub(super) fn answer_only(
        &self,
        tools: &ToolSet,
        request: &CallToolRequestParams,
        meta: &JsonObject,
    ) -> Option<AnswerOnly> {
        self.needs(tools, request.name.as_ref(), meta)
            .nothing()
            .then_some(AnswerOnly(()))
    }

    /// The tools as they are now: one snapshot serves a request from its
    /// first look at the tool to the call (see [`call_tool`](Self::call_tool)).
    pub(super) fn snapshot(&self) -> Arc<ToolSet> {
        self.tools.registry.snapshot()
    }

    /// Call a tool of `tools` for request `params` (its `_meta` in
    /// `meta`) until `cancelled` resolves: what `tools/call` does, however
    /// it came. One snapshot for the lookup and the call: a reload between
    /// the two cannot turn a listed tool into an unknown one mid-request.
    /// Through rmcp (`reach` is [`Reach::Client`]), a call that needs
    /// approval asks the client's user, and progress and log lines go to
    /// the client; the fast lane's call carries the proof that it needs
    /// none of them ([`answer_only`](Self::answer_only)).
    pub(super) async fn call_tool(
        &self,
        tools: &ToolSet,
        request: CallToolRequestParams,
        meta: &JsonObject,
        reach: Reach<'_>,
        trace_parent: Option<TraceParent>,
        cancelled: impl Future<Output = ()>,
    ) -> Result<CallToolResponse, McpError> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        let _running = RunningCall(self);
        let name = request.name.as_ref();
        // An unknown tool is a protocol error (JSON-RPC invalid params), as
        // the MCP spec says; everything the tool itself does is a result.
        let Some(tool) = tools.get(name) else {
            // The registry still sees the call, so it is counted (under
            // `(unknown)`), traced and logged exactly as a library caller's
            // call of an unknown name; it runs nothing.
            let arguments = Value::Object(request.arguments.unwrap_or_default());
            let mut cx = self.cx.clone();
            cx.trace_parent = trace_parent;
            let _unknown = tools.call_value(name, arguments, &cx).await;
            return Err(McpError::invalid_params(
                format!("no tool named `{name}`; tools/list names the tools this server has"),
                None,
            ));
        };
        let mut arguments = request.arguments.unwrap_or_default();
        let (mut cx, new_handle) = self.call_context(session_arg(&**tool), &mut arguments, meta)?;
        cx.trace_parent = trace_parent;
        let mut questions = Questions::none();
        // What the call needs of the client, through rmcp's request; a
        // call of the fast lane is proven to need nothing.
        let client = match reach {
            Reach::Client(context) => Some((context, self.needs(tools, name, meta))),
            Reach::AnswerOnly(AnswerOnly(())) => None,
        };
        let mut notifier = None;
        if let Some((context, needs)) = client {
            let log_level =
                notify::requested_level(meta, &self.log_level)?.and_then(notify::min_plugin_level);
            // 2026-07-28: what a round's approval and answers must be for.
            let call =
                (needs.approval || needs.questions).then(|| approval::digest(name, &arguments));
            let mut approved = None;
            if needs.approval {
                match approval::ask(
                    context,
                    request.input_responses.as_ref(),
                    request.request_state.as_deref(),
                    name,
                    &arguments,
                    call.as_deref().unwrap_or_default(),
                )
                .await
                {
                    approval::Gate::Run(given) => approved = given,
                    approval::Gate::Answer(answer) => return Ok(answer),
                }
            }
            // A tool that may ask its user asks the client's.
            if needs.questions {
                questions = Questions::of(
                    context,
                    request.input_responses.as_ref(),
                    request.request_state.as_deref(),
                    call.as_deref().unwrap_or_default(),
                    approved,
                )
                .map_err(|e| McpError::invalid_params(e, None))?;
            }
            // A request with a progress token gets the tool's progress
            // reports as notifications/progress, and a client that asked
            // for log lines gets them as notifications/message: in order,
            // all before the result.
            let token = context.meta.get_progress_token();
            let progress = token.is_some();
            if progress || log_level.is_some() {
                let started = CallNotifier::start(token, name, context.peer.clone());
                if progress {
                    cx = cx.with_progress(started.progress_sink());
                }
                if let Some(min) = log_level {
                    cx = cx.with_logs(started.log_sink(min));
                }
                notifier = Some(started);
            }
        }
        cx.questions = questions.sink.take();
        let input = json_text(&arguments);
        // `notifications/cancelled` (or the connection closing) resolves
        // `cancelled`: dropping the call stops the guest at its next epoch
        // check (within a 10 ms tick) and frees its instance and slot.
        let report = tokio::select! {
            report = tools.call_detailed(name, &input, &cx) => report,
            // 2026-07-28: the call stops at a question not answered yet,
            // and the client is asked to answer it and call again.
            input = questions.unanswered() => return Ok(input.into()),
            () = cancelled => {
                tracing::info!(tool = name, "call cancelled by the client: the guest was stopped");
                // rmcp drops the answer to a cancelled request.
                return Err(McpError::internal_error("the call was cancelled", None));
            }
        };
        drop(cx);
        if let Some(notifier) = notifier {
            notifier.finish().await;
        }
        Ok(with_handle(mcp_result(report), new_handle).into())
    }

    /// The call context for a request, and the handle to tell the client
    /// when this call started a session for it: the session the tool's
    /// [`SESSION_ARG`] names (taken out of `arguments`), else the one
    /// `_meta` names, else this connection's; a sessionless request to a
    /// stateful tool without either gets a new handle.
    fn call_context(
        &self,
        stateful: Option<&str>,
        arguments: &mut JsonObject,
        meta: &JsonObject,
    ) -> Result<(CallContext, Option<String>), McpError> {
        let in_key = |key: &str| {
            // A namespace of its own: a key never names a connection's session.
            let session = SessionId::new(format!("mcp-key:{key}"));
            CallContext::in_session(session).with_overrides(self.tools.overrides.clone())
        };
        if let Some(arg) = stateful
            && let Some(handle) = arguments.remove(arg)
        {
            let key = valid_key(&handle).ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "argument `{arg}` must be a session handle: a string of {} to {} \
                         characters of A-Z, a-z, 0-9, `-`, `_` and `.`, such as the one an \
                         earlier result of this plugin returned; leave it out to start a new \
                         session",
                        SESSION_KEY_LEN.start(),
                        SESSION_KEY_LEN.end()
                    ),
                    None,
                )
            })?;
            return Ok((in_key(key), None));
        }
        if let Some(key) = meta.get(SESSION_META_KEY) {
            let key = valid_key(key).ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "`_meta` key `{SESSION_META_KEY}` must be a string of {} to {} characters \
                         of A-Z, a-z, 0-9, `-`, `_` and `.`; use a random one (a UUID), since \
                         anyone who knows it shares the session",
                        SESSION_KEY_LEN.start(),
                        SESSION_KEY_LEN.end()
                    ),
                    None,
                )
            })?;
            return Ok((in_key(key), None));
        }
        // Not a lasting connection: a request of the sessionless revision
        // (or of a stateless server) over HTTP, whose handler and session
        // end with the answer. State needs a handle the client passes back.
        if stateful.is_some() && !self.lasting.load(Ordering::Relaxed) {
            let handle = new_handle();
            return Ok((in_key(&handle), Some(handle)));
        }
        Ok((self.cx.clone(), None))
    }
}

/// What a call needs of the client besides its answer.
#[derive(Debug, Clone, Copy)]
struct Needs {
    /// A person's approval, asked through elicitation.
    approval: bool,
    /// The tool may ask its user questions, through elicitation.
    questions: bool,
    /// Progress reports, on the request's stream.
    progress: bool,
    /// Log lines the client asked for, on the request's stream.
    logs: bool,
}

impl Needs {
    fn nothing(self) -> bool {
        !(self.approval || self.questions || self.progress || self.logs)
    }
}

/// The proof that a call needs nothing of the client but its answer; only
/// [`Connection::answer_only`] makes one.
#[derive(Debug)]
pub(super) struct AnswerOnly(());

/// How a call can reach its client besides the answer.
#[derive(Debug)]
pub(super) enum Reach<'a> {
    /// Through rmcp's request: elicitation and notifications.
    Client(&'a RequestContext<RoleServer>),
    /// Not at all: the fast lane, for a call proven to need nothing.
    AnswerOnly(AnswerOnly),
}

/// A direct call in flight (see [`Connection::direct_call`]).
pub(super) struct DirectCall<'a> {
    conn: &'a Connection,
    id: RequestId,
}

impl Drop for DirectCall<'_> {
    fn drop(&mut self) {
        let mut calls = self
            .conn
            .direct_calls
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        calls.remove(&self.id);
    }
}

/// `value` as JSON text. serde_json writes it into one buffer; `Value`'s
/// `Display` goes through a formatter and takes a few times as long.
fn json_text(value: &impl serde::Serialize) -> String {
    // A `Value` (or a map of them) always serializes.
    serde_json::to_string(value).unwrap_or_default()
}

/// `value` as a session key, if it is one.
fn valid_key(value: &Value) -> Option<&str> {
    value.as_str().filter(|k| {
        SESSION_KEY_LEN.contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

/// A new random session handle: 128 bits, as 32 hex digits after `s-`.
fn new_handle() -> String {
    format!("s-{:032x}", rand::random::<u128>())
}

/// The argument that names the session, for a stateful tool; `None` for a
/// stateless one.
fn session_arg(tool: &dyn crate::tools::Tool) -> Option<&'static str> {
    if !tool.is_stateful() {
        return None;
    }
    let taken = tool
        .spec()
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(SESSION_ARG));
    Some(if taken {
        SESSION_ARG_FALLBACK
    } else {
        SESSION_ARG
    })
}

/// Ends the plugin session when the connection's handler goes away.
#[derive(Debug)]
struct SessionGuard {
    registry: Arc<ToolRegistry>,
    id: SessionId,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        tracing::debug!(session = %self.id, "MCP connection closed: ending its plugin session");
        self.registry.end_session(&self.id);
    }
}

/// A registry tool as MCP describes it: a stateful tool's schema gets its
/// optional session argument.
fn mcp_tool(tool: &dyn crate::tools::Tool) -> Tool {
    let spec: &ToolSpec = tool.spec();
    let mut schema = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        // MCP requires an object schema; the registry's are (it checks
        // them), but never send a client something it must reject.
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    };
    if let Some(arg) = session_arg(tool) {
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(properties) = properties {
            properties.insert(
                arg.to_owned(),
                serde_json::json!({
                    "type": "string",
                    "minLength": SESSION_KEY_LEN.start(),
                    "maxLength": SESSION_KEY_LEN.end(),
                    "pattern": "^[A-Za-z0-9._-]+$",
                    "description": "This tool keeps state between calls. To continue with \
                        the same state, pass the session handle an earlier result returned; \
                        leave it out to start afresh."
                }),
            );
        }
    }
    let mut listed = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    );
    if let Some(Value::Object(output)) = tool.output_schema() {
        listed.output_schema = Some(Arc::new(output.clone()));
    }
    if let Some(hints) = tool.annotations() {
        let mut annotations = rmcp::model::ToolAnnotations::default();
        annotations.title = hints.title.clone();
        annotations.read_only_hint = hints.read_only_hint;
        annotations.destructive_hint = hints.destructive_hint;
        annotations.idempotent_hint = hints.idempotent_hint;
        annotations.open_world_hint = hints.open_world_hint;
        listed.annotations = Some(annotations);
    }
    listed
}

/// A tool's result as MCP carries it: the structured value as
/// `structuredContent` (when it is an object) and as text, for clients that
/// read text only; then each content part as its own block.
fn mcp_result(report: CallReport) -> CallToolResult {
    let value = match report.output {
        // Exactly the text the tool loop sends a model: "kind: message",
        // control characters escaped.
        Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        Ok(value) => value,
    };
    let mut result = match (report.structured, value) {
        // structuredContent must be an object; other outputs are text.
        (true, value @ Value::Object(_)) => {
            // What `CallToolResult::structured` makes, with the text
            // written the quick way.
            let mut result = CallToolResult::success(vec![ContentBlock::text(json_text(&value))]);
            result.structured_content = Some(value);
            result
        }
        (true, value) => CallToolResult::success(vec![ContentBlock::text(json_text(&value))]),
        // Content only: the parts are the whole answer.
        (false, _) => CallToolResult::success(Vec::new()),
    };
    result
        .content
        .extend(report.content.into_iter().map(content_block));
    result
}

fn content_block(part: Content) -> ContentBlock {
    use base64::Engine as _;
    let base64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    match part {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { media_type, data } => ContentBlock::image(base64(&data), media_type),
        Content::Audio { media_type, data } => ContentBlock::audio(base64(&data), media_type),
        Content::Resource {
            uri,
            media_type,
            contents,
        } => {
            let contents = match contents {
                ResourceContents::Text(text) => {
                    rmcp::model::ResourceContents::TextResourceContents {
                        uri,
                        mime_type: media_type,
                        text,
                        meta: None,
                    }
                }
                ResourceContents::Blob(data) => {
                    rmcp::model::ResourceContents::BlobResourceContents {
                        uri,
                        mime_type: media_type,
                        blob: base64(&data),
                        meta: None,
                    }
                }
            };
            ContentBlock::resource(contents)
        }
    }
}

impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        // The registry's change feed tells of every change, whatever
        // made it: the list can always change.
        // Logging: plugin log lines, for a client that asks for them.
        #[expect(
            deprecated,
            reason = "MCP logging is deprecated by SEP-2577 but still part of every revision toolhost serves"
        )]
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools that run as sandboxed WebAssembly plugins (and REST endpoints) \
                 under toolhost's limits.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.conn.lasting.store(true, Ordering::Relaxed);
        // What the default does.
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// A connection with a handshake (stdio, an HTTP session) hears of
    /// every change to the tool list until it closes. An HTTP session's
    /// calls may from now on skip rmcp's session worker.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Some(lane) = &self.conn.tools.lane
            && let Some(parts) = context.extensions.get::<axum::http::request::Parts>()
            && let Some(version) = context.peer.peer_info().map(|i| i.protocol_version.clone())
            // The revisions with a handshake answer as the direct path does.
            && version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
            && let Some(entry) = Arc::clone(lane).register(&parts.headers, &self.conn)
        {
            let _ = self.lane.set(entry);
        }
        let mut changes = self.conn.tools.registry.changes();
        let (peer, stop) = (context.peer, self.conn.stop.clone());
        tokio::spawn(async move {
            while next_change(&mut changes, &stop).await {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("cannot tell an MCP client that the tools changed: {e}");
                    break;
                }
            }
        });
    }

    /// The stateless revision's way to hear of changes: a
    /// `subscriptions/listen` stream asking for tool list changes.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.conn.tools.registry.changes();
        // The listener ends with `context`: nothing else stops it.
        let never = CancellationToken::new();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = next_change(&mut changes, &never) => {
                    if !changed {
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!("cannot tell an MCP listener that the tools changed: {e}");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .conn
            .tools
            .registry
            .snapshot()
            .tools()
            .map(|tool| mcp_tool(&**tool))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.conn
            .tools
            .registry
            .snapshot()
            .get(name)
            .map(|tool| mcp_tool(&**tool))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let trace_parent = super::metrics::trace_parent(&context);
        let tools = self.conn.snapshot();
        // rmcp's token is the client's `notifications/cancelled` (whose
        // answer rmcp drops); the connection's is the session ending
        // (whose answer the client gets: see `Connection::end_calls`).
        let cancelled = async {
            tokio::select! {
                () = context.ct.cancelled() => {}
                () = self.conn.stop.cancelled() => {}
            }
        };
        self.conn
            .call_tool(
                &tools,
                request,
                &context.meta,
                Reach::Client(&context),
                trace_parent,
                cancelled,
            )
            .await
    }

    /// The level a client of a session wants plugin log lines from, for
    /// the session's calls from now on.
    #[expect(
        deprecated,
        reason = "MCP logging is deprecated by SEP-2577 but still part of every revision toolhost serves"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.conn.log_level.set(request.level);
        Ok(())
    }

    /// rmcp cancels the calls it runs itself; the direct ones are ours.
    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        if let Some(id) = notification.request_id {
            let calls = self
                .conn
                .direct_calls
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(cancel) = calls.get(&id) {
                cancel.cancel();
            }
        }
    }
}

/// Tell the client the session a call started: as text (what a model
/// reads, so it can pass the handle back) and in the result's `_meta`
/// under [`SESSION_META_KEY`] (what a program reads).
fn with_handle(mut result: CallToolResult, handle: Option<String>) -> CallToolResult {
    let Some(handle) = handle else {
        return result;
    };
    result.content.push(ContentBlock::text(format!(
        "This tool keeps state in session `{handle}`: pass \"{SESSION_ARG}\": \"{handle}\" \
         to this plugin's tools to continue with it."
    )));
    let mut meta = result.meta.take().unwrap_or_default();
    meta.insert(SESSION_META_KEY.to_owned(), Value::String(handle));
    result.meta = Some(meta);
    result
}
