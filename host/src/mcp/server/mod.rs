//! The MCP server: the tools of any [`ToolRegistry`] served to MCP
//! clients over stdio (or any reader and writer) or streamable HTTP. This
//! is what `toolhost serve` runs; a program runs the same with
//! [`ToolServer`] (cargo feature `server`, on by default).
//!
//! The policy is the same whoever serves:
//!
//! - HTTP binds loopback only, unless remote clients are allowed *and* a
//!   bearer token is set ([`ServerOptions::allow_remote`],
//!   [`ServerOptions::bearer_token`]); the `Host` and `Origin` headers are
//!   checked against DNS rebinding (loopback names and origins, plus those
//!   allowed).
//! - Each MCP connection (a stdio connection, an HTTP session) has a
//!   plugin session of its own, ended when the connection ends; a request
//!   may name another in `_meta` ([`SESSION_META_KEY`]), and a stateful
//!   plugin's tools take one as an argument ([`SESSION_ARG`]) for clients
//!   without sessions ([`ServerOptions::stateless`], the sessionless
//!   protocol revision).
//! - `notifications/cancelled` stops the call's guest; so does the client
//!   going away.
//! - Sessions and connections are on budgets ([`SessionBudgets`],
//!   [`ConnectionBudgets`]); over a cap, a client gets `503` with the
//!   reason.
//! - Every change to the registry's tools, whatever made it (a program's
//!   `register`, a plugin reload, an MCP tool source's new list), reaches
//!   connected clients as `notifications/tools/list_changed`, driven by the
//!   registry's change feed ([`ToolRegistry::changes`]).
//!
//! The library reads no environment and installs no signal handler: the
//! caller passes the token's value and decides when to stop.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolhost::mcp::server::{ServerOptions, ToolServer};
//! use toolhost::tools::{NativeTool, ToolRegistry};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Arc::new(ToolRegistry::new());
//! registry.register(NativeTool::new(
//!     "echo",
//!     "Returns its input.",
//!     json!({"type": "object"}),
//!     |input| async move { Ok(input) },
//! ))?;
//! let server = ToolServer::new(Arc::clone(&registry), ServerOptions::new());
//! // Port 0 picks a free one; `url()` says which.
//! let http = server.serve_http("127.0.0.1:0".parse()?).await?;
//! println!("MCP clients connect to {}", http.url());
//! // A tool registered now reaches connected clients (list_changed).
//! registry.register(NativeTool::new("later", "Comes later.", json!({"type": "object"}), |_| async {
//!     Ok(json!("here"))
//! }))?;
//! http.shutdown().await;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod approval;
pub mod auth;
mod connections;
mod cors;
mod direct;
mod direct_sessions;
mod direct_tasks;
mod handler;
mod http;
mod legacy_tasks;
mod metrics;
mod notify;
pub(crate) mod question;
mod sessions;
mod sse;
mod stdio;
mod stdio_direct;
mod token;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalPolicy, ToolPattern};
use crate::tools::{ExecOverrides, ToolRegistry};

pub use approval::APPROVAL_INPUT_KEY;
pub use connections::ConnectionBudgets;
pub use handler::{SESSION_ARG, SESSION_META_KEY};
pub use question::QUESTION_INPUT_KEY;
pub use sessions::SessionBudgets;

/// How a [`ToolServer`] serves. [`new`](Self::new) says every default:
/// no exec overrides, MCP sessions (not stateless), the default
/// [`SessionBudgets`] and [`ConnectionBudgets`], loopback only, only
/// loopback `Host` names and `Origin`s, no bearer token.
#[derive(Clone, Default)]
pub struct ServerOptions {
    overrides: ExecOverrides,
    stateless: bool,
    sessions: SessionBudgets,
    connections: ConnectionBudgets,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    token: Option<Arc<str>>,
    /// OAuth: tokens checked by a verifier, metadata published.
    auth: Option<Arc<auth::ResourceServer>>,
    /// Who may see and call which tools, how often.
    policy: Option<Arc<auth::Policy>>,
    allow_remote: bool,
    approval: ApprovalPolicy,
    /// The fast lane is off: every request goes through rmcp.
    rmcp_only: bool,
    /// `tools/list` shows only the tools these name, plus `tool_search`.
    tool_search: Option<Arc<[ToolPattern]>>,
    /// Calls that outlive their request (MCP tasks).
    tasks: Option<Arc<crate::tasks::TaskHost>>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token's value stays out: it is a secret.
        f.debug_struct("ServerOptions")
            .field("overrides", &self.overrides)
            .field("stateless", &self.stateless)
            .field("sessions", &self.sessions)
            .field("connections", &self.connections)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("auth", &self.auth)
            .field("policy", &self.policy)
            .field("allow_remote", &self.allow_remote)
            .field("approval", &self.approval)
            .field("fast_lane", &!self.rmcp_only)
            .field("tool_search", &self.tool_search)
            .field("tasks", &self.tasks.is_some())
            .finish()
    }
}

