//! Embed toolhost in a program: load a plugin directory, call tools, and
//! handle each kind of failure.
//!
//! Run it on the bundled plugins:
//!
//! ```sh
//! plugins/build.sh && cargo run -p toolhost-examples --example embed -- target/plugins
//! ```

use std::path::PathBuf;

use serde_json::json;
use toolhost::{CallContext, HostConfig, PluginHost, SessionId, ToolErrorKind};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| "target/plugins".into());

    // Deny-by-default host: no directory, environment or network grants are
    // allowed, so plugins that ask for them are refused at load. Compiled
    // components are cached, so only the first run compiles.
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(std::env::temp_dir().join("toolhost-example-cache")),
        ..HostConfig::default()
    })?;
    let report = host.load_dir(&dir).await?;
    for error in &report.errors {
        // A broken or over-asking plugin is skipped; the others load.
        println!("skipped: {error}");
    }
    let registry = report.registry()?;
    println!("loaded {} tools from {}", registry.len(), dir.display());

    let calls = [
        ("calc_eval", json!({"expression": "2 * (3 + 4) ^ 2"})),
        ("calc_eval", json!({"expression": "1 / 0"})),
        ("calc_eval", json!({"expr": "missing field"})),
        ("no_such_tool", json!({})),
    ];
    // One session for the whole conversation: stateful tools keep state in it.
    let cx = CallContext::in_session(SessionId::new("example"));
    for (tool, input) in calls {
        match registry.call(tool, input.clone(), &cx).await.output {
            Ok(output) => println!("{tool}({input}) = {output}"),
            Err(e) => match e.kind {
                ToolErrorKind::InvalidInput => println!("{tool}: fix the input: {}", e.message),
                ToolErrorKind::UnknownTool => println!("{tool}: no such tool"),
                ToolErrorKind::OutOfFuel | ToolErrorKind::Timeout | ToolErrorKind::MemoryLimit => {
                    println!("{tool}: hit a sandbox limit ({}): {}", e.kind, e.message)
                }
                _ => println!("{tool}: failed ({}): {}", e.kind, e.message),
            },
        }
    }
    registry.end_session(&SessionId::new("example"));
    Ok(())
}
