//! All integration tests, as one binary (one link, shared fixtures).

mod cli;
mod deadline;
mod examples;
mod hostile_data;
mod hostile_io;
mod http;
mod integrity;
mod languages;
mod llm;
mod load;
mod mcp;
mod mcp_client;
mod mcp_handles;
mod mcp_peers;
mod mcp_untrusted;
mod new;
mod rest;
mod rest_secrets;
mod run_cli;
mod runner;
mod sandbox;
mod serve_limits;
mod sessions;
mod trust;
mod watch;
