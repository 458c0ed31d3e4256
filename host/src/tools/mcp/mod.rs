//! MCP servers as tool sources, declared in data (`[[mcp]]` in the host
//! config).
//!
//! An [`McpServer`] is one declared server ([`McpDecl`]): a child process
//! speaking MCP on stdio, or a streamable HTTP endpoint. Once
//! [started](McpServer::start), its tools join every registry it is
//! [attached](McpServer::attach) to as `PREFIX` + the tool's name (default
//! prefix `NAME_`), validated against their input schema by the registry
//! like any other tool, and run with the declaration's
//! [`ExecOptions`] (`exec`: timeout, retries).
//!
//! - A server that dies (its process exits, its connection fails) is
//!   restarted with exponential, jittered backoff (at most
//!   [`MAX_RETRY_PAUSE`](super::MAX_RETRY_PAUSE) apart). While it is down its
//!   tools stay listed and answer `unavailable`, naming the server and what
//!   to check.
//! - `notifications/tools/list_changed` refreshes its tools in the
//!   registries it is attached to.
//! - What a server sends is untrusted data with a budget: the number of
//!   tools, each description and schema (the host config's `[plugins]`
//!   budgets, as for a plugin's `describe`), each name (a valid tool name
//!   after prefixing, else skipped), each result (`max_result_kb`). A bad
//!   tool is skipped with a warning naming the server.
//! - A stdio child gets an empty environment but for the variables named in
//!   `env` and `PATH`; its stderr goes to the log at debug level, escaped
//!   and cut per line; it is killed when the server is dropped (the last
//!   of its tools, and the `McpServer` handles).
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::plugin::HostConfig;
//! use toolhost::tools::ToolRegistry;
//! use toolhost::tools::mcp::{McpDecl, McpServer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let decl: McpDecl = toml::from_str(r#"
//!     name = "time"
//!     command = "python3"
//!     args = ["-m", "mcp_server_time"]
//! "#)?;
//! let server = McpServer::new(decl, &HostConfig::default())?;
//! server.start().await; // false: not up yet; it keeps trying
//! let registry = Arc::new(ToolRegistry::new());
//! for skipped in server.attach(&registry) {
//!     eprintln!("skipped: {skipped}");
//! }
//! # Ok(()) }
//! ```

mod decl;
mod names;
mod output;

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::ServiceError;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Notify, watch};

pub use decl::{DEFAULT_TIMEOUT_MS, McpDecl};

use super::{
    Backoff, CallContext, ExecOptions, RegistryError, Tool, ToolError, ToolErrorKind, ToolOrigin,
    ToolRegistry, ToolSpec,
};
use crate::mcp::{Connection, Endpoint, connect};
use crate::plugin::HostConfig;
use decl::Plan;

/// Why an `[[mcp]]` declaration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The declaration is malformed or inconsistent.
    #[error("MCP server `{server}` is not valid: {message}")]
    Invalid {
        /// The server's name.
        server: String,
        /// What is wrong, and what to do.
        message: String,
    },
    /// A header's environment variable is not set.
    #[error(
        "MCP server `{server}` needs environment variable `{var}` (for header `{header}`), and it is not set; set it before starting toolhost"
    )]
    MissingEnv {
        /// The server's name.
        server: String,
        /// The variable.
        var: String,
        /// The header it is for.
        header: String,
    },
}

/// How long [`McpServer::start`] waits for the first connection.
const START_TIMEOUT: Duration = crate::mcp::CONNECT_TIMEOUT;

/// A connection that lasted this long counts as healthy: the next restart
/// starts again from the shortest pause.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);

/// The pause before the first restart; later ones double, with jitter.
const FIRST_RESTART_PAUSE: Duration = Duration::from_millis(250);

/// One MCP server as a source of tools. Cheap to clone; the server runs
/// (and its child process lives) while a handle or one of its tools is
/// held.
#[derive(Clone)]
pub struct McpServer {
    link: Arc<Link>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.link.plan.name)
            .field("endpoint", &self.link.plan.endpoint)
            .finish_non_exhaustive()
    }
}

