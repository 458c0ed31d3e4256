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
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CancelledNotificationParam, ContentBlock, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, RequestId, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

mod call;
mod offers;
mod search;
mod task_peer;
mod tasks;
mod wire;

use call::json_text;
pub(super) use call::{AnswerOnly, Origin, Reach};
pub(super) use task_peer::RELATED_TASK;
pub(super) use tasks::{
    Asked, failure, legacy_task, stored_object, support as task_support, task_error,
};
use wire::{mcp_result, mcp_tool};

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
    /// With tool search on, the patterns of the tools `tools/list` shows
    /// beside `tool_search` (`handler/search.rs`).
    pub(super) tool_search: Option<Arc<[crate::approval::ToolPattern]>>,
    /// Who may see and call which tools (`auth::policy`).
    pub(super) policy: Option<Arc<super::auth::Policy>>,
    /// Where an HTTP session's connection is registered once its
    /// handshake is over, so that the fast lane may answer its plain calls
    /// (`None` on stdio, when stateless, or with the lane off).
    pub(super) lane: Option<Arc<dyn Lane>>,
    /// Calls that outlive their request, when the server offers them.
    pub(super) tasks: Option<Arc<crate::tasks::TaskHost>>,
    /// The questions those tasks wait on.
    pub(super) task_inputs: Arc<tasks::TaskInputs>,
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
        conn: &Arc<Client>,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>>;
}

/// Wait for the next change to the tool set (and the changes that follow
/// it within [`COALESCE`]); false when the registry is gone or `stop` is
/// cancelled.
pub(super) async fn next_change(
    changes: &mut watch::Receiver<u64>,
    stop: &CancellationToken,
) -> bool {
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
    conn: Arc<Client>,
}

/// One connected MCP client as the server sees it: what answers its
/// calls, through rmcp or directly (the fast lane, `direct.rs`).
#[derive(Debug)]
pub(super) struct Client {
    pub(super) tools: Tools,
    /// The URIs it subscribed to (`handler/offers.rs`).
    subscribed: offers::Subscriptions,
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
    /// Calls running now, by either path ([`Client::end_calls`]).
    calls: AtomicUsize,
    /// Told when the last running call ends.
    calls_ended: Notify,
    /// Who owns this connection's tasks, when not its session, and what
    /// its 2025-11-25 tasks tell it (`handler/tasks.rs`).
    pub(super) tasking: tasks::Tasking,
}

/// How long the end of a session waits for its cancelled calls to be
/// answered (a guest stops within a 10 ms epoch tick).
const END_CALLS_WAIT: Duration = Duration::from_secs(2);

/// After a session's last call returned its answer, how long rmcp gets to
/// pass it on (a few task hops) before the session is closed under it.
/// Paid only by a DELETE that found calls running; generous, because a
/// busy machine can hold those hops up well past a quiet one's 1 ms.
const END_CALLS_GRACE: Duration = Duration::from_millis(250);

/// One call counted in [`Client::calls`] until it drops.
struct RunningCall<'a>(&'a Client);

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
        handler.conn.own_tasks_as_stdio();
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
            conn: Arc::new(Client {
                cx: CallContext::in_session(session).with_overrides(tools.overrides.clone()),
                stop,
                tools,
                subscribed: offers::Subscriptions::default(),
                lasting: AtomicBool::new(false),
                direct_calls: Mutex::default(),
                log_level: SessionLevel::default(),
                calls: AtomicUsize::new(0),
                calls_ended: Notify::new(),
                tasking: tasks::Tasking::default(),
            }),
            lane: OnceLock::new(),
        }
    }
}

impl McpTools {
    /// What answers this handler's calls (a stdio connection's direct
    /// path holds it too).
    pub(super) fn client(&self) -> &Arc<Client> {
        &self.conn
    }
}

impl Client {
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

    /// The tools as they are now: one snapshot serves a request from its
    /// first look at the tool to the call (see [`call_tool`](Self::call_tool)).
    pub(super) fn snapshot(&self) -> Arc<ToolSet> {
        self.tools.registry.snapshot()
    }
}

