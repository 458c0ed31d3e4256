//! 2026-07-28's tasks extension over stateless HTTP, in raw JSON-RPC: a
//! task only for a client that declares it, polled, cancelled, asking its
//! user, running for a minute, and outliving a `kill -9` of the server.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::mcp::ServeHttp;

use super::{post, setup};

/// What a stopped task says (`toolhost::tasks::RESTART_REASON`).
const RESTARTED: &str = "the host restarted while this task was running";

/// The id of the task 2026-07-28's `tools/call` answer `created` names.
fn task_id(created: &Value) -> String {
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// `serve --http --stateless` on the plugins of [`setup`] in `dir`.
fn stateless_server(dir: &Path, extra: &str) -> ServeHttp {
    let (plugins, config) = setup(dir, extra);
    ServeHttp::start(
        &plugins,
        &["--stateless", "--config", config.to_str().unwrap()],
        &[],
    )
}

/// `tools/call` of the stateless 2026-07-28 revision with the tasks
/// extension declared (or not).
fn call_2026(addr: &str, tool: &str, arguments: Value, declared: bool) -> Value {
    let capabilities = if declared {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": meta_2026(capabilities)}});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    post(addr, &headers, &message).1
}

fn meta_2026(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    })
}

/// A `tasks/*` request of the stateless 2026-07-28 revision (an update
/// answers nothing).
fn task_2026(addr: &str, method: &str, id: &str) -> Value {
    let responses = (method == "tasks/update").then(|| json!({}));
    request_2026(addr, method, id, responses)
}

/// `tasks/update` of task `id` with `responses`.
fn update_2026(addr: &str, id: &str, responses: Value) -> Value {
    request_2026(addr, "tasks/update", id, Some(responses))
}

/// A `tasks/*` request of the stateless 2026-07-28 revision, with
/// `inputResponses` when given.
fn request_2026(addr: &str, method: &str, id: &str, responses: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {
        "taskId": id,
        "_meta": meta_2026(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))}});
    if let Some(responses) = responses {
        message["params"]["inputResponses"] = responses;
    }
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", id),
    ];
    post(addr, &headers, &message).1
}

