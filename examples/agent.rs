//! An agent in a few lines: the capped tool loop ([`ToolRunner`]) over the
//! sandboxed plugins of a directory, with a model chosen from the
//! environment.
//!
//! Offline, with a recorded conversation standing in for the model:
//!
//! ```sh
//! plugins/build.sh rust && cargo run -p toolhost-examples --example agent -- target/plugins
//! ```
//!
//! Against a real model, name the provider (its key comes from its own
//! variable: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`):
//!
//! ```sh
//! TOOLHOST_PROVIDER=openai cargo run -p toolhost-examples --example agent -- target/plugins "What is 17% of 2,340?"
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use toolhost::runner::{CallStatus, OverLimitPolicy};
use toolhost::{
    HostConfig, Message, PluginHost, ProviderKind, ProviderOptions, RunnerConfig, ToolRunner,
};

/// The recording the offline run plays (the same one as the quick start).
const RECORDING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/demo/trip.json");

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/plugins".into()));
    let prompt = args.next().unwrap_or_else(|| {
        "How far are three marathons in miles? Save the plan as a note and give me a slug \
         for the title."
            .into()
    });

    // The model: replay by default, or the provider TOOLHOST_PROVIDER names.
    let kind: ProviderKind = std::env::var("TOOLHOST_PROVIDER")
        .unwrap_or_else(|_| "replay".into())
        .parse()?;
    let api_key = kind
        .api_key_env(None)
        .iter()
        .find_map(|var| std::env::var(var).ok());
    let provider = kind.build(ProviderOptions {
        api_key,
        replay_file: (kind == ProviderKind::Replay).then(|| RECORDING.into()),
        ..ProviderOptions::default()
    })?;

    // The tools: every plugin in the directory, deny-by-default.
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(std::env::temp_dir().join("toolhost-example-cache")),
        ..HostConfig::default()
    })?;
    let report = host.load_dir(&dir).await?;
    for error in &report.errors {
        println!("skipped: {error}");
    }
    let registry = Arc::new(report.registry()?);

    // The loop, capped: at most 5 rounds and 2 calls per answer; calls over
    // the cap are answered "not executed" so the model can ask again.
    let config = RunnerConfig {
        max_iterations: 5,
        max_calls_per_response: Some(2),
        over_limit: OverLimitPolicy::Decline,
        ..RunnerConfig::default()
    };
    let messages = vec![Message::user(prompt)];
    let outcome = ToolRunner::new(provider, registry, config, messages)
        .on_tool_result(|record| {
            let shown = match record.status {
                CallStatus::Succeeded => record.result.content.clone(),
                other => format!("{other:?}: {}", record.result.content),
            };
            println!("tool {} -> {shown}", record.call.name);
        })
        .await
        .map_err(|e| anyhow::anyhow!("the run failed: {}", e.kind))?;

    println!(
        "answer after {} round(s) and {} tool call(s): {}",
        outcome.iterations, outcome.tool_calls, outcome.final_text
    );
    Ok(())
}
