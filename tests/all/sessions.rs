//! The life of a conversation's tool state: a run ends its session unless
//! it is kept to be resumed, and the host caps live sessions, evicting the
//! least recently used idle one and never one with a call in flight.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::llm::{AssistantMessage, Message, Provider, ReplayProvider, ToolCall};
use toolhost::plugin::PluginHost;
use toolhost::runner::{RunOutcome, RunnerConfig, ToolRunner};
use toolhost::tools::{CallContext, SessionId, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, plugin_subset, workspace_root};
use toolhost_tests::wait::{CallLog, PATIENCE};

fn host(config: HostConfig) -> PluginHost {
    PluginHost::new(HostConfig {
        cache_dir: Some(workspace_root().join("target").join("test-cache")),
        ..config
    })
    .expect("the sandbox starts")
}

async fn scratchpad(config: HostConfig) -> (tempfile::TempDir, PluginHost, Arc<ToolRegistry>) {
    let dir = plugin_subset(&["scratchpad"]);
    let host = host(config);
    let report = host
        .load_dir(dir.path())
        .await
        .expect("the directory loads");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = Arc::new(report.registry().expect("the tools register"));
    (dir, host, registry)
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

/// Turn k answers a request with k assistant messages: the first run puts
/// a note (turns 0, 1), the second reads it (turns 2, 3).
fn model() -> Arc<dyn Provider> {
    Arc::new(ReplayProvider::new(vec![
        call(
            "put",
            "scratchpad_put",
            json!({"key": "colour", "value": "teal"}),
        ),
        text("Noted."),
        call("get", "scratchpad_get", json!({"key": "colour"})),
        text("Done."),
    ]))
}

/// The note `scratchpad_get` returned in the second run.
fn note_read(outcome: &RunOutcome) -> Value {
    let result = outcome
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool(r) if r.tool_call_id == "get" => Some(r.content.clone()),
            _ => None,
        })
        .expect("the get call was answered");
    serde_json::from_str::<Value>(&result).expect("the result is JSON")["value"].clone()
}

/// Run 1 puts a note, kept or not; run 2 continues from its messages in the
/// same session and reads the note back.
async fn two_runs(keep: bool) -> (RunOutcome, PluginHost) {
    let (_dir, host, registry) = scratchpad(HostConfig::default()).await;
    let provider = model();
    let first = ToolRunner::new(
        Arc::clone(&provider),
        Arc::clone(&registry),
        RunnerConfig::default(),
        vec![Message::user("Remember that my colour is teal.")],
    );
    let first = if keep { first.keep_session() } else { first };
    let first = first.await.expect("the first run ends");
    assert_eq!(first.final_text, "Noted.");
    assert_eq!(host.live_sessions(), usize::from(keep));
    let mut messages = first.messages;
    messages.push(Message::user("What is my colour?"));
    let second = ToolRunner::new(provider, registry, RunnerConfig::default(), messages)
        .with_session(first.session.clone())
        .await
        .expect("the second run ends");
    assert_eq!(second.session, first.session);
    assert_eq!(second.final_text, "Done.");
    (second, host)
}

#[tokio::test]
async fn a_kept_session_resumes_with_its_tool_state() {
    let (second, host) = two_runs(true).await;
    assert_eq!(note_read(&second), json!("teal"));
    assert_eq!(host.live_sessions(), 0, "the second run was not kept");
}

#[tokio::test]
async fn a_run_not_kept_ends_its_session_and_the_next_run_starts_afresh() {
    let (second, _host) = two_runs(false).await;
    assert_eq!(
        note_read(&second),
        Value::Null,
        "the state ended with run 1"
    );
}

async fn increment(registry: &ToolRegistry, session: &str) -> Value {
    let cx = CallContext::in_session(SessionId::new(session));
    registry
        .call("scratchpad_increment", json!({}), &cx)
        .await
        .output
        .expect("the call succeeds")["value"]
        .clone()
}

#[tokio::test]
async fn at_the_session_cap_the_least_recently_used_conversations_lose_their_state() {
    let config = HostConfig {
        max_sessions: Some(3),
        ..HostConfig::default()
    };
    let (_dir, host, registry) = scratchpad(config).await;
    for session in ["1", "2", "3", "4", "5"] {
        assert_eq!(increment(&registry, session).await, json!(1));
    }
    assert_eq!(host.live_sessions(), 3);
    // The three newest kept their counters...
    for session in ["5", "4", "3"] {
        assert_eq!(
            increment(&registry, session).await,
            json!(2),
            "session {session}"
        );
    }
    // ... the two oldest were evicted, their state lost.
    for session in ["1", "2"] {
        assert_eq!(
            increment(&registry, session).await,
            json!(1),
            "session {session}"
        );
    }
    assert_eq!(host.live_sessions(), 3);
}

#[tokio::test]
async fn a_session_with_a_call_in_flight_is_never_evicted_and_a_full_host_says_busy() {
    let dir = plugin_subset(&["scratchpad"]);
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "stateful = true\n[limits]\ntimeout_ms = 5000\n",
    )
    .unwrap();
    let host = host(HostConfig {
        max_sessions: Some(1),
        ..HostConfig::default()
    });
    let report = host
        .load_dir(dir.path())
        .await
        .expect("the directory loads");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = Arc::new(report.registry().expect("the tools register"));
    let (sink, mut log) = CallLog::sink();
    let sleeping = {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let cx = CallContext::in_session(SessionId::new("sleeper")).with_logs(sink);
            registry
                .call("hostile_sleep", json!({"ms": 1500}), &cx)
                .await
                .output
        })
    };
    // The sleeper's session is the one live session, and busy.
    log.wait_for("sleep started", 1, PATIENCE).await;
    assert_eq!(host.live_sessions(), 1);
    let cx = CallContext::in_session(SessionId::new("newcomer"));
    let e = registry
        .call("scratchpad_increment", json!({}), &cx)
        .await
        .output
        .expect_err("the only session is busy, and the cap is 1");
    assert_eq!(e.kind, ToolErrorKind::Busy, "{e}");
    assert!(e.message.contains("max_sessions"), "{}", e.message);
    sleeping
        .await
        .unwrap()
        .expect("the sleeper's call was not disturbed");
    // Idle now: the newcomer evicts it.
    assert_eq!(increment(&registry, "newcomer").await, json!(1));
    assert_eq!(host.live_sessions(), 1);
}

#[test]
fn max_sessions_outside_1_to_max_instances_is_refused_naming_the_setting() {
    for max_sessions in [0, 11] {
        let e = PluginHost::new(HostConfig {
            max_instances: 10,
            max_sessions: Some(max_sessions),
            ..HostConfig::default()
        })
        .expect_err("out of range");
        assert!(e.to_string().contains("max_sessions"), "{e}");
    }
    let host = PluginHost::new(HostConfig {
        max_instances: 10,
        max_sessions: Some(10),
        ..HostConfig::default()
    })
    .expect("up to max_instances is allowed");
    assert_eq!(host.live_sessions(), 0);
}
