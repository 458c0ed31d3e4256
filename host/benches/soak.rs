//! Soak: many conversations with a stateful plugin, each its own session
//! that is kept, resumed and ended, from several callers at once. Memory
//! must stay flat and no call may fail.
//!
//! ```sh
//! cargo bench -p toolhost --bench soak                          # 10,000 conversations, 2 callers
//! cargo bench -p toolhost --bench soak -- --conversations 1000 --callers 4
//! cargo test  --workspace --bench soak                          # smoke run (100 conversations)
//! ```
//!
//! Each conversation is two [`ToolRunner`] runs against a replayed model
//! and the real `scratchpad` plugin: the first (kept) saves a note and
//! counts to 1, the second (resumed in the same session) reads the note and
//! counts to 2, then ends the session. It prints the resident set size at
//! the start, after the first tenth (the warm-up) and at the end, and exits
//! non-zero on any error, on a wrong answer, or when a session outlives
//! its conversation.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::llm::{AssistantMessage, Message, Provider, ReplayProvider, ToolCall};
use toolhost::plugin::PluginHost;
use toolhost::runner::{RunnerConfig, ToolRunner};
use toolhost::tools::{SessionId, ToolRegistry};

mod common;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let full = args.iter().any(|a| a == "--bench");
    let conversations: usize = flag("--conversations")
        .map_or(if full { 10_000 } else { 100 }, |s| {
            s.parse().expect("--conversations N")
        });
    let callers: usize = flag("--callers").map_or(2, |s| s.parse().expect("--callers N"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned();
    let plugins = flag("--plugins").map_or_else(|| root.join("target/plugins"), Into::into);
    common::ensure_rust_plugins(&root, &[&plugins.join("scratchpad.wasm")]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(callers.max(1))
        .enable_all()
        .build()
        .unwrap();
    let failures = rt.block_on(soak(&plugins, conversations, callers.max(1)));
    if failures == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// The resident set size of this process, in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn call(id: &str, name: &str, arguments: Value) -> AssistantMessage {
    AssistantMessage {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
            signature: None,
        }],
        ..AssistantMessage::default()
    }
}

fn text(content: &str) -> AssistantMessage {
    AssistantMessage {
        content: content.into(),
        ..AssistantMessage::default()
    }
}

/// Turn k answers a request with k assistant messages: run 1 gets turns
/// 0-2, the resumed run 3-5.
fn model() -> Arc<dyn Provider> {
    Arc::new(ReplayProvider::new(vec![
        call("put", "scratchpad_put", json!({"key": "k", "value": "v"})),
        call("inc1", "scratchpad_increment", json!({})),
        text("saved"),
        call("get", "scratchpad_get", json!({"key": "k"})),
        call("inc2", "scratchpad_increment", json!({})),
        text("read"),
    ]))
}

/// The output of tool call `id` in `messages`, if it succeeded.
fn output(messages: &[Message], id: &str) -> Option<Value> {
    messages.iter().find_map(|m| match m {
        Message::Tool(r) if r.tool_call_id == id && !r.is_error => {
            serde_json::from_str(&r.content).ok()
        }
        _ => None,
    })
}

/// One conversation: run 1 kept, run 2 resumed in the same session.
async fn conversation(
    provider: &Arc<dyn Provider>,
    registry: &Arc<ToolRegistry>,
    n: usize,
) -> Result<(), String> {
    let session = SessionId::new(format!("soak-{n}"));
    let first = ToolRunner::new(
        Arc::clone(provider),
        Arc::clone(registry),
        RunnerConfig::default(),
        vec![Message::user("save a note")],
    )
    .with_session(session.clone())
    .keep_session()
    .await
    .map_err(|e| format!("run 1: {e}"))?;
    if output(&first.messages, "inc1").is_none_or(|v| v["value"] != json!(1)) {
        return Err(format!("run 1: the counter is not 1: {:?}", first.messages));
    }
    let mut messages = first.messages;
    messages.push(Message::user("read it back"));
    let second = ToolRunner::new(
        Arc::clone(provider),
        Arc::clone(registry),
        RunnerConfig::default(),
        messages,
    )
    .with_session(session)
    .await
    .map_err(|e| format!("run 2: {e}"))?;
    let note = output(&second.messages, "get").map(|v| v["value"].clone());
    let count = output(&second.messages, "inc2").map(|v| v["value"].clone());
    if note != Some(json!("v")) || count != Some(json!(2)) {
        return Err(format!(
            "run 2 lost the session's state: note {note:?}, counter {count:?}"
        ));
    }
    Ok(())
}

/// Run the soak; the number of failures.
async fn soak(plugins: &Path, conversations: usize, callers: usize) -> usize {
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(plugins.parent().unwrap().join("bench-cache")),
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new();
    common::register_plugins(&host, plugins, &["scratchpad"], &registry).await;
    let registry = Arc::new(registry);
    let provider = model();
    let start_rss = rss_kib();
    println!(
        "soak: {conversations} conversations (2 runs, 4 stateful calls each), {callers} callers"
    );
    println!("rss at start:          {}", mib(start_rss));
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let warm_rss = Arc::new(AtomicUsize::new(0));
    let warm_up = (conversations / 10).max(1);
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let (next, done, warm_rss) =
                (Arc::clone(&next), Arc::clone(&done), Arc::clone(&warm_rss));
            let (provider, registry) = (Arc::clone(&provider), Arc::clone(&registry));
            tokio::spawn(async move {
                let mut errors = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= conversations {
                        break errors;
                    }
                    if let Err(e) = conversation(&provider, &registry, n).await {
                        errors.push(format!("conversation {n}: {e}"));
                    }
                    if done.fetch_add(1, Ordering::Relaxed) + 1 == warm_up {
                        warm_rss.store(rss_kib() as usize, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let mut errors = Vec::new();
    for task in tasks {
        errors.extend(
            task.await
                .unwrap_or_else(|e| vec![format!("a caller panicked: {e}")]),
        );
    }
    let elapsed = started.elapsed();
    let warm = warm_rss.load(Ordering::Relaxed) as u64;
    let end_rss = rss_kib();
    println!("rss after {warm_up:>6} conv.: {}", mib(warm));
    println!(
        "rss at end:            {} ({:+.1} MiB since the warm-up)",
        mib(end_rss),
        (end_rss as f64 - warm as f64) / 1024.0
    );
    println!(
        "{conversations} conversations in {elapsed:.1?} ({:.0} conversations/s, {:.0} calls/s)",
        conversations as f64 / elapsed.as_secs_f64(),
        (conversations * 4) as f64 / elapsed.as_secs_f64()
    );
    let live = host.live_sessions();
    if live != 0 {
        errors.push(format!(
            "{live} sessions are still live after every conversation ended"
        ));
    }
    println!("errors: {}", errors.len());
    for e in errors.iter().take(10) {
        eprintln!("  {e}");
    }
    errors.len()
}
