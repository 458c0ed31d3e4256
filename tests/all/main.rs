//! All integration tests, as one binary (one link, shared fixtures).

mod cache;
mod cli;
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
mod mcp_peers;
mod new;
mod owner;
mod rest;
mod run_cli;
mod runner;
mod sandbox;
mod sessions;
mod trust;
mod watch;