/// Poll task `id` until it ends (or `patience` passes): every status
/// message seen, and the last answer.
fn poll_2026(addr: &str, id: &str, patience: Duration) -> (Vec<String>, Value) {
    let start = Instant::now();
    let mut messages = Vec::new();
    loop {
        let answer = task_2026(addr, "tasks/get", id);
        let status = answer["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(message) = answer["result"]["statusMessage"].as_str() {
            messages.push(message.to_owned());
        }
        if !matches!(status.as_str(), "working" | "input_required") {
            return (messages, answer);
        }
        assert!(
            start.elapsed() < patience,
            "task {id} still {status}: {answer}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_2026_07_28_extension_makes_a_task_only_for_a_client_that_declares_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = stateless_server(dir.path(), "poll_interval_ms = 250\n");
    let plain = call_2026(&server.addr, "hostile_sleep", json!({"ms": 10}), false);
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");

    let created = call_2026(
        &server.addr,
        "hostile_sleep",
        json!({"ms": 1200, "steps": 4}),
        true,
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert_eq!(created["result"]["pollIntervalMs"], 250, "{created}");
    let id = task_id(&created);
    let (messages, done) = poll_2026(&server.addr, &id, Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(
        done["result"]["result"]["structuredContent"]["slept_ms"].as_u64() >= Some(1200),
        "{done}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("slept ")),
        "{messages:?}"
    );

    // A tool that forbids tasks runs plainly for the same client.
    let add = call_2026(
        &server.addr,
        "calc_eval",
        json!({"expression": "1 + 2"}),
        true,
    );
    assert_eq!(add["result"]["resultType"], "complete", "{add}");

    // Cancelled mid-run: the guest stops, the task says so.
    let long = call_2026(&server.addr, "hostile_sleep", json!({"ms": 60000}), true);
    let id = task_id(&long);
    let cancel = task_2026(&server.addr, "tasks/cancel", &id);
    assert!(cancel.get("result").is_some(), "{cancel}");
    let (_, ended) = poll_2026(&server.addr, &id, Duration::from_secs(5));
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    let again = task_2026(&server.addr, "tasks/cancel", &id);
    assert_eq!(again["error"]["code"], -32602, "an ended task: {again}");
    let update = task_2026(&server.addr, "tasks/update", &id);
    assert_eq!(
        update["error"]["code"], -32602,
        "a task that asks nothing: {update}"
    );
    let unknown = task_2026(
        &server.addr,
        "tasks/get",
        "t-00000000000000000000000000000000",
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
fn a_task_that_asks_waits_in_input_required_until_tasks_update_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = stateless_server(dir.path(), "poll_interval_ms = 100\n");
    let created = call_2026(
        &server.addr,
        "hostile_ask",
        json!({"then_sleep_ms": 10}),
        true,
    );
    let id = task_id(&created);
    let start = Instant::now();
    let asked = loop {
        let answer = task_2026(&server.addr, "tasks/get", &id);
        if answer["result"]["status"] == "input_required" {
            break answer;
        }
        assert_eq!(answer["result"]["status"], "working", "{answer}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never asked: {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Past the plugin's own 1 s deadline: waiting for a person does not count.
    std::thread::sleep(Duration::from_millis(1500));
    let requests = asked["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests");
    let (key, request) = requests.iter().next().expect("one question");
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(
        request["params"]["message"], "Who is this order for?",
        "{asked}"
    );
    assert_eq!(
        asked["result"]["statusMessage"], "Who is this order for?",
        "{asked}"
    );

    let wrong = update_2026(&server.addr, &id, json!({"nope": {"action": "accept"}}));
    assert_eq!(
        wrong["error"]["code"], -32602,
        "an answer to another question: {wrong}"
    );
    let content = json!({"name": "Ada", "count": 2});
    let answered = update_2026(
        &server.addr,
        &id,
        json!({ key: {"action": "accept", "content": content} }),
    );
    assert!(answered.get("result").is_some(), "{answered}");
    let (_, done) = poll_2026(&server.addr, &id, Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let answers = &done["result"]["result"]["structuredContent"]["answers"];
    assert_eq!(answers[0]["action"], "accept", "{done}");
    assert_eq!(answers[0]["content"]["name"], "Ada", "{done}");
    assert_eq!(answers[0]["content"]["count"], 2, "{done}");
}

#[test]
fn a_60_second_task_is_polled_to_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = stateless_server(dir.path(), "poll_interval_ms = 2000\n");
    let created = call_2026(
        &server.addr,
        "hostile_sleep",
        json!({"ms": 60000, "steps": 6}),
        true,
    );
    let id = task_id(&created);
    let (messages, done) = poll_2026(&server.addr, &id, Duration::from_secs(120));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(
        done["result"]["result"]["structuredContent"]["slept_ms"].as_u64() >= Some(60000),
        "{done}"
    );
    let distinct: std::collections::BTreeSet<_> = messages.iter().collect();
    assert!(distinct.len() >= 3, "progress along the way: {messages:?}");
}

#[test]
fn after_a_kill_9_finished_results_are_served_and_running_tasks_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "");
    let flags = ["--stateless", "--config", config.to_str().unwrap()];
    let mut server = ServeHttp::start(&plugins, &flags, &[]);
    let quick = call_2026(&server.addr, "hostile_sleep", json!({"ms": 50}), true);
    let quick = task_id(&quick);
    let (_, done) = poll_2026(&server.addr, &quick, Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let long = call_2026(&server.addr, "hostile_sleep", json!({"ms": 60000}), true);
    let long = task_id(&long);
    // SIGKILL: nothing of the server runs after it.
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let server = ServeHttp::start(&plugins, &flags, &[]);
    let finished = task_2026(&server.addr, "tasks/get", &quick);
    assert_eq!(finished["result"]["status"], "completed", "{finished}");
    assert!(
        finished["result"]["result"]["structuredContent"]["slept_ms"].as_u64() >= Some(50),
        "{finished}"
    );
    let stopped = task_2026(&server.addr, "tasks/get", &long);
    assert_eq!(stopped["result"]["status"], "failed", "{stopped}");
    assert!(
        stopped["result"]["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains(RESTARTED)),
        "{stopped}"
    );
    assert!(
        stopped["result"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(RESTARTED)),
        "{stopped}"
    );
}
