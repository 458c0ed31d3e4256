//! The MCP client: one connection to one MCP server, over stdio (a child
//! process) or streamable HTTP, on the official SDK (rmcp).
//!
//! This module only talks MCP: it connects, lists tools page by page within
//! a budget, calls a tool (following the call to its end when the server
//! runs it as a task: [`tasks`]), and reports
//! `notifications/tools/list_changed` and the end of the connection. What the tools become (names, budgets,
//! restarts, the registry) is the tool source's job ([`McpServer`](super::McpServer)).
//!
//! Everything a server sends is untrusted: each message is bounded by a
//! cap the caller sets (a stdio line over it becomes an error of its own,
//! see `frames`; an HTTP body or event over it fails its request), the
//! tool list by a page and item count, the child's stderr by a line length,
//! and nothing it says reaches a log unescaped or with a secret the host
//! sent it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, JsonObject, PaginatedRequestParams,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use crate::tools::secrets::Secrets;

pub(crate) use super::frames::too_large;
pub(crate) use legacy_tasks::refused_as_not_a_task;
pub(crate) use tasks::{TaskEnd, TaskWatch};

mod legacy_tasks;
mod offers;
mod tasks;

/// How long connecting (spawning or reaching the server, and the MCP
/// handshake) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Pages of `tools/list` read at most: a server that keeps handing out
/// cursors is cut off here.
const MAX_LIST_PAGES: usize = 32;

/// Bytes of one line of a child's stderr that reach the log; the rest of
/// the line is dropped.
const MAX_STDERR_LINE: usize = 1024;

/// Where an MCP server is and how to reach it.
#[derive(Clone)]
pub(crate) enum Endpoint {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment: nothing else is inherited.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (values marked sensitive).
        headers: Vec<(http::HeaderName, http::HeaderValue)>,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values of variables and headers stay out: they may be secrets.
        match self {
            Self::Stdio { program, args, env } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
                .finish(),
        }
    }
}

/// Why a connection could not be made. The messages name the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ConnectError {
    /// The child process could not be started.
    #[error("cannot start `{program}`: check that it is installed and on PATH")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client")]
    Client(#[source] reqwest::Error),
    /// The MCP handshake failed.
    #[error("the MCP handshake failed: {0}")]
    Initialize(String),
    /// Spawning or the handshake took longer than [`CONNECT_TIMEOUT`].
    #[error("no MCP handshake within {}s", CONNECT_TIMEOUT.as_secs())]
    Timeout,
}

/// A live connection to an upstream MCP server: what calls go through.
#[derive(Clone)]
pub(crate) struct Upstream {
    peer: Peer<RoleClient>,
    pid: Option<u32>,
}

/// A new connection and the future that ends with it. Dropping `closed`
/// closes the connection (and kills a child process).
pub(crate) struct Connected {
    pub(crate) connection: Upstream,
    pub(crate) closed: BoxFuture<'static, ()>,
}

/// Where what a server says without being asked goes: its lists changed
/// (each coalesced into one pending refresh), and resources updated.
#[derive(Clone)]
pub(crate) struct Heard {
    /// `notifications/tools/list_changed`.
    pub(crate) tools_changed: Arc<Notify>,
    /// `notifications/resources/list_changed` or
    /// `notifications/prompts/list_changed`.
    pub(crate) offers_changed: Arc<Notify>,
    /// `notifications/resources/updated`, with the resource's URI.
    pub(crate) updated: Arc<dyn Fn(&str) + Send + Sync>,
}

/// Hears what the server tells us without being asked.
struct Listener {
    heard: Heard,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        // A flood of notifications coalesces into one pending refresh.
        self.heard.tools_changed.notify_one();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.heard.offers_changed.notify_one();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.heard.offers_changed.notify_one();
        std::future::ready(())
    }

    fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        (self.heard.updated)(&params.uri);
        std::future::ready(())
    }

    /// The tasks extension (SEP-2663) is declared: a server that has it
    /// may answer a long call with a task, which [`tasks`] follows to its
    /// end, so that the call is not held to one request's timeout.
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities.extensions.get_or_insert_default().insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            JsonObject::default(),
        );
        info
    }
}

/// What a connection holds the server to, besides the protocol.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    /// The largest message the server may send, in bytes.
    pub(crate) max_message_bytes: usize,
    /// The secrets sent to it, kept out of its log lines and errors.
    pub(crate) redact: Secrets,
}

