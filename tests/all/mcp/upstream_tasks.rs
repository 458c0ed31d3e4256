//! Issue 38, item 4: toolhost as the client of an upstream that offers MCP
//! tasks. The upstream is `toolhost serve --http` on the plugins of
//! [`super::tasks::setup`] (`hostile_sleep` may run as a task for 120 s; a
//! plain call of it stops at 1 s; `calc` never runs as a task); the client
//! is an `[[mcp]]` source whose requests time out after 2 s. A call far
//! longer than that finishes through the task and its status reaches the
//! caller as progress; a plain tool of the same upstream works as before;
//! a call dropped before its end cancels the upstream's task.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::mcp::{McpDecl, McpServer};
use toolhost::tools::{CallContext, Progress, ProgressSink, ToolRegistry};
use toolhost_tests::mcp::ServeHttp;

use super::tasks::setup;

/// The client's `exec.timeout_ms`: what one request may take.
const REQUEST_TIMEOUT_MS: u64 = 2000;

/// An `[[mcp]]` source on `url`, started, in a registry of its own.
async fn client_of(url: &str) -> (McpServer, Arc<ToolRegistry>) {
    let decl: McpDecl = toml::from_str(&format!(
        "name = \"up\"\nurl = {url:?}\nexec = {{ timeout_ms = {REQUEST_TIMEOUT_MS} }}\ntask_timeout_secs = 60\n"
    ))
    .unwrap();
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    assert_eq!(server.task_timeout(), Duration::from_secs(60));
    assert_eq!(
        server.exec_options().timeout,
        Some(Duration::from_millis(REQUEST_TIMEOUT_MS))
    );
    let registry = Arc::new(ToolRegistry::new());
    assert!(server.attach(&registry).is_empty());
    (server, registry)
}

/// The status of the latest `hostile_sleep` task in the upstream's store
/// (read-only, beside the running server).
fn latest_task_status(store: &Path) -> String {
    let db =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("the upstream's task store opens read-only");
    db.query_row(
        "SELECT status FROM tasks WHERE tool = 'hostile_sleep' ORDER BY seq DESC LIMIT 1",
        [],
        |row| row.get(0),
    )
    .expect("a hostile_sleep task in the store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_longer_than_a_request_finishes_through_the_upstream_s_task() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "poll_interval_ms = 200\n");
    let upstream = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (_server, registry) = client_of(&upstream.url).await;

    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let cx = CallContext::default().with_progress(sink);
    let start = Instant::now();
    let report = registry
        .call("up_hostile_sleep", json!({"ms": 5000, "steps": 5}), &cx)
        .await;
    let output = report
        .output
        .unwrap_or_else(|e| panic!("the task's result, not: {e}"));
    assert!(
        start.elapsed() >= Duration::from_millis(REQUEST_TIMEOUT_MS * 2),
        "the call outlived one request"
    );
    assert!(
        output["slept_ms"].as_u64().is_some_and(|ms| ms >= 5000),
        "{output}"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|p| p
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("slept "))),
        "the task's status messages reach the caller as progress: {seen:?}"
    );
    assert_eq!(
        latest_task_status(&dir.path().join("tasks.sqlite3")),
        "completed"
    );

    // A tool that never runs as a task is a plain call, as before.
    let plain = registry
        .call(
            "up_calc_eval",
            json!({"expression": "1 + 2"}),
            &CallContext::default(),
        )
        .await;
    let value = plain.output.unwrap_or_else(|e| panic!("{e}"));
    assert!(value.to_string().contains('3'), "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_cancels_the_upstream_s_task() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "poll_interval_ms = 200\n");
    let upstream = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (_server, registry) = client_of(&upstream.url).await;
    let store = dir.path().join("tasks.sqlite3");

    let cx = CallContext::default();
    let call = registry.call("up_hostile_sleep", json!({"ms": 60_000}), &cx);
    assert!(
        tokio::time::timeout(Duration::from_secs(3), call)
            .await
            .is_err(),
        "a 60 s call is still running"
    );
    let start = Instant::now();
    loop {
        let status = latest_task_status(&store);
        if status == "cancelled" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the upstream's task is {status:?}, not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A call of a tool the upstream will not run as a task is held to the
/// request timeout, and the error says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_call_is_still_held_to_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(
        dir.path(),
        "[tasks.support]\nhostile_sleep = \"forbidden\"\n",
    );
    // The plugin's own plain deadline is longer than the client's.
    std::fs::write(
        plugins.join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 30000\n",
    )
    .unwrap();
    let upstream = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (_server, registry) = client_of(&upstream.url).await;
    let start = Instant::now();
    let report = registry
        .call(
            "up_hostile_sleep",
            json!({"ms": 10_000}),
            &CallContext::default(),
        )
        .await;
    let error = report.output.expect_err("past the request timeout");
    assert!(start.elapsed() < Duration::from_secs(8), "{error}");
    assert_eq!(
        error.kind,
        toolhost::tools::ToolErrorKind::Timeout,
        "{error}"
    );
    assert!(
        error.message.contains("exec.timeout_ms")
            && error.message.contains("did not run this call as one"),
        "{error}"
    );
}

/// `toolhost run`'s loop (the library's `ToolRunner`, whose `on_progress`
/// the CLI draws its live line from) waits out a call longer than a
/// request, hearing the upstream task's status as the call's progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_hears_an_upstream_task_s_progress_and_gets_its_result() {
    use toolhost::llm::{Message, ProviderKind, ProviderOptions};
    use toolhost::runner::{RunnerConfig, ToolRunner};
    use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "poll_interval_ms = 200\n");
    let upstream = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (_server, registry) = client_of(&upstream.url).await;
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("up_hostile_sleep", json!({"ms": 4000, "steps": 4})).with_id("call_t"),
    ]));
    fake.push(Turn::text("done"));
    let provider = ProviderKind::OpenAi
        .build(ProviderOptions {
            base_url: Some(fake.url()),
            model: Some("test-model".into()),
            api_key: Some("test-key".into()),
            ..ProviderOptions::default()
        })
        .unwrap();
    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    let results: Arc<Mutex<Vec<String>>> = Arc::default();
    let (on_progress, on_result) = (Arc::clone(&heard), Arc::clone(&results));
    let outcome = ToolRunner::new(
        provider,
        registry,
        RunnerConfig::default(),
        vec![Message::user("sleep")],
    )
    .on_progress(move |call, p| {
        on_progress.lock().unwrap().push(format!(
            "{} {}",
            call.id,
            p.message.as_deref().unwrap_or_default()
        ));
    })
    .on_tool_result(move |record| {
        assert!(!record.result.is_error, "{}", record.result.content);
        on_result
            .lock()
            .unwrap()
            .push(record.result.content.clone());
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.tool_calls, 1);
    let heard = heard.lock().unwrap().clone();
    assert!(
        heard.iter().any(|h| h.starts_with("call_t slept ")),
        "{heard:?}"
    );
    let results = results.lock().unwrap().clone();
    assert!(
        results.len() == 1 && results[0].contains("slept_ms"),
        "{results:?}"
    );
}
