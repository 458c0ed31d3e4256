//! Test support shared by the integration tests in `tests/all`: the built
//! plugin fixtures and loopback servers that speak each provider's wire
//! format.

pub mod mcp;
pub mod plugins;
pub mod providers;
pub mod registry;
pub mod telemetry;
