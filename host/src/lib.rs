//! toolhost runs LLM tools as sandboxed WebAssembly components and drives the
//! capped, provider-correct LLM tool loop.
//!
//! # Start here
//!
//! [`Toolbox`] is the one entry point: a [`HostConfig`] and a plugin
//! directory (plus REST endpoints, MCP servers and native Rust tools)
//! become one [`ToolRegistry`] and a report of what loaded. Hand the
//! registry to a [`ToolRunner`] to let a model call the tools, to
//! [`mcp::server`] to serve them over MCP, or call a tool yourself. The
//! `toolhost` command line (crate `toolhost-cli`) is a program on this
//! public API and nothing more: whatever it does, a program can.
//!
//! ```no_run
//! use toolhost::{HostConfig, NativeTool, Toolbox};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let toolbox = Toolbox::builder(HostConfig::default())
//!     .plugins("plugins")
//!     .native(NativeTool::new(
//!         "shout",
//!         "Upper-cases a text.",
//!         serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
//!         |input| async move { Ok(serde_json::json!(input["text"].as_str().unwrap_or("").to_uppercase())) },
//!     ))
//!     .build()
//!     .await?;
//! for error in &toolbox.plugin_report().errors {
//!     eprintln!("skipped: {error}");
//! }
//! let tools = toolbox.registry().snapshot();
//! for spec in tools.specs() {
//!     println!("{}: {}", spec.name, spec.description);
//! }
//! # Ok(()) }
//! ```
//!
//! # Modules
//!
//! From the entry point down (a module imports only those below it):
//!
//! - [`toolbox`]: the entry point, config + plugin directory → one registry, hot reload.
//! - [`plugin`]: plugin directories, manifests, integrity, components as tools.
//! - [`oci`]: plugins pushed to and pulled from OCI registries.
//! - [`config`]: the operator's `toolhost.toml` ([`HostConfig`]) and its validation.
//! - [`runner`]: the capped LLM tool loop, [`ToolRunner`], transcripts.
//! - [`mcp`]: the MCP client (`[[mcp]]` sources) and (feature `server`) the MCP server.
//! - [`approval`]: asking a person before a tool call runs.
//! - [`llm`]: provider-neutral [`Message`]s and one module per wire format.
//! - [`sandbox`]: per-call [`Limits`] and deny-by-default [`Permissions`].
//! - [`tools`]: the [`Tool`] trait, the [`ToolRegistry`], [`ToolError`], REST and native tools.
//! - [`telemetry`]: metrics (Prometheus) and spans (OpenTelemetry GenAI conventions).
//! - [`egress`]: where outbound HTTP may go ([`egress::HttpOrigin`]).
//! - [`environ`]: variable values a program hands in ([`Environment`]); the library reads none.
//! - [`signing`]: SHA-256 digests, Ed25519 keys and signature files.
//! - [`tasks`]: tool calls that outlive a request (MCP Tasks), kept in an embedded SQLite store.
//! - [`text`]: clipping and escaping text that came from outside (plugins, peers) before it is shown.
//! - [`fsread`]: the one bounded way to read a file the host is pointed at.
//!
//! # Features
//!
//! - `server` (default): the MCP server, [`mcp::server`].
//! - `otlp` (default): traces exported over OTLP/HTTP
//!   (`telemetry::tracer_provider`).

pub mod approval;
pub mod config;
pub mod egress;
pub mod environ;
pub mod fsread;
#[doc(hidden)]
pub mod fuzzing;
mod json;
pub mod llm;
pub mod mcp;
pub mod oci;
pub mod plugin;
pub mod runner;
pub mod sandbox;
pub mod signing;
pub mod tasks;
pub mod telemetry;
pub mod text;
mod tls;
pub mod toolbox;
pub mod tools;

pub use config::HostConfig;
pub use environ::Environment;
pub use llm::{Message, ProviderKind, ProviderOptions};
pub use plugin::PluginHost;
pub use runner::{RunnerConfig, StopReason, ToolRunner};
pub use sandbox::{Limits, Permissions};
pub use toolbox::{Toolbox, ToolboxError};
pub use tools::{
    CallContext, NativeTool, SessionId, Tool, ToolError, ToolErrorKind, ToolOutput, ToolRegistry,
};
