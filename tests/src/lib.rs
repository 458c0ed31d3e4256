//! Test support shared by the integration tests in `tests/all`: the built
//! plugin fixtures and loopback servers that speak each provider's wire
//! format.

pub mod mcp;
pub mod plugins;
pub mod providers;
pub mod registry;
pub mod telemetry;
pub mod wait;

/// The Rust samples of the README and of the guides in `docs/`, compiled
/// (and, unless marked `no_run`, run) as doctests by `cargo test
/// --workspace --doc`, so that a sample cannot drift from the API. A
/// guide's other code blocks (`sh`, `toml`, `json`, ...) are not Rust and
/// are left alone.
#[cfg(doctest)]
pub mod docs {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/design.md")]
    pub struct Design;
    #[doc = include_str!("../../docs/runner.md")]
    pub struct Runner;
    #[doc = include_str!("../../docs/mcp.md")]
    pub struct Mcp;
    #[doc = include_str!("../../docs/cli.md")]
    pub struct Cli;
    #[doc = include_str!("../../docs/deploy.md")]
    pub struct Deploy;
    #[doc = include_str!("../../docs/rest.md")]
    pub struct Rest;
    #[doc = include_str!("../../docs/security.md")]
    pub struct Security;
    #[doc = include_str!("../../docs/wit.md")]
    pub struct Wit;
    #[doc = include_str!("../../docs/publishing.md")]
    pub struct Publishing;
    #[doc = include_str!("../../docs/benchmarks.md")]
    pub struct Benchmarks;
    #[doc = include_str!("../../docs/search.md")]
    pub struct Search;
    #[doc = include_str!("../../docs/tasks.md")]
    pub struct Tasks;
    #[doc = include_str!("../../docs/plugins/rust.md")]
    pub struct RustPlugins;
}
