//! MCP servers as tool sources: declared, supervised, their tools
//! attached to registries. See the [module docs](crate::mcp).

mod call;
mod decl;
mod listing;
mod names;
mod offers;
pub(crate) mod output;
mod supervise;

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Notify, watch};

pub use decl::{DEFAULT_LIST_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, McpDecl};

use crate::environ::Environment;
use crate::mcp::{Endpoint, Upstream};
use crate::tools::{
    CallContext, ExecOptions, PluginBudget, RegistryError, Tool, ToolError, ToolOrigin, ToolOutput,
    ToolRegistry, ToolSpec,
};
use decl::Plan;

/// What MCP servers are held to: the narrow part of the operator's config
/// they use ([`HostConfig::mcp_rules`](crate::config::HostConfig::mcp_rules)
/// makes it from a host config).
#[derive(Debug, Clone, Default)]
pub struct McpRules {
    /// The values of the variables a declaration names (a stdio server's
    /// `env`, a header's `env`); `PATH` too, for a stdio child.
    pub env: Environment,
    /// The `[plugins]` budgets, which bound what a server may list.
    pub budget: PluginBudget,
    /// The `[tasks]` table: how long a call an upstream runs as a task may
    /// take (`deadline_secs`, at most `max_deadline_secs`) when its
    /// declaration's `task_timeout_secs` does not say.
    pub tasks: crate::tasks::TasksConfig,
}

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
    /// `notifications/resources/list_changed` or
    /// `notifications/prompts/list_changed` arrived.
    offers_changed: Arc<Notify>,
    /// A call could not reach the server: reconnect.
    lost: Arc<Notify>,
    /// Counts connection attempts, so `start` can wait for the first.
    attempts: watch::Sender<u64>,
    supervisor: Mutex<Option<tokio::task::AbortHandle>>,
    /// Its last listing of resources, templates and prompts, and whether
    /// it takes subscriptions (`offers.rs`).
    offers: Mutex<Option<(offers::Lists, bool)>>,
}

#[derive(Default)]
struct State {
    connection: Option<Upstream>,
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
    /// `config` ([`HostConfig::env`](crate::config::HostConfig::env)), else the process environment. The
    /// `[plugins]` budgets of `config` bound what the server may list.
    ///
    /// # Errors
    ///
    /// The declaration is invalid (a name, prefix, URL, header or limit),
    /// or a header's variable is unset.
    pub fn new(decl: McpDecl, rules: &McpRules) -> Result<Self, McpError> {
        let plan = decl::plan(decl, rules)?;
        Ok(Self {
            link: Arc::new(Link {
                plan,
                state: Mutex::new(State {
                    down: Some("not started yet".into()),
                    ..State::default()
                }),
                registries: Mutex::new(Vec::new()),
                tools_changed: Arc::new(Notify::new()),
                offers_changed: Arc::new(Notify::new()),
                lost: Arc::new(Notify::new()),
                attempts: watch::channel(0).0,
                supervisor: Mutex::new(None),
                offers: Mutex::new(None),
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
                let task = tokio::spawn(supervise::supervise(Arc::downgrade(&self.link)));
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
        self.link.offers_into(registry);
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
            pid: state.connection.as_ref().and_then(Upstream::pid),
        }
    }

    /// How many times the server was connected to (or its process
    /// started), successfully or not: 1 after the first attempt, more
    /// after restarts.
    pub fn connection_attempts(&self) -> u64 {
        *self.link.attempts.borrow()
    }

    /// How the registry runs its tools: the declaration's `exec`. Its
    /// `timeout` is what one request may take; a call the server runs as
    /// a task may go on up to [`McpServer::task_timeout`].
    pub fn exec_options(&self) -> ExecOptions {
        ExecOptions {
            timeout: self.link.plan.request_timeout,
            ..self.link.plan.options.clone()
        }
    }

    /// How long a call the server runs as an MCP task may take in all
    /// (`task_timeout_secs`, else the host config's `[tasks]
    /// deadline_secs`).
    pub fn task_timeout(&self) -> Duration {
        self.link.plan.task_timeout
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

    /// The upstream's whole answer: its images, audio and embedded
    /// resources as content parts beside the structured value.
    fn call(
        &self,
        input: Value,
        cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let link = Arc::clone(&self.link);
        let remote = Arc::clone(&self.remote);
        let cx = cx.clone();
        Box::pin(async move { link.call(&remote, input, &cx).await })
    }

    fn origin(&self) -> ToolOrigin {
        self.link.origin()
    }

    /// A call the server runs as a task reports it through the context's
    /// handoff, leaves it running when detached, and a resuming call
    /// follows it (`source/call.rs`).
    fn follows_tasks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostConfig;

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
            let server =
                McpServer::new(decl.clone(), &config.mcp_rules()).unwrap_or_else(|e| panic!("{e}"));
            assert!(!format!("{server:?}").contains("secret"));
            assert!(!format!("{:?}", server.summary()).contains("secret"));
        }
    }
}
