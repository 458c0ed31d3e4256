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

/// An OpenAI provider on the loopback `fake`.
fn openai(fake: &toolhost_tests::providers::FakeOpenAi) -> Arc<dyn toolhost::llm::Provider> {
    toolhost::llm::ProviderKind::OpenAi
        .build(toolhost::llm::ProviderOptions {
            base_url: Some(fake.url()),
            model: Some("test-model".into()),
            api_key: Some("test-key".into()),
            ..toolhost::llm::ProviderOptions::default()
        })
        .unwrap()
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
    use toolhost::llm::Message;
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
    let provider = openai(&fake);
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

/// With `task_pause`, a run pauses on a round whose call still runs as an
/// upstream task: the task runs on (not cancelled), the round's other call
/// keeps its result, the paused round survives a transcript file, and a
/// resumed run follows the task to its result without calling the tool
/// again; the provider sees each call answered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_on_an_upstream_task_and_its_resume_picks_the_task_up() {
    use toolhost::llm::Message;
    use toolhost::runner::{PendingCall, RunnerConfig, StopReason, ToolRunner, Transcript};
    use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "poll_interval_ms = 200\n");
    let upstream = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (_server, registry) = client_of(&upstream.url).await;
    let store = dir.path().join("tasks.sqlite3");
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("up_hostile_sleep", json!({"ms": 4000})).with_id("call_long"),
        FakeCall::new("up_calc_eval", json!({"expression": "6 * 7"})).with_id("call_calc"),
    ]));
    fake.push(Turn::text("done"));
    let provider = openai(&fake);
    let config = RunnerConfig {
        task_pause: Some(Duration::from_millis(800)),
        ..RunnerConfig::default()
    };

    let start = Instant::now();
    let paused = ToolRunner::new(
        Arc::clone(&provider),
        Arc::clone(&registry),
        config,
        vec![Message::user("sleep and count")],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paused.stop_reason, StopReason::AwaitingTask);
    assert!(
        start.elapsed() < Duration::from_millis(3500),
        "it did not wait the task out"
    );
    let round = paused.pending.clone().expect("the paused round");
    let running = round.running();
    assert_eq!(running.len(), 1, "{round:?}");
    assert_eq!(running[0].0.id, "call_long");
    assert!(
        matches!(&round.calls[1], PendingCall::Answered { id, content, .. }
            if id == "call_calc" && content.contains("42")),
        "the finished call keeps its result: {round:?}"
    );
    // The round is not in the history until it is answered.
    assert_eq!(paused.messages.len(), 1, "{:?}", paused.messages);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(latest_task_status(&store), "working", "left running");

    let file = dir.path().join("paused.json");
    Transcript::from_outcome(&paused).save(&file).unwrap();
    let saved = Transcript::load(&file).unwrap();
    // Without a `task_pause` the resumed run waits the task out (under
    // the same one it would pause again).
    let resumed = ToolRunner::resume(provider, registry, RunnerConfig::default(), saved)
        .with_session(paused.session.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resumed.stop_reason, StopReason::Completed);
    assert_eq!(resumed.final_text, "done");
    assert_eq!(latest_task_status(&store), "completed");
    let db =
        rusqlite::Connection::open_with_flags(&store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let tasks: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE tool = 'hostile_sleep'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(tasks, 1, "the tool ran once");

    let bodies = fake.bodies();
    let last = bodies.last().expect("the resumed run asked the model");
    let results: Vec<&serde_json::Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 2, "{last}");
    assert_eq!(results[0]["tool_call_id"], "call_long");
    assert!(
        results[0]["content"].as_str().unwrap().contains("slept_ms"),
        "{last}"
    );
    assert_eq!(results[1]["tool_call_id"], "call_calc");
    assert!(
        results[1]["content"].as_str().unwrap().contains("42"),
        "{last}"
    );
}

/// A 2025-11-25 server (the official server-everything, on the TypeScript
/// SDK) whose tool must run as a task: its refusal of the plain call is
/// retried as a task-augmented call, followed to its report with each
/// stage's status as progress, past the 2 s request timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_server_s_task_only_tool_runs_as_a_task() {
    let js = toolhost_tests::plugins::workspace_root()
        .join("tests/mcp/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "no {}: run .ci/install-guest-toolchains.sh mcp",
        js.display()
    );
    let decl: McpDecl = toml::from_str(&format!(
        "name = \"everything\"\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nexec = {{ timeout_ms = {REQUEST_TIMEOUT_MS} }}\ntask_timeout_secs = 60\n",
        json!(js.display().to_string())
    ))
    .unwrap();
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    // What it reports (tools it skips) depends on when its late tools come.
    let _ = server.attach(&registry);
    let tool = "everything_simulate-research-query";
    // Registered once the session is up: it comes with `list_changed`.
    let listed = Instant::now();
    while registry.snapshot().get(tool).is_none() {
        assert!(listed.elapsed() < Duration::from_secs(15), "no {tool}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let start = Instant::now();
    let report = registry
        .call(
            tool,
            json!({"topic": "sandboxes"}),
            &CallContext::default().with_progress(sink),
        )
        .await;
    let output = report
        .output
        .unwrap_or_else(|e| panic!("the task's report, not: {e}"));
    assert!(
        output.to_string().contains("Research Report: sandboxes"),
        "{output}"
    );
    assert!(
        start.elapsed() > Duration::from_millis(REQUEST_TIMEOUT_MS),
        "four stages of a second each: longer than one request"
    );
    // Polled once a second, as the server asks, over stages of a second:
    // a poll may fall between two of them.
    let seen = seen.lock().unwrap();
    let stages = [
        "Gathering sources",
        "Analyzing content",
        "Synthesizing",
        "Generating",
    ];
    let heard = stages
        .iter()
        .filter(|s| {
            seen.iter()
                .any(|p| p.message.as_deref().is_some_and(|m| m.contains(*s)))
        })
        .count();
    assert!(
        heard >= 2,
        "the stages reach the caller as progress: {seen:?}"
    );
}