/// What an MCP server is, for listings: never a secret (headers and
/// variables by name only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpSummary {
    /// The server's name.
    pub server: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command line (stdio) or the URL (HTTP).
    pub target: String,
    /// The prefix of its tools' names.
    pub prefix: String,
    /// Why it is down, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<String>,
    /// Its child process (stdio, while up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// The state shared by a server's handles, its tools and its supervisor.
struct Link {
    plan: Plan,
    state: Mutex<State>,
    /// Registries its tools are kept in.
    registries: Mutex<Vec<Weak<ToolRegistry>>>,
    /// `notifications/tools/list_changed` arrived.
    tools_changed: Arc<Notify>,
    /// A call could not reach the server: reconnect.
    lost: Arc<Notify>,
    /// Counts connection attempts, so `start` can wait for the first.
    attempts: watch::Sender<u64>,
    supervisor: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Default)]
struct State {
    connection: Option<Connection>,
    down: Option<String>,
    tools: Vec<Listed>,
}

/// One of the server's tools as listed.
#[derive(Debug, Clone, PartialEq)]
struct Listed {
    spec: ToolSpec,
    remote: Arc<str>,
}

impl Drop for Link {
    fn drop(&mut self) {
        // The supervisor owns the connection: ending it closes the
        // connection and kills a child process.
        if let Some(task) = self
            .supervisor
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

impl McpServer {
    /// A server from `decl`; nothing is started yet. Variables named in
    /// `env` and `headers` are read now: from the embedder's values in
    /// `config` ([`HostConfig::env`]), else the process environment. The
    /// `[plugins]` budgets of `config` bound what the server may list.
    ///
    /// # Errors
    ///
    /// The declaration is invalid (a name, prefix, URL, header or limit),
    /// or a header's variable is unset.
    pub fn new(decl: McpDecl, config: &HostConfig) -> Result<Self, McpError> {
        let plan = decl::plan(decl, config)?;
        Ok(Self {
            link: Arc::new(Link {
                plan,
                state: Mutex::new(State {
                    down: Some("not started yet".into()),
                    ..State::default()
                }),
                registries: Mutex::new(Vec::new()),
                tools_changed: Arc::new(Notify::new()),
                lost: Arc::new(Notify::new()),
                attempts: watch::channel(0).0,
                supervisor: Mutex::new(None),
            }),
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.link.plan.name
    }

    /// Start it: connect and list its tools, and from then on keep it
    /// connected (restarting it when it dies) and its tools current. Waits
    /// for the first attempt (at most 20 s) and returns whether the server
    /// is up. Calling it again does nothing. Needs a Tokio runtime.
    pub async fn start(&self) -> bool {
        let mut attempts = self.link.attempts.subscribe();
        {
            let mut supervisor = self
                .link
                .supervisor
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if supervisor.is_none() {
                let task = tokio::spawn(supervise(Arc::downgrade(&self.link)));
                *supervisor = Some(task.abort_handle());
            }
        }
        let _ = tokio::time::timeout(
            START_TIMEOUT + Duration::from_secs(1),
            attempts.wait_for(|n| *n > 0),
        )
        .await;
        self.link.state().down.is_none()
    }

    /// Put its tools into `registry` and keep them current there (tools
    /// that appear or go away on a `list_changed`) for as long as the
    /// registry lives. Returns the tools that could not be registered (a
    /// name another tool has); each is also logged.
    pub fn attach(&self, registry: &Arc<ToolRegistry>) -> Vec<RegistryError> {
        self.link
            .registries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::downgrade(registry));
        let tools = self.link.state().tools.clone();
        self.link.sync_into(registry, &[], &tools)
    }

    /// Its tools as they are now (none before it first connects).
    pub fn tools(&self) -> Vec<McpTool> {
        self.link
            .state()
            .tools
            .iter()
            .map(|listed| self.link.tool(listed))
            .collect()
    }

    /// What it is, for listings.
    pub fn summary(&self) -> McpSummary {
        let plan = &self.link.plan;
        let (transport, target) = match &plan.endpoint {
            Endpoint::Stdio { program, args, .. } => (
                "stdio",
                std::iter::once(program.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Endpoint::Http { url, .. } => ("http", url.clone()),
        };
        let state = self.link.state();
        McpSummary {
            server: plan.name.clone(),
            transport,
            target,
            prefix: plan.prefix.clone(),
            down: state.down.clone(),
            pid: state.connection.as_ref().and_then(Connection::pid),
        }
    }

    /// How the registry runs its tools: the declaration's `exec`.
    pub fn exec_options(&self) -> ExecOptions {
        self.link.plan.options.clone()
    }
}

impl Link {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tool(self: &Arc<Self>, listed: &Listed) -> McpTool {
        McpTool {
            link: Arc::clone(self),
            spec: listed.spec.clone(),
            remote: Arc::clone(&listed.remote),
        }
    }

    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Mcp {
            server: self.plan.name.clone(),
        }
    }

    fn set_down(&self, reason: String) {
        tracing::warn!(
            "MCP server `{}` is down: {}; restarting it with backoff",
            self.plan.name,
            crate::text::escape_controls(&reason)
        );
        let mut state = self.state();
        state.connection = None;
        state.down = Some(reason);
    }

    /// List the server's tools and bring every attached registry up to
    /// date.
    async fn refresh(self: &Arc<Self>, connection: &Connection) -> Result<(), ServiceError> {
        let listed = connection.list_tools(self.plan.max_tools).await?;
        let tools = self.check_tools(listed);
        let old = std::mem::replace(&mut self.state().tools, tools.clone());
        let registries: Vec<Arc<ToolRegistry>> = {
            let mut registries = self
                .registries
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            registries.retain(|r| r.strong_count() > 0);
            registries.iter().filter_map(Weak::upgrade).collect()
        };
        for registry in &registries {
            self.sync_into(registry, &old, &tools);
        }
        Ok(())
    }

    /// The listed tools that fit the budgets, as registry tools; each one
    /// that does not is skipped with a warning.
    fn check_tools(&self, listed: Vec<rmcp::model::Tool>) -> Vec<Listed> {
        let plan = &self.plan;
        let server = &plan.name;
        let skip = |remote: &str, why: String| {
            tracing::warn!(
                "MCP server `{server}`: skipped its tool `{}`: {why}",
                crate::text::untrusted(remote, 128)
            );
        };
        if listed.len() > plan.max_tools {
            tracing::warn!(
                "MCP server `{server}` lists more than {} tools; only the first {} are used (raise `plugins.max_tools` in the host config for more)",
                plan.max_tools,
                plan.max_tools
            );
        }
        let mut tools: Vec<Listed> = Vec::new();
        for tool in listed.into_iter().take(plan.max_tools) {
            let remote: &str = &tool.name;
            let Some(name) = names::tool_name(&plan.prefix, remote) else {
                skip(
                    remote,
                    format!(
                        "its name, with prefix `{}`, is not a valid tool name (1 to 64 characters)",
                        plan.prefix
                    ),
                );
                continue;
            };
            if tools.iter().any(|t| t.spec.name == name) {
                skip(
                    remote,
                    format!("another of its tools is also named `{name}`"),
                );
                continue;
            }
            let description = tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned();
            if description.len() > plan.max_description_bytes {
                skip(
                    remote,
                    format!(
                        "its description has {} bytes, more than `plugins.max_description_bytes` = {}",
                        description.len(),
                        plan.max_description_bytes
                    ),
                );
                continue;
            }
            let schema = Value::Object((*tool.input_schema).clone());
            let schema_bytes = serde_json::to_vec(&schema).map_or(usize::MAX, |v| v.len());
            if schema_bytes > plan.max_schema_bytes {
                skip(
                    remote,
                    format!(
                        "its input schema has {schema_bytes} bytes, more than `plugins.max_schema_bytes` = {}",
                        plan.max_schema_bytes
                    ),
                );
                continue;
            }
            tools.push(Listed {
                spec: ToolSpec {
                    name,
                    description,
                    input_schema: schema,
                },
                remote: Arc::from(remote),
            });
        }
        tools
    }

    /// Change `registry` from tools `old` to tools `new`: unregister ours
    /// that went away or changed, register those that are new or changed.
    /// Returns the tools that could not be registered.
    fn sync_into(
        self: &Arc<Self>,
        registry: &ToolRegistry,
        old: &[Listed],
        new: &[Listed],
    ) -> Vec<RegistryError> {
        let ours = |name: &str| {
            registry
                .get(name)
                .is_some_and(|tool| tool.origin() == self.origin())
        };
        for gone in old.iter().filter(|o| !new.contains(o)) {
            if ours(&gone.spec.name) {
                registry.unregister(&gone.spec.name);
            }
        }
        let mut errors = Vec::new();
        for added in new {
            if old.contains(added) && ours(&added.spec.name) {
                continue;
            }
            if let Err(e) =
                registry.register_with(Arc::new(self.tool(added)), self.plan.options.clone())
            {
                tracing::warn!(
                    "MCP server `{}`: skipped its tool `{}`: {}",
                    self.plan.name,
                    crate::text::escape_controls(&added.remote),
                    crate::text::escape_controls(&e.to_string())
                );
                errors.push(e);
            }
        }
        errors
    }

    /// Call the server's tool `remote` with `input`.
    async fn call(&self, remote: &str, input: Value) -> Result<Value, ToolError> {
        let server = &self.plan.name;
        let (connection, down) = {
            let state = self.state();
            (state.connection.clone(), state.down.clone())
        };
        let Some(connection) = connection else {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "MCP server `{server}` is not running ({}); toolhost restarts it with backoff: {}",
                    down.as_deref().unwrap_or("not started"),
                    self.plan.hint
                ),
            ));
        };
        let Value::Object(arguments) = input else {
            return Err(ToolError::invalid_input(
                "an MCP tool takes a JSON object as its input",
            ));
        };
        match connection.call(remote, arguments).await {
            Ok(result) => output::output_of(server, result, self.plan.max_result_bytes),
            Err(ServiceError::McpError(e)) => {
                // JSON-RPC "invalid params": the server refused the input.
                let kind = if e.code.0 == -32602 {
                    ToolErrorKind::InvalidInput
                } else {
                    ToolErrorKind::ToolFailed
                };
                Err(ToolError::new(
                    kind,
                    format!(
                        "MCP server `{server}` refused the call: {}",
                        crate::text::clip(&e.message, 4096)
                    ),
                ))
            }
            Err(e @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed)) => {
                self.lost.notify_one();
                Err(ToolError::new(
                    ToolErrorKind::Unavailable,
                    format!(
                        "MCP server `{server}` could not be reached ({}); toolhost reconnects with backoff: {}",
                        crate::text::clip(&e.to_string(), 512),
                        self.plan.hint
                    ),
                ))
            }
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server `{server}` did not answer within {} ms",
                    timeout.as_millis()
                ),
            )),
            Err(e) => Err(ToolError::failed(format!(
                "MCP server `{server}`: {}",
                crate::text::clip(&e.to_string(), 512)
            ))),
        }
    }
}

