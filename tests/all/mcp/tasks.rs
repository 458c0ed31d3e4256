//! MCP tasks from `toolhost serve`, in both revisions that have them: the
//! official Tasks client (`@modelcontextprotocol/ext-tasks` 0.2 on the
//! TypeScript SDK 2 client, which speaks 2025-11-25's tasks) over stdio
//! and HTTP, and raw JSON-RPC for what it does not cover: another
//! client's task, tools that forbid or require tasks, and (in `extension`)
//! 2026-07-28's extension, a task that asks its user, a 60 s task polled
//! to its end, and a `kill -9` of the server with tasks running and
//! finished.
//!
//! The tool is `hostile_sleep` (it sleeps in host waits and reports
//! progress per step) with a manifest that lets it run as a task for up to
//! two minutes, while a plain call of it stops at one second.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeHttp, ServeStdio, test_cache_dir};
use toolhost_tests::plugins::{copy_plugin, copy_plugin_from, hostile_dir, toolhost_bin};
use toolhost_tests::telemetry::{http_exchange, json_rpc_answer};

use super::peers::{checkers, node};

mod extension;
mod legacy_questions;

/// A plugin directory: `hostile_sleep` may run as a task (deadline 120 s;
/// a plain call stops at 1 s), so may `hostile_ask` (which asks its user),
/// `calc` and `text` may not; and a host config whose
/// task store is a file of `dir`, with `[tasks]` keys `extra`. Returns
/// the plugins and the config.
pub(super) fn setup(dir: &Path, extra: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    copy_plugin_from(hostile_dir(), "hostile_sleep", &plugins);
    std::fs::write(
        plugins.join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 1000\n[task]\nsupport = \"optional\"\ndeadline_secs = 120\n",
    )
    .unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", &plugins);
    std::fs::write(
        plugins.join("hostile_ask.toml"),
        "[limits]\ntimeout_ms = 1000\n[task]\nsupport = \"optional\"\n",
    )
    .unwrap();
    copy_plugin("calc", &plugins);
    copy_plugin("text", &plugins);
    let config = dir.join("toolhost.toml");
    let store = dir.join("tasks.sqlite3");
    std::fs::write(
        &config,
        format!(
            "[tasks]\nstore = {:?}\n{extra}",
            store.display().to_string()
        ),
    )
    .unwrap();
    (plugins, config)
}

/// The official Tasks client's report (tests/mcp/checkers/tasks_client.mjs)
/// against `target` over `transport`.
fn tasks_client(transport: &str, target: &str) -> Value {
    let out = Command::new(node())
        .current_dir(checkers())
        .args(["tasks_client.mjs", transport, target])
        .output()
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Tasks client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not a report ({e}): {stdout}"))
}

/// A run to its result, with progress seen on the way, a cancel that
/// stops a 60 s guest at once, and a task whose question the client's
/// user answers.
fn check_client_report(report: &Value) {
    assert_eq!(report["protocol_version"], "2025-11-25", "{report}");
    assert_eq!(
        report["server_tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{report}"
    );
    assert_eq!(report["execution"]["hostile_sleep"], "optional", "{report}");
    assert_eq!(report["execution"]["calc_eval"], Value::Null, "{report}");
    assert_eq!(report["kind"], "task", "{report}");
    assert_eq!(report["outcome"], "completed", "{report}");
    let slept = report["result"]["structuredContent"]["slept_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("a result: {report}"));
    assert!(
        slept >= 1500,
        "past the plain call's 1 s deadline: {report}"
    );
    let updates = report["updates"].as_array().expect("updates");
    assert!(
        updates.iter().any(|u| u["status"] == "working"
            && u["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("slept "))),
        "the guest's progress reaches the client as the task's status: {report}"
    );
    assert_eq!(report["cancelled"]["status"], "cancelled", "{report}");
    assert!(
        report["cancelled"]["ms"]
            .as_u64()
            .is_some_and(|ms| ms < 5000),
        "a cancelled task ends at once, not after its 60 s: {report}"
    );
    // A task's question reaches the session's input handler, tied to the
    // task, and the answer reaches the tool.
    let asked = &report["asked"];
    assert_eq!(asked["outcome"], "completed", "{report}");
    assert_eq!(report["input"]["kind"], "elicitation", "{report}");
    assert_eq!(report["input"]["scope"], "task", "{report}");
    assert_eq!(
        report["input"]["message"], "Who is this order for?",
        "{report}"
    );
    assert_eq!(
        asked["task_ids"],
        json!([report["input"]["task_id"]]),
        "the question names the task it is for: {report}"
    );
    let answers = &asked["result"]["structuredContent"]["answers"];
    assert_eq!(answers[0]["content"]["name"], "Ada", "{report}");
    assert_eq!(report["errors"], Value::Null, "{report}");
}

#[test]
fn the_official_tasks_client_runs_watches_and_cancels_a_task_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "");
    let command = format!(
        "{} serve --config {} --wait-for-plugins --cache-dir {} --plugins {}",
        toolhost_bin().display(),
        config.display(),
        test_cache_dir().display(),
        plugins.display()
    );
    check_client_report(&tasks_client("stdio", &command));
}

#[test]
fn the_official_tasks_client_runs_watches_and_cancels_a_task_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "");
    let server = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    check_client_report(&tasks_client("http", &server.url));
}

/// One POST to `/mcp` of `addr` with `headers`: the session id the server
/// gave, and the JSON-RPC answer (none for a notification).
pub(super) fn post(
    addr: &str,
    headers: &[(&str, &str)],
    message: &Value,
) -> (Option<String>, Value) {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    let (status, head, body) = http_exchange(addr, "POST", "/mcp", &all, &message.to_string());
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    if status == 202 {
        return (session, Value::Null);
    }
    assert!(matches!(status, 200 | 400 | 404), "{status}: {body}");
    (session, json_rpc_answer(&body))
}

