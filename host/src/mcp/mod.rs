//! MCP over the official SDK (rmcp), both ways: MCP servers as tool
//! sources (`[[mcp]]` in the host config, below), and the MCP server
//! ([`server`], cargo feature `server`) that offers any registry's tools
//! over stdio or streamable HTTP.
//!
//! An [`McpServer`] is one declared server ([`McpDecl`]): a child process
//! speaking MCP on stdio, or a streamable HTTP endpoint. Once
//! [started](McpServer::start), its tools join every registry it is
//! [attached](McpServer::attach) to as `PREFIX` + the tool's name (default
//! prefix `NAME_`), validated against their input schema by the registry
//! like any other tool, and run with the declaration's
//! [`ExecOptions`](crate::tools::ExecOptions) (`exec`: timeout, retries).
//!
//! - A server that dies (its process exits, its connection fails) is
//!   restarted with exponential, jittered backoff (at most
//!   [`MAX_RETRY_PAUSE`](crate::tools::MAX_RETRY_PAUSE) apart). While it is down its
//!   tools stay listed and answer `unavailable`, naming the server and what
//!   to check.
//! - A server is up once it has listed its tools: one that does not
//!   answer `tools/list` within `list_timeout_ms` (default
//!   [`DEFAULT_LIST_TIMEOUT_MS`]) is down, says so, and is restarted the
//!   same way.
//! - `notifications/tools/list_changed` refreshes its tools in the
//!   registries it is attached to.
//! - One message from the server is at most the larger of 16 MiB and
//!   `max_result_kb`, plus 1 MiB: a result over it is `output_too_large`
//!   (as is one over `max_result_kb`), a tool list over it puts the server
//!   down; neither waits for a deadline.
//! - The secrets sent to the server (header values from the environment;
//!   for a stdio server, the values of variables whose names say they are
//!   credentials: `*TOKEN*`, `*KEY*`, `*SECRET*`, `*PASSWORD*`, ...) are
//!   redacted from everything it sends back: results, error messages,
//!   tool descriptions and schemas, its stderr in the log.
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
//! use toolhost::config::HostConfig;
//! use toolhost::tools::ToolRegistry;
//! use toolhost::mcp::{McpDecl, McpServer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let decl: McpDecl = toml::from_str(r#"
//!     name = "time"
//!     command = "python3"
//!     args = ["-m", "mcp_server_time"]
//! "#)?;
//! let server = McpServer::new(decl, &HostConfig::default().mcp_rules())?;
//! server.start().await; // false: not up yet; it keeps trying
//! let registry = Arc::new(ToolRegistry::new());
//! for skipped in server.attach(&registry) {
//!     eprintln!("skipped: {skipped}");
//! }
//! # Ok(()) }
//! ```

mod client;
pub(crate) mod frames;
#[cfg(feature = "server")]
pub mod server;
pub(crate) mod source;

pub use source::{
    DEFAULT_LIST_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, McpDecl, McpError, McpRules, McpServer,
    McpSummary, McpTool,
};

pub(crate) use client::{Bounds, CONNECT_TIMEOUT, Endpoint, Heard, Upstream, connect, too_large};
