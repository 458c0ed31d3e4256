//! toolhost runs LLM tools as sandboxed WebAssembly components and drives the
//! capped, provider-correct LLM tool loop.
//!
//! The crate is split by concern:
//! - [`sandbox`]: per-call [`Limits`](sandbox::Limits) and deny-by-default
//!   [`Permissions`](sandbox::Permissions); the WebAssembly engine, its
//!   instance pool and the compile cache stay inside, behind
//!   [`PluginHost`](plugin::PluginHost).
//! - [`plugin`]: plugin directories, manifests, components as tools.
//! - [`tools`]: the [`Tool`](tools::Tool) trait and the
//!   [`ToolRegistry`](tools::ToolRegistry) every caller goes through.
//! - [`llm`]: provider-neutral messages and one module per wire format.
//! - [`runner`]: the capped loop, [`ToolRunner`](runner::ToolRunner).
//! - [`mcp`]: the MCP client the `[[mcp]]` tool source uses, and (feature
//!   `server`) the MCP server over any registry.
//! - [`text`]: clipping and escaping text that comes from plugins.
//! - [`fsread`]: the one way the host reads a file it is pointed at.
//! - [`oci`]: plugins pushed to and pulled from OCI registries.
//! - [`telemetry`]: metrics (Prometheus) and spans (OpenTelemetry GenAI
//!   conventions) about calls, model requests and the MCP server.

pub mod approval;
pub mod config;
pub mod egress;
pub mod environ;
pub mod fsread;
mod json;
pub mod llm;
pub mod mcp;
pub mod oci;
pub mod plugin;
pub mod runner;
pub mod sandbox;
pub mod signing;
pub mod telemetry;
pub mod text;
mod tls;
pub mod toolbox;
pub mod tools;