impl ServerOptions {
    /// The defaults (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// List only the tools `always_listed` names, plus one search tool,
    /// `tool_search` ([`tool_search_spec`](crate::tools::search::tool_search_spec)),
    /// whose result lists the tools a query finds with their descriptions
    /// and input schemas; for clients that choke on hundreds of tools.
    /// Every registry tool can still be called by name, found or not. A
    /// registry tool named `tool_search` is hidden behind the search tool.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolhost::approval::ToolPattern;
    /// use toolhost::mcp::server::ServerOptions;
    ///
    /// let options = ServerOptions::new().tool_search([ToolPattern::new("calc_*").unwrap()]);
    /// ```
    #[must_use]
    pub fn tool_search(mut self, always_listed: impl IntoIterator<Item = ToolPattern>) -> Self {
        self.tool_search = Some(always_listed.into_iter().collect());
        self
    }

    /// Ask the client's user (MCP elicitation) before a call of a tool
    /// that `policy` names runs; a tool that declares `needs_approval` is
    /// asked about too. A client without the elicitation capability gets
    /// such calls refused, never run silently.
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// Run every call under these overrides of the tools' exec options
    /// (timeout, retries).
    #[must_use]
    pub fn exec_overrides(mut self, overrides: ExecOverrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// Offer `tasks`: a call of a tool that may run as a task (its
    /// manifest's `[task] support`, the host's `[tasks.support]`) becomes
    /// one for a client that asks (2025-11-25's `params.task`) or declares
    /// the tasks extension (2026-07-28): kept in `tasks`' store before the
    /// client hears of it, run in the background, polled with
    /// `tasks/get` (and 2025-11-25's `tasks/result` and `tasks/list`),
    /// stopped with `tasks/cancel`. See docs/tasks.md.
    #[must_use]
    pub fn tasks(mut self, tasks: crate::tasks::TaskHost) -> Self {
        self.tasks = Some(Arc::new(tasks));
        self
    }

    /// Serve HTTP without MCP sessions: no `Mcp-Session-Id`, every request
    /// answered on its own (as JSON), so N processes behind any load
    /// balancer need no session affinity. Stateful plugins then keep state
    /// only under a session key ([`SESSION_META_KEY`], [`SESSION_ARG`]).
    #[must_use]
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Whether the fast lane answers a plain `tools/call` (one that needs
    /// nothing of the client but its answer) without rmcp's per-request
    /// tasks, over stdio and in an HTTP session; on by default. Off, every
    /// request takes rmcp's way: the same answers, at several times the
    /// server CPU per call (docs/benchmarks.md), for an operator who wants
    /// the one path (or to rule the lane out when chasing a bug).
    #[must_use]
    pub fn fast_lane(mut self, on: bool) -> Self {
        self.rmcp_only = !on;
        self
    }

    /// The MCP sessions an HTTP server holds at once, and how long an idle
    /// one lives.
    #[must_use]
    pub fn session_budgets(mut self, budgets: SessionBudgets) -> Self {
        self.sessions = budgets;
        self
    }

    /// The budgets of every HTTP connection, and the grace period of
    /// [`HttpServer::shutdown`].
    #[must_use]
    pub fn connection_budgets(mut self, budgets: ConnectionBudgets) -> Self {
        self.connections = budgets;
        self
    }

    /// Also accept requests whose `Host` is `host` (a name or host:port).
    /// Loopback names are always accepted.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Also accept browser requests from `origin`, e.g.
    /// `https://app.example.com:443`. Loopback origins are always
    /// accepted; any other `Origin` is refused with `403`.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Require `Authorization: Bearer TOKEN` on every MCP request over
    /// HTTP. Use a long random token: it is all that keeps others out.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(Arc::from(token.into()));
        self
    }

    /// Check every MCP request over HTTP as an OAuth 2.1 resource server
    /// does: a bearer token `auth`'s verifier accepts, Protected Resource
    /// Metadata published, `401`/`403` with `WWW-Authenticate` otherwise
    /// (see [`auth`]). With a [`bearer_token`](Self::bearer_token) as well,
    /// a request needs both.
    #[must_use]
    pub fn resource_server(mut self, auth: auth::ResourceServer) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Let each principal (see [`resource_server`](Self::resource_server))
    /// see and call only the tools `policy` allows it, as often and for
    /// as much fuel and wall time as it allows. Requests without a
    /// principal (stdio) are not under it. A call it admits takes the fast
    /// lane like any other (charged to its principal there); what it
    /// refuses, and a principal's `tool_search`, go through rmcp.
    #[must_use]
    pub fn policy(mut self, policy: auth::Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Let HTTP bind an address other than loopback. Takes effect only
    /// with a [`bearer_token`](Self::bearer_token) or a
    /// [`resource_server`](Self::resource_server).
    #[must_use]
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Check that these options allow serving HTTP on `addr`, before
    /// anything is bound (a program checks its settings early with it).
    ///
    /// # Errors
    ///
    /// [`ServeError::NotLoopback`] for an address other than loopback
    /// without both [`allow_remote`](Self::allow_remote) and a token;
    /// [`ServeError::BlankToken`] for a token of only whitespace.
    pub fn check_http(&self, addr: SocketAddr) -> Result<(), ServeError> {
        http::check(self, addr)
    }
}

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// HTTP on an address other than loopback, without remote clients
    /// allowed and a bearer token.
    #[error(
        "refusing to serve MCP on {addr}, which is not a loopback address: anyone who can \
         reach it could run the tools. Bind 127.0.0.1 (or ::1), or allow remote clients with \
         a bearer token (`ServerOptions::allow_remote` and `bearer_token`; for `toolhost \
         serve`, --allow-remote and --token-env VAR, a bearer token in environment variable \
         VAR)"
    )]
    NotLoopback {
        /// The refused address.
        addr: SocketAddr,
    },
    /// The bearer token is empty or whitespace.
    #[error("the bearer token is blank; set a long random token")]
    BlankToken,
    /// The address could not be bound.
    #[error("cannot listen on {addr}; pick a free port (0 picks one) or stop what holds it")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The listener's own address could not be read.
    #[error("cannot read the address the listener is bound to")]
    LocalAddr(#[source] std::io::Error),
    /// stdin or stdout cannot carry MCP (a closed descriptor).
    #[error("cannot use stdin/stdout as the MCP transport; run the server with both open")]
    Stdio(#[source] std::io::Error),
    /// The client did not complete the MCP handshake.
    #[error("the MCP handshake failed (is an MCP client on the other end?)")]
    Handshake(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Metrics were asked to be served, but the registry counts none.
    #[error(
        "cannot serve metrics: the registry counts none; build it with a `Metrics` \
         (`ToolRegistry::observed`, `Observability::metrics`)"
    )]
    NoMetrics,
    /// The task that serves the connection failed (a bug: it panicked).
    #[error("the MCP connection task failed; this is a bug, please report it")]
    Connection(#[source] tokio::task::JoinError),
}

/// The tools of one registry, served over MCP.
///
/// One `ToolServer` serves any number of connections: each gets a handler
/// of its own and a plugin session of its own. The registry may change
/// while it serves; clients are told (`notifications/tools/list_changed`).
/// See the [module docs](self) for the policy and an example.
#[derive(Debug, Clone)]
pub struct ToolServer {
    tools: handler::Tools,
    options: ServerOptions,
}

/// How long a stdio connection may take to end once its calls are
/// cancelled (they stop within an epoch tick).
const STDIO_WIND_DOWN: Duration = Duration::from_millis(500);

impl ToolServer {
    /// A server of `registry`'s tools, under `options`.
    pub fn new(registry: Arc<ToolRegistry>, options: ServerOptions) -> Self {
        Self {
            tools: handler::Tools {
                registry,
                overrides: options.overrides.clone(),
                approval: options.approval.clone(),
                tool_search: options.tool_search.clone(),
                policy: options.policy.clone(),
                lane: None,
                tasks: options.tasks.clone(),
                task_inputs: Arc::default(),
            },
            options,
        }
    }

    /// The registry served.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.tools.registry
    }

    /// Serve one MCP connection on this process's stdin and stdout (stdout
    /// is the protocol: log elsewhere), until the client closes stdin or
    /// `stop` resolves. Pipes and sockets are polled by the runtime;
    /// anything else (a terminal) goes through tokio's blocking stdio.
    ///
    /// # Errors
    ///
    /// [`ServeError::Stdio`] when stdin or stdout is closed; as
    /// [`serve_io`](Self::serve_io) otherwise.
    pub async fn serve_stdio(&self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        let (reader, writer) = stdio::stdin_stdout().map_err(ServeError::Stdio)?;
        tracing::info!(
            "serving {} tools over MCP on stdio",
            self.tools.registry.len()
        );
        self.serve_boxed(reader, writer, stop).await
    }

    /// Serve one MCP connection on `reader` and `writer` (newline-delimited
    /// JSON-RPC, as MCP's stdio transport), until `reader` ends or `stop`
    /// resolves. Either way the calls in flight are cancelled: nobody
    /// waits for answers the client cannot read.
    ///
    /// # Errors
    ///
    /// [`ServeError::Handshake`] when the other end does not complete the
    /// MCP handshake; [`ServeError::Connection`] if the connection's task
    /// fails.
    pub async fn serve_io<R, W>(
        &self,
        reader: R,
        writer: W,
        stop: impl Future<Output = ()>,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_boxed(Box::new(reader), Box::new(writer), stop)
            .await
    }

    async fn serve_boxed(
        &self,
        reader: stdio::Reader,
        writer: stdio::Writer,
        stop: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        let input_closed = CancellationToken::new();
        let reader = stdio::EndSignalling {
            reader,
            closed: input_closed.clone(),
        };
        // Plain calls skip rmcp's service loop once the handshake is done
        // (see `stdio_direct`); rmcp serves everything else.
        // With tasks and the lane, 2025-11-25's task requests are
        // answered in front of rmcp too (`legacy_tasks`).
        let tasks = self.tools.tasks.is_some() && !self.options.rmcp_only;
        let (front, rmcp_end) = stdio_direct::Front::start(reader, writer, tasks);
        // One plugin session for the whole connection, on every revision:
        // the sessionless 2026-07-28 has no handshake, but a stdio
        // connection is one client all the same.
        let handler = handler::McpTools::for_connection(self.tools.clone());
        let conn = Arc::clone(handler.client());
        let service = match handler.serve(tokio::io::split(rmcp_end)).await {
            Ok(service) => service,
            Err(e) => {
                front.close().await;
                return Err(ServeError::Handshake(Box::new(e)));
            }
        };
        if !self.options.rmcp_only
            && service.peer().peer_info().is_some_and(|info| {
                info.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
            })
        {
            front.open(&conn);
        }
        drop(conn);
        let cancel = service.cancellation_token();
        let mut waiting = std::pin::pin!(service.waiting());
        tokio::select! {
            quit = &mut waiting => {
                let quit = quit.map_err(ServeError::Connection)?;
                tracing::debug!("MCP connection ended: {quit:?}");
            }
            () = input_closed.cancelled() => {
                // Cancelling the connection cancels every call in flight
                // (each call's token is a child of it): their guests stop
                // at the next epoch tick.
                tracing::debug!("the input closed: cancelling the calls in flight");
                cancel.cancel();
                if tokio::time::timeout(STDIO_WIND_DOWN, waiting).await.is_err() {
                    tracing::debug!("the MCP connection did not wind down in time; ending anyway");
                }
            }
            () = stop => {
                tracing::info!("stopping: closing the MCP connection");
                cancel.cancel();
            }
        }
        front.close().await;
        Ok(())
    }

    /// Serve MCP's streamable HTTP transport on `addr` (port 0 picks a free
    /// one), at `/mcp`; `/healthz` answers `ok`. Returns once it listens;
    /// it serves in the background until [`HttpServer::shutdown`].
    ///
    /// # Errors
    ///
    /// As [`ServerOptions::check_http`], checked before binding;
    /// [`ServeError::Bind`] when `addr` cannot be bound.
    pub async fn serve_http(&self, addr: SocketAddr) -> Result<HttpServer, ServeError> {
        self.options.check_http(addr)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        self.serve_http_on(listener)
    }

    /// Like [`serve_http`](Self::serve_http), on a listener already bound.
    ///
    /// # Errors
    ///
    /// As [`ServerOptions::check_http`] for the listener's address;
    /// [`ServeError::LocalAddr`] when it cannot be read.
    pub fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
    ) -> Result<HttpServer, ServeError> {
        let addr = listener.local_addr().map_err(ServeError::LocalAddr)?;
        self.options.check_http(addr)?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(http::serve(
            listener,
            addr,
            self.options.clone(),
            self.tools.clone(),
            stop.clone(),
        ));
        Ok(HttpServer {
            addr,
            stop,
            task: Some(task),
        })
    }
}

/// An HTTP server running in the background (from
/// [`ToolServer::serve_http`]). Dropping it stops accepting and lets
/// answers in flight finish in the background; [`shutdown`](Self::shutdown)
/// does the same and waits.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    /// `None` once shutting down.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl HttpServer {
    /// The address it listens on (with the port picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint: `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stop accepting connections, let the answers in flight finish for
    /// up to the grace period ([`ConnectionBudgets::shutdown_grace`]),
    /// then close whatever is still open, and return.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::warn!("the MCP HTTP server's task failed: {e}");
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests;