/// Connect to `endpoint`; what the server says unasked goes to `heard`.
/// `server` names it in log lines.
pub(crate) async fn connect(
    endpoint: &Endpoint,
    server: &str,
    heard: Heard,
    bounds: &Bounds,
) -> Result<Connected, ConnectError> {
    let listener = Listener { heard };
    let cap = bounds.max_message_bytes;
    let attempt = async {
        match endpoint {
            Endpoint::Stdio { program, args, env } => {
                let mut command = tokio::process::Command::new(program);
                command
                    .args(args)
                    .env_clear()
                    .envs(env.iter().cloned())
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true);
                let mut child = command.spawn().map_err(|source| ConnectError::Spawn {
                    program: program.clone(),
                    source,
                })?;
                let pid = child.id();
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(ConnectError::Spawn {
                        program: program.clone(),
                        source: std::io::Error::other("its stdin or stdout is not a pipe"),
                    });
                };
                if let Some(stderr) = child.stderr.take() {
                    tokio::spawn(log_stderr(server.to_owned(), stderr, bounds.redact.clone()));
                }
                let read = super::frames::cap_lines(stdout, cap, server.to_owned());
                // Lines reach rmcp already capped (or replaced by an error
                // that says so); its own cap must not drop them first.
                let transport = AsyncRwTransport::<RoleClient, _, _>::new(read, stdin)
                    .with_max_line_length(cap.saturating_add(1 << 20));
                let running = listener
                    .serve(transport)
                    .await
                    .map_err(|e| ConnectError::Initialize(redacted(&bounds.redact, &e)))?;
                Ok(connected(running, pid, Some(child)))
            }
            Endpoint::Http { url, headers } => {
                let client = crate::tls::http_client()
                    // Headers may carry a token: they go to this URL only.
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(CONNECT_TIMEOUT)
                    .build()
                    .map_err(ConnectError::Client)?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.iter().cloned().collect())
                    .max_sse_event_size(cap)
                    .max_json_response_size(cap);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let running = listener
                    .serve(transport)
                    .await
                    .map_err(|e| ConnectError::Initialize(redacted(&bounds.redact, &e)))?;
                Ok(connected(running, None, None))
            }
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, attempt)
        .await
        .map_err(|_| ConnectError::Timeout)?
}

/// `error`'s text without the secrets.
fn redacted(secrets: &Secrets, error: &dyn std::fmt::Display) -> String {
    secrets.redact(&error.to_string()).into_owned()
}

fn connected(
    running: RunningService<RoleClient, Listener>,
    pid: Option<u32>,
    child: Option<tokio::process::Child>,
) -> Connected {
    let peer = running.peer().clone();
    Connected {
        connection: Upstream { peer, pid },
        closed: Box::pin(async move {
            let _ = running.waiting().await;
            // Dropping the child kills it (`kill_on_drop`): when the
            // connection ends, or when this future is dropped.
            drop(child);
        }),
    }
}

/// Log a child's stderr at debug, line by line: each line escaped and cut
/// at [`MAX_STDERR_LINE`] bytes, so a child cannot forge log lines or fill
/// memory with one endless line.
async fn log_stderr(server: String, mut stderr: tokio::process::ChildStderr, secrets: Secrets) {
    let mut chunk = [0u8; 4096];
    let mut line = Vec::with_capacity(256);
    let mut cut = false;
    let emit = |line: &[u8], cut: bool| {
        let text = String::from_utf8_lossy(line);
        let text = secrets.redact(&text);
        let text = crate::text::untrusted(text.trim_end_matches('\r'), MAX_STDERR_LINE);
        let more = if cut { " [line cut]" } else { "" };
        tracing::debug!("MCP server `{server}` stderr: {text}{more}");
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &chunk[..n] {
            if b == b'\n' {
                emit(&line, cut);
                line.clear();
                cut = false;
            } else if line.len() < MAX_STDERR_LINE {
                line.push(b);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        emit(&line, cut);
    }
}

impl Upstream {
    /// The child process's id (stdio only).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The server's tools, page by page, at most `max` of them (one more
    /// is read, so the caller can tell that the list was cut), and at most
    /// [`MAX_LIST_PAGES`] pages.
    pub(crate) async fn list_tools(
        &self,
        max: usize,
    ) -> Result<Vec<rmcp::model::Tool>, ServiceError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self.peer.list_tools(params).await?;
            tools.extend(page.tools);
            if tools.len() > max {
                tools.truncate(max + 1);
                break;
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Call tool `name` with `arguments`: its result, or the task the
    /// server runs it as (follow it with [`Upstream::follow_task`]).
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResponse, ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        // The call's trace goes on to the server (SEP-414).
        let trace = crate::telemetry::current_w3c();
        if !trace.is_empty() {
            let mut meta = rmcp::model::RequestMetaObject::default();
            for (key, value) in trace {
                meta.insert(key.to_owned(), serde_json::Value::String(value));
            }
            params.meta = Some(meta);
        }
        self.peer.call_tool_once(params).await
    }
}