/// A 2025-11-25 session over HTTP: its id.
fn open_session(addr: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let (session, answer) = post(addr, &[], &init);
    assert_eq!(
        answer["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({}),
        "{answer}"
    );
    let session = session.expect("a session id");
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    post(
        addr,
        &headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    session
}

/// A request of 2025-11-25 session `session`: its answer.
fn in_session(addr: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post(addr, &headers, &message).1
}

#[test]
fn a_task_asked_for_right_after_the_handshake_is_a_task() {
    // The fast lane, which answers 2025-11-25's task requests, learns of a
    // session as rmcp handles `notifications/initialized`: the end of the
    // handshake is answered only once it has, so that a client's very
    // next request (here, at once, in many sessions) is not taken by rmcp,
    // which would drop `params.task` and run the call plain.
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "");
    let server = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    for n in 0..50 {
        let session = open_session(&server.addr);
        let created = in_session(
            &server.addr,
            &session,
            1,
            "tools/call",
            json!({"name": "hostile_sleep", "arguments": {"ms": 1}, "task": {}}),
        );
        assert_eq!(
            created["result"]["task"]["status"], "working",
            "session {n}: {created}"
        );
    }
}

#[test]
fn a_task_is_seen_only_by_its_session_and_tools_say_whether_they_run_as_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "[tasks.support]\ntext_stats = \"required\"\n");
    let server = ServeHttp::start(&plugins, &["--config", config.to_str().unwrap()], &[]);
    let (mine, theirs) = (open_session(&server.addr), open_session(&server.addr));
    let listed = in_session(&server.addr, &mine, 1, "tools/list", json!({}));
    let support = |name: &str| {
        listed["result"]["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == name))
            .map(|t| t["execution"]["taskSupport"].clone())
            .unwrap_or_else(|| panic!("{name} listed: {listed}"))
    };
    assert_eq!(support("hostile_sleep"), "optional");
    assert_eq!(support("text_stats"), "required", "the operator's word");
    assert_eq!(support("calc_eval"), Value::Null, "forbidden: no execution");

    let created = in_session(
        &server.addr,
        &mine,
        2,
        "tools/call",
        json!({
        "name": "hostile_sleep", "arguments": {"ms": 300}, "task": {"ttl": 60000}}),
    );
    let task = &created["result"]["task"];
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000, "the client's shorter TTL: {created}");

    // Another session: no such task, however it asks.
    for (n, method) in ["tasks/get", "tasks/result", "tasks/cancel"]
        .into_iter()
        .enumerate()
    {
        let answer = in_session(
            &server.addr,
            &theirs,
            10 + n as u64,
            method,
            json!({"taskId": id}),
        );
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
        assert_eq!(answer["error"]["data"]["taskId"], id, "{answer}");
    }
    let theirs_listed = in_session(&server.addr, &theirs, 13, "tasks/list", json!({}));
    assert_eq!(
        theirs_listed["result"]["tasks"],
        json!([]),
        "{theirs_listed}"
    );

    let result = in_session(
        &server.addr,
        &mine,
        3,
        "tasks/result",
        json!({"taskId": id}),
    );
    assert!(
        result["result"]["structuredContent"]["slept_ms"].as_u64() >= Some(300),
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id,
        "{result}"
    );
    let listed = in_session(&server.addr, &mine, 4, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id, "{listed}");
    assert_eq!(
        listed["result"]["tasks"][0]["status"], "completed",
        "{listed}"
    );

    // A tool that forbids tasks, asked for one; one that requires them,
    // called plainly: -32601, as MCP says.
    let forbidden = in_session(
        &server.addr,
        &mine,
        5,
        "tools/call",
        json!({
        "name": "calc_eval", "arguments": {"expression": "1 + 2"}, "task": {}}),
    );
    assert_eq!(forbidden["error"]["code"], -32601, "{forbidden}");
    let words = json!({"text": "two words"});
    let plain = in_session(
        &server.addr,
        &mine,
        6,
        "tools/call",
        json!({
        "name": "text_stats", "arguments": words}),
    );
    assert_eq!(plain["error"]["code"], -32601, "{plain}");
    let as_task = in_session(
        &server.addr,
        &mine,
        7,
        "tools/call",
        json!({
        "name": "text_stats", "arguments": words, "task": {}}),
    );
    let id = as_task["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{as_task}"));
    let result = in_session(
        &server.addr,
        &mine,
        8,
        "tasks/result",
        json!({"taskId": id}),
    );
    assert_eq!(
        result["result"]["structuredContent"]["words"], 2,
        "{result}"
    );
}

#[test]
fn a_task_runs_past_the_deadline_of_a_plain_call() {
    let dir = tempfile::tempdir().unwrap();
    let (plugins, config) = setup(dir.path(), "");
    let mut server = ServeStdio::start(&plugins, &["--config", config.to_str().unwrap()]);
    server.call(2, "hostile_sleep", json!({"ms": 2000}));
    let plain = server.answer(2);
    assert_eq!(
        plain["result"]["isError"], true,
        "its 1 s deadline: {plain}"
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "hostile_sleep", "arguments": {"ms": 2000}, "task": {}}}),
    );
    let created = server.answer(3);
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result",
        "params": {"taskId": id}}));
    let result = server.answer(4);
    assert!(
        result["result"]["structuredContent"]["slept_ms"].as_u64() >= Some(2000),
        "the task's deadline (120 s) instead: {result}"
    );
}
