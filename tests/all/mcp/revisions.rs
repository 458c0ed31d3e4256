//! `toolhost serve` alike on every MCP revision and path, with each SDK's
//! default client: a stdio connection is one plugin session on the
//! sessionless 2026-07-28 revision too (the official Python SDK 2.3 and
//! fastmcp negotiate it by default; a stateful plugin answered them 1, 1,
//! 1), and a call of an unknown tool is counted under `(unknown)` however
//! it comes (the server refused it before the registry saw it).

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeHttp, python_client, stdio_command};
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::telemetry::{http, stateless_call};

/// tests/mcp/default_clients.py: `client` (`mcp`, `mcp-legacy`, `fastmcp`)
/// over `transport` to `target`, making the calls of `steps`.
fn default_client(client: &str, transport: &str, target: &str, steps: &Value) -> Value {
    python_client(
        "tests/mcp/default_clients.py",
        &[client, transport, target, &steps.to_string()],
    )
}

/// Three counter increments, a note put and read back, three more
/// increments: the first half plain (the direct path where the revision
/// has one), the second with a progress token (through rmcp).
fn stateful_steps() -> Value {
    let increment = |progress| json!({"tool": "scratchpad_increment", "progress": progress});
    json!([
        increment(false),
        increment(false),
        increment(false),
        {"tool": "scratchpad_put", "args": {"key": "k", "value": "kept"}},
        {"tool": "scratchpad_get", "args": {"key": "k"}, "progress": true},
        increment(true),
        increment(true),
        increment(true),
    ])
}

/// The answers to [`stateful_steps`] on one connection: one plugin
/// session throughout, and no session handle (the connection is the
/// session).
fn check_one_session(report: &Value, revision: &str) {
    assert_eq!(report["protocol_version"], revision, "{report}");
    let results = report["results"].as_array().expect("results");
    let value = |i: usize| results[i]["structured"]["value"].clone();
    let increments: Vec<Value> = [0, 1, 2, 5, 6, 7].into_iter().map(value).collect();
    assert_eq!(
        increments,
        [1, 2, 3, 4, 5, 6].map(Value::from),
        "one plugin session for the connection: {report}"
    );
    assert_eq!(value(4), "kept", "the note is kept: {report}");
    for result in results {
        assert_eq!(result["is_error"], false, "{result}");
        assert!(
            !result["text"]
                .to_string()
                .contains("keeps state in session"),
            "no handle on a connection that keeps the session: {result}"
        );
    }
}

#[test]
fn stdio_keeps_one_plugin_session_with_the_official_sdks_default_2026_07_28() {
    let plugins = plugin_subset(&["scratchpad"]);
    let report = default_client(
        "mcp",
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &stateful_steps(),
    );
    check_one_session(&report, "2026-07-28");
}

#[test]
fn stdio_keeps_one_plugin_session_with_the_official_sdk_on_2025_11_25() {
    let plugins = plugin_subset(&["scratchpad"]);
    let report = default_client(
        "mcp-legacy",
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &stateful_steps(),
    );
    check_one_session(&report, "2025-11-25");
}

#[test]
fn stdio_keeps_one_plugin_session_with_fastmcps_default_client() {
    let plugins = plugin_subset(&["scratchpad"]);
    let report = default_client(
        "fastmcp",
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &stateful_steps(),
    );
    check_one_session(&report, "2026-07-28");
}

#[test]
fn http_on_2026_07_28_still_keeps_state_only_under_a_handle() {
    // Over HTTP the sessionless revision has no connection to keep a
    // session in: each call without a handle starts one and says so.
    let plugins = plugin_subset(&["scratchpad"]);
    let server = ServeHttp::start(plugins.path(), &[], &[]);
    let steps = json!([
        {"tool": "scratchpad_increment"},
        {"tool": "scratchpad_increment", "progress": true},
    ]);
    let report = default_client("mcp", "http", &server.url, &steps);
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
    for result in report["results"].as_array().unwrap() {
        assert_eq!(result["structured"]["value"], 1, "{report}");
        assert!(
            result["text"]
                .to_string()
                .contains("keeps state in session"),
            "{result}"
        );
    }
    // A client with an MCP session keeps one, as before.
    let report = default_client("mcp-legacy", "http", &server.url, &steps);
    let values: Vec<Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["structured"]["value"].clone())
        .collect();
    assert_eq!(values, [json!(1), json!(2)], "{report}");
}

/// The count of unknown-tool calls in a `/metrics` scrape of `addr`.
fn unknown_calls(addr: &str) -> u64 {
    let (status, text) = http(addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| {
            line.strip_prefix(
                r#"toolhost_tool_calls_total{tool="(unknown)",outcome="unknown_tool"} "#,
            )
        })
        .map_or(0, |n| n.trim().parse().expect("a count"))
}

#[test]
fn http_calls_of_unknown_tools_are_counted_on_every_path_and_revision() {
    let plugins = plugin_subset(&["calc"]);
    let server = ServeHttp::start(plugins.path(), &[], &[]);
    assert_eq!(unknown_calls(&server.addr), 0);
    let steps = json!([
        {"tool": "no_such_tool"},
        {"tool": "no_such_tool", "progress": true},
        {"tool": "calc_eval", "args": {"expression": "1+1"}},
    ]);
    // 2025-11-25 in an MCP session: the direct path, then rmcp's.
    let report = default_client("mcp-legacy", "http", &server.url, &steps);
    let results = report["results"].as_array().unwrap();
    for refused in &results[..2] {
        assert!(
            refused["error"]
                .as_str()
                .is_some_and(|e| e.contains("no_such_tool")),
            "{report}"
        );
    }
    assert_eq!(results[2]["structured"]["value"], 2.0, "{report}");
    assert_eq!(unknown_calls(&server.addr), 2);
    // 2026-07-28, the SDK's default: a request at a time, through rmcp.
    let report = default_client("mcp", "http", &server.url, &steps);
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
    assert_eq!(unknown_calls(&server.addr), 4);
    // And a raw request of the revision, with arguments.
    let (status, answer) = stateless_call(&server.addr, "nope", json!({"a": 1}), json!({}), &[]);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(unknown_calls(&server.addr), 5);
}
