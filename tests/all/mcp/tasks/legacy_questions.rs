//! A 2025-11-25 task that asks its user, over stdio with raw JSON-RPC: the
//! server sends `elicitation/create` tagged with the task while the task is
//! `input_required`, takes the answer, and tells the client of each
//! status with `notifications/tasks/status`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeStdio, test_cache_dir};

use super::setup;

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A stdio server on the tasks setup, its client a 2025-11-25 one with
/// `capabilities`.
fn serve(dir: &std::path::Path, capabilities: Value) -> ServeStdio {
    let (plugins, config) = setup(dir, "poll_interval_ms = 100\n");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "0"}}});
    ServeStdio::start_with(
        &test_cache_dir(),
        &["--wait-for-plugins", "--config", config.to_str().unwrap()],
        &plugins,
        &[],
        &initialize,
    )
}

/// Start `hostile_ask` as a task (request 2); its id.
fn start_task(server: &mut ServeStdio) -> String {
    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hostile_ask", "arguments": {"then_sleep_ms": 10},
        "task": {"ttl": 60_000}}}),
    );
    let created = server.answer(2);
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// The answer to request `id`, the messages before it kept in `seen`.
fn answer_keeping(server: &ServeStdio, id: u64, seen: &mut Vec<Value>) -> Value {
    loop {
        let message = server.next_message();
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
        seen.push(message);
    }
}

/// The status notifications of task `id` among `messages`, in order.
fn statuses(messages: &[Value], id: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id)
        .map(|m| {
            m["params"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_2025_task_asks_its_user_through_the_session_and_tells_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), json!({"elicitation": {"form": {}}}));
    let id = start_task(&mut server);

    // The question comes as a request tagged with the task.
    let mut seen = Vec::new();
    let start = Instant::now();
    let asked = loop {
        let message = server.next_message();
        if message["method"] == "elicitation/create" {
            break message;
        }
        seen.push(message);
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never asked: {seen:?}"
        );
    };
    assert_eq!(
        asked["params"]["_meta"][RELATED_TASK]["taskId"], id,
        "{asked}"
    );
    assert_eq!(
        asked["params"]["message"], "Who is this order for?",
        "{asked}"
    );
    // Past the plugin's own 1 s deadline: waiting for a person does not count.
    std::thread::sleep(Duration::from_millis(1500));
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
        "params": {"taskId": id}}));
    let waiting = answer_keeping(&server, 3, &mut seen);
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["result"]["statusMessage"], "Who is this order for?",
        "{waiting}"
    );

    server.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "action": "accept", "content": {"name": "Ada", "count": 2}}}));
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result",
        "params": {"taskId": id}}));
    let result = answer_keeping(&server, 4, &mut seen);
    let answers = &result["result"]["structuredContent"]["answers"];
    assert_eq!(answers[0]["action"], "accept", "{result}");
    assert_eq!(answers[0]["content"]["name"], "Ada", "{result}");
    assert_eq!(answers[0]["content"]["count"], 2, "{result}");
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"], id,
        "{result}"
    );

    // The end's notification may trail the result by a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !statuses(&seen, &id).iter().any(|s| s == "completed") && Instant::now() < deadline {
        seen.push(server.next_message());
    }
    let told = statuses(&seen, &id);
    let at = |status: &str| told.iter().position(|s| s == status);
    assert!(
        at("input_required").is_some() && at("input_required") < at("completed"),
        "the client hears the task wait for input, then end: {told:?}"
    );
    assert_eq!(
        told.last().map(String::as_str),
        Some("completed"),
        "{told:?}"
    );
}

#[test]
fn a_2025_task_of_a_client_without_elicitation_goes_on_without_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), json!({}));
    let id = start_task(&mut server);
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": id}}));
    let mut seen = Vec::new();
    let result = answer_keeping(&server, 3, &mut seen);
    assert!(
        !seen.iter().any(|m| m["method"] == "elicitation/create"),
        "a client that cannot be asked is not asked: {seen:?}"
    );
    let answers = &result["result"]["structuredContent"]["answers"];
    assert!(
        answers[0]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "the tool hears that no one can be asked: {result}"
    );
    assert!(
        !statuses(&seen, &id).iter().any(|s| s == "input_required"),
        "{seen:?}"
    );
}