/// The pause before restart number `attempt` (0 for the first): the
/// registry's own exponential, jittered backoff, from
/// [`FIRST_RESTART_PAUSE`] up to [`MAX_RETRY_PAUSE`](super::MAX_RETRY_PAUSE).
fn restart_pause(attempt: u32) -> Duration {
    let restarts = ExecOptions {
        retries: u32::MAX,
        retry_delay: FIRST_RESTART_PAUSE,
        backoff: Backoff::Exponential,
        retry_on: vec![ToolErrorKind::Unavailable],
        timeout: None,
    };
    restarts
        .retry_pause(attempt, &ToolError::new(ToolErrorKind::Unavailable, ""))
        .unwrap_or(super::MAX_RETRY_PAUSE)
}

/// Keep the server connected and its tools current, until the server is
/// dropped (which aborts this task and so closes the connection).
async fn supervise(link: Weak<Link>) {
    let mut attempt = 0u32;
    loop {
        let Some(strong) = link.upgrade() else { return };
        let plan = strong.plan.clone();
        let (tools_changed, lost) = (Arc::clone(&strong.tools_changed), Arc::clone(&strong.lost));
        drop(strong);
        let connected = connect(&plan.endpoint, &plan.name, Arc::clone(&tools_changed)).await;
        let Some(strong) = link.upgrade() else { return };
        let reason = match connected {
            Err(e) => {
                let reason = chain(&e);
                strong.set_down(reason.clone());
                reason
            }
            Ok(connected) => {
                let connection = connected.connection;
                let mut closed = connected.closed;
                let up_since = Instant::now();
                {
                    let mut state = strong.state();
                    state.connection = Some(connection.clone());
                    state.down = None;
                }
                let listed = strong.refresh(&connection).await;
                if let Err(e) = &listed {
                    strong.set_down(format!("listing its tools failed: {e}"));
                } else {
                    tracing::debug!("MCP server `{}` is up", plan.name);
                }
                strong.attempts.send_modify(|n| *n += 1);
                drop(strong);
                if listed.is_err() {
                    "listing its tools failed".to_owned()
                } else {
                    let reason = loop {
                        tokio::select! {
                            () = &mut closed => break "its connection closed (did the process exit?)".to_owned(),
                            () = lost.notified() => break "a call could not reach it".to_owned(),
                            () = tools_changed.notified() => {
                                let Some(strong) = link.upgrade() else { return };
                                if let Err(e) = strong.refresh(&connection).await {
                                    break format!("listing its tools failed: {e}");
                                }
                            }
                        }
                    };
                    let Some(strong) = link.upgrade() else { return };
                    strong.set_down(reason.clone());
                    if up_since.elapsed() >= HEALTHY_AFTER {
                        attempt = 0;
                    }
                    reason
                }
            }
        };
        if let Some(strong) = link.upgrade() {
            strong.attempts.send_modify(|n| *n += 1);
        }
        tracing::debug!("MCP server `{}`: {reason}", plan.name);
        tokio::time::sleep(restart_pause(attempt)).await;
        attempt = attempt.saturating_add(1);
    }
}

