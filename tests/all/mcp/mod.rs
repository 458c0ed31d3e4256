//! MCP, both ways, against real peers: `toolhost serve` as a server for
//! the official SDKs' clients, the Inspector and the conformance suite, and
//! `[[mcp]]` servers as tool sources. The shared parts (starting `serve`
//! over stdio or HTTP, the handshake, the Python SDK client script) live in
//! `toolhost_tests::mcp`; `serve_limits` keeps the tests of serve's limits
//! under hostile clients.
//!
//! - `serve`: `toolhost serve` driven by the official Python SDK client
//!   (tests/mcp/client.py) over stdio and streamable HTTP, and by raw HTTP.
//! - `revisions`: the protocol revisions the SDKs' default clients speak.
//! - `handles`: plugin state carried by handle (FastMCP, the OpenAI Agents
//!   SDK, raw sessionless requests).
//! - `list_changed`: tools a program or an upstream server adds reach a
//!   connected client.
//! - `peers`: the MCP Inspector's CLI and the conformance suite.
//! - `client`: `[[mcp]]` sources against real servers (mcp-server-time,
//!   server-everything).
//! - `untrusted`: `[[mcp]]` servers that misbehave.
//! - `tasks`: calls that outlive a request (MCP tasks, both revisions).
//! - `upstream_tasks`: an `[[mcp]]` upstream's tasks, followed to their end.
//! - `apps`: MCP Apps from a plugin and a plugin's offers, through the
//!   official TypeScript SDK client.

mod apps;
mod client;
mod handles;
mod list_changed;
pub(crate) mod offers;
mod peers;
mod revisions;
mod serve;
mod tasks;
mod untrusted;
mod upstream_tasks;
