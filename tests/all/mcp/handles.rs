//! Stateful plugins through MCP clients that keep no session: the session
//! handle a stateful plugin's tools take as an argument.
//!
//! fastmcp and the OpenAI Agents SDK speak the sessionless 2026-07-28
//! revision over HTTP by default and send no toolhost `_meta`; before the
//! handle, a stateful plugin answered them 1, 1, 1. Also checked with raw
//! requests, over `--stateless`, and that clients with an MCP session are
//! unchanged.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeHttp, python_client};
use toolhost_tests::plugins::plugin_subset;

fn plugins() -> tempfile::TempDir {
    plugin_subset(&["scratchpad", "calc"])
}

/// Run tests/mcp/generic_clients.py; its one JSON line.
fn generic_client(which: &str, url: &str) -> Value {
    python_client("tests/mcp/generic_clients.py", &[which, url])
}

#[test]
fn fastmcp_keeps_a_stateful_plugins_state_through_the_session_argument() {
    let plugins = plugins();
    let server = ServeHttp::start(plugins.path(), &[], &[]);
    let got = generic_client("fastmcp", &server.url);
    assert_eq!(
        got["values"],
        json!([1, 2, 3, 4, 1]),
        "the handle carries the state; no handle starts afresh: {got}"
    );
    let handles = got["handles"].as_array().unwrap();
    let first = handles[0]
        .as_str()
        .expect("a new session's handle in _meta");
    assert!(
        handles[1..4].iter().all(Value::is_null),
        "a call that passed a handle is told none: {got}"
    );
    let last = handles[4].as_str().expect("another new session's handle");
    assert_ne!(first, last, "each new session gets its own handle");
    assert!(
        got["texts"][0]
            .as_str()
            .unwrap()
            .contains(&format!("\"session\": \"{first}\"")),
        "the model reads the handle in the result's text: {got}"
    );
}

#[test]
fn the_openai_agents_sdk_keeps_state_when_its_model_passes_the_handle_back() {
    let plugins = plugins();
    let server = ServeHttp::start(plugins.path(), &[], &[]);
    let got = generic_client("agents", &server.url);
    let values: Vec<i64> = got["tool_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|text| {
            let text = text.as_str().unwrap();
            let parsed: Value = serde_json::from_str(text)
                .ok()
                .or_else(|| {
                    // The SDK may hand the content blocks over as a list
                    // or as the first block's text.
                    let start = text.find("{\"value\"")?;
                    let end = text[start..].find('}')? + start + 1;
                    serde_json::from_str(&text[start..end]).ok()
                })
                .unwrap_or_else(|| panic!("no value in {text}"));
            find_value(&parsed).unwrap_or_else(|| panic!("no value in {text}"))
        })
        .collect();
    assert_eq!(values, [1, 2, 3, 4], "{got}");
}

/// The counter's value in a tool result as the Agents SDK passes it on.
fn find_value(v: &Value) -> Option<i64> {
    match v {
        Value::Object(map) => map.get("value").and_then(Value::as_i64).or_else(|| {
            map.get("text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .and_then(|t| find_value(&t))
        }),
        Value::Array(items) => items.iter().find_map(find_value),
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|t| find_value(&t)),
        _ => None,
    }
}

/// One raw `tools/call` of the stateless revision to `addr`.
fn stateless_call(addr: &str, arguments: Value) -> Value {
    let params = json!({"name": "scratchpad_increment", "arguments": arguments});
    stateless(addr, "tools/call", Some("scratchpad_increment"), params)
}

/// One raw request of the stateless revision to `addr`.
pub(super) fn stateless(addr: &str, method: &str, name: Option<&str>, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let name = name
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\n{name}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    // A JSON body, or an event stream whose `data:` line is the answer.
    text.split(['\n', '\r'])
        .map(|line| line.strip_prefix("data: ").unwrap_or(line))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|v| v["id"] == 1)
        .unwrap_or_else(|| panic!("no JSON-RPC answer in: {text}"))
}

fn handle_of(answer: &Value) -> String {
    answer["result"]["_meta"]["toolhost.dev/session"]
        .as_str()
        .unwrap_or_else(|| panic!("no handle in {answer}"))
        .to_owned()
}

fn check_raw_handles(plugins: &Path, extra: &[&str]) {
    let server = ServeHttp::start(plugins, extra, &[]);
    let listed = stateless(&server.addr, "tools/list", None, json!({}));
    let schema = |name: &str| {
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {listed}"))["inputSchema"]
            .clone()
    };
    assert_eq!(
        schema("scratchpad_increment")["properties"]["session"]["type"],
        "string",
        "a stateful tool takes the handle"
    );
    assert!(
        schema("calc_eval")["properties"].get("session").is_none(),
        "a stateless tool does not"
    );
    let value = |a: &Value| a["result"]["structuredContent"]["value"].clone();
    let first = stateless_call(&server.addr, json!({}));
    assert_eq!(value(&first), 1, "{first}");
    let h = handle_of(&first);
    for n in 2..=3 {
        let next = stateless_call(&server.addr, json!({"session": h, "by": 1}));
        assert_eq!(value(&next), n, "{next}");
        assert!(next["result"]["_meta"]["toolhost.dev/session"].is_null());
    }
    let other = stateless_call(&server.addr, json!({}));
    assert_eq!(value(&other), 1, "no handle: a new session: {other}");
    assert_ne!(handle_of(&other), h);
    let bad = stateless_call(&server.addr, json!({"session": "no spaces allowed"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session"),
        "{bad}"
    );
}

#[test]
fn raw_sessionless_requests_carry_state_by_handle() {
    check_raw_handles(plugins().path(), &[]);
}

#[test]
fn stateless_mode_carries_state_by_handle_too() {
    check_raw_handles(plugins().path(), &["--stateless"]);
}