/// `error` and its sources as one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// One of an MCP server's tools. Holds the server: while any of its tools
/// is registered, the server runs.
#[derive(Clone)]
pub struct McpTool {
    link: Arc<Link>,
    spec: ToolSpec,
    remote: Arc<str>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.link.plan.name)
            .field("remote", &self.remote)
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool's name on its server (without the prefix).
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        input: Value,
        _cx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        let link = Arc::clone(&self.link);
        let remote = Arc::clone(&self.remote);
        Box::pin(async move { link.call(&remote, input).await })
    }

    fn origin(&self) -> ToolOrigin {
        self.link.origin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_declarations_parse_and_check() {
        let doc = include_str!("../../../../docs/mcp.md");
        let section = doc
            .split("## MCP servers as tool sources")
            .nth(1)
            .expect("mcp.md has the section");
        let block = section
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("a toml block");
        let config: HostConfig = toml::from_str(block).unwrap_or_else(|e| panic!("{e}"));
        let config = config.env("SEARCH_TOKEN", "secret");
        assert_eq!(config.mcp.len(), 2);
        for decl in &config.mcp {
            let server = McpServer::new(decl.clone(), &config).unwrap_or_else(|e| panic!("{e}"));
            assert!(!format!("{server:?}").contains("secret"));
            assert!(!format!("{:?}", server.summary()).contains("secret"));
        }
    }

    #[test]
    fn restarts_back_off_with_jitter_up_to_the_cap() {
        for _ in 0..20 {
            let first = restart_pause(0);
            assert!(first >= FIRST_RESTART_PAUSE / 2 && first <= FIRST_RESTART_PAUSE);
            let late = restart_pause(30);
            assert!(late >= super::super::MAX_RETRY_PAUSE / 2);
            assert!(late <= super::super::MAX_RETRY_PAUSE);
        }
    }
}