/// A direct call in flight (see [`Client::direct_call`]).
pub(super) struct DirectCall<'a> {
    conn: &'a Client,
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
            .enable_tool_list_changed();
        // 2026-07-28's tasks extension (2025-11-25's capability is added
        // to rmcp's answer in front of it: `legacy_tasks.rs`).
        let mut capabilities = match self.conn.tools.tasks {
            Some(_) => capabilities.enable_tasks().build(),
            None => capabilities.build(),
        };
        offers::declare(&mut capabilities, &self.conn);
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
        // Before the lane lets the session's next requests through.
        self.conn.tasking.reach(&context.peer);
        if let Some(lane) = &self.conn.tools.lane
            && let Some(parts) = context.extensions.get::<axum::http::request::Parts>()
            && let Some(version) = context.peer.peer_info().map(|i| i.protocol_version.clone())
            // The revisions with a handshake answer as the direct path does.
            && version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
            && let Some(entry) = Arc::clone(lane).register(&parts.headers, &self.conn)
        {
            let _ = self.lane.set(entry);
        }
        offers::forward(&self.conn, context.peer.clone());
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
    /// `subscriptions/listen` stream asking for tool (and resource and
    /// prompt) list changes and resource updates (`handler/offers.rs`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(offers::accepted(&self.conn, requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        offers::listen(&self.conn, context).await
    }

    offers::methods!();

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let snapshot = self.conn.tools.registry.snapshot();
        let mut tools: Vec<Tool> = match &self.conn.tools.tool_search {
            None => snapshot.tools().map(|tool| mcp_tool(&**tool)).collect(),
            Some(always) => search::listed(&snapshot, always),
        };
        if let Some(policy) = &self.conn.tools.policy
            && let Some(principal) = super::auth::Principal::of(&context.extensions)
        {
            tools.retain(|tool| policy.visible(principal, &tool.name));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if let Some(tool) = search::get_tool(&self.conn.tools, name) {
            return Some(tool);
        }
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
        // Held until the call is answered: it counts against the
        // principal's cap on calls at once.
        let permit = match (
            &self.conn.tools.policy,
            super::auth::Principal::of(&context.extensions),
        ) {
            (Some(policy), Some(principal)) => {
                let metrics = self.conn.tools.registry.metrics();
                let decided =
                    super::auth::policy::decide(policy, principal, &request.name, metrics.as_ref());
                Some(decided.map_err(|denied| super::auth::refusal(&denied, principal))?)
            }
            _ => None,
        };
        let trace_parent = super::metrics::trace_parent(&context);
        let origin = Origin::new(
            trace_parent,
            super::auth::Principal::of(&context.extensions),
        );
        let tools = self.conn.snapshot();
        // A principal's search finds only what its policy shows it.
        if let (Some(policy), Some(principal)) = (
            &self.conn.tools.policy,
            super::auth::Principal::of(&context.extensions),
        ) && self.conn.tools.tool_search.is_some()
            && request.name == crate::tools::search::TOOL_SEARCH_NAME
        {
            let visible = |name: &str| policy.visible(principal, name);
            return Ok(search::answer(&tools, request.arguments.as_ref(), visible).into());
        }
        // 2026-07-28: a client that declared the tasks extension gets a
        // task for a tool that may run as one.
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let asked = if declared { Asked::Declared } else { Asked::No };
        if self.conn.runs_as_task(&tools, &request.name, asked)? {
            let owner = self
                .conn
                .task_owner(super::auth::Principal::of(&context.extensions));
            let task = self.conn.start_task(
                Arc::clone(&tools),
                request,
                context.meta.clone(),
                owner,
                (None, true),
                (origin, permit),
            )?;
            let poll = self.conn.tasks().map_or(0, |t| t.poll_interval_ms());
            return Ok(tasks::created(&task, poll));
        }
        // rmcp's token is the client's `notifications/cancelled` (whose
        // answer rmcp drops); the connection's is the session ending
        // (whose answer the client gets: see `Client::end_calls`).
        let cancelled = async {
            tokio::select! {
                () = context.ct.cancelled() => {}
                () = self.conn.stop.cancelled() => {}
            }
        };
        let call = self.conn.call_tool(
            &tools,
            request,
            &context.meta,
            Reach::Client(&context),
            origin,
            cancelled,
        );
        match permit {
            Some(permit) => permit.charging(call).await,
            None => call.await,
        }
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

    /// 2026-07-28 `tasks/get`: the task with its result or error once
    /// it has one; another client's task is not found.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task_get(&request.task_id, &context)
    }

    /// 2026-07-28 `tasks/cancel`: the guest is stopped at its next epoch
    /// check, and the task ends `cancelled`.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_cancel(&request.task_id, &context)
    }

    /// 2026-07-28 `tasks/update`: the answer to a task's question.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_update(&request.task_id, &request.input_responses, &context)
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
