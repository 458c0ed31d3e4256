//! `toolhost serve` as an MCP server, driven by a real peer: the official
//! MCP Python SDK (PyPI `mcp`, pinned in .ci/install-guest-toolchains.sh,
//! installed by `.ci/install-guest-toolchains.sh mcp`) running
//! tests/mcp/client.py, over stdio and over streamable HTTP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::mcp::{
    ServeHttp as Server, initialize_request, sdk_client, stdio_command, test_cache_dir,
};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, plugin_subset, toolhost_bin};

/// calc, text and scratchpad, and hostile_sleep (which times out).
fn plugins() -> tempfile::TempDir {
    let dir = plugin_subset(&["calc", "text", "scratchpad"]);
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    dir
}

/// The steps both transports run, and what they must answer.
fn conversation() -> Value {
    json!([
        {"op": "list"},
        {"op": "call", "tool": "text_stats", "args": {"text": "One two. Three!"}},
        {"op": "call", "tool": "calc_eval", "args": {"expression": 7}},
        {"op": "call", "tool": "hostile_sleep", "args": {}},
        {"op": "call", "tool": "no_such_tool", "args": {}},
        {"op": "call", "tool": "scratchpad_increment", "args": {}},
        {"op": "call", "tool": "scratchpad_increment", "args": {}},
        {"op": "call", "tool": "scratchpad_increment", "args": {}, "session": "b"},
    ])
}

fn check_conversation(report: &Value) {
    for (name, info) in report["sessions"].as_object().expect("sessions") {
        assert_eq!(info["server_name"], "toolhost", "session {name}");
        assert_eq!(info["protocol_version"], "2025-11-25", "session {name}");
    }
    let results = report["results"].as_array().expect("results");
    let tools = results[0]["tools"].as_array().expect("tools/list");
    for name in ["calc_eval", "text_stats", "scratchpad_increment"] {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {tools:?}"));
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let stats = &results[1];
    assert_eq!(stats["is_error"], false, "{stats}");
    assert_eq!(stats["structured"]["words"], 3, "{stats}");
    assert_eq!(stats["structured"]["sentences"], 2, "{stats}");
    let text: Value = serde_json::from_str(stats["text"][0].as_str().expect("text")).unwrap();
    assert_eq!(text, stats["structured"]);
    // A tool's failure is a result the model reads, worded as the loop
    // words it: "kind: message".
    let invalid = &results[2];
    assert_eq!(invalid["is_error"], true, "{invalid}");
    assert!(
        invalid["text"][0]
            .as_str()
            .is_some_and(|t| t.starts_with("invalid_input: ")),
        "{invalid}"
    );
    let timeout = &results[3];
    assert_eq!(timeout["is_error"], true, "{timeout}");
    assert!(
        timeout["text"][0]
            .as_str()
            .is_some_and(|t| t.starts_with("timeout: ")),
        "{timeout}"
    );
    // An unknown tool is a protocol error: JSON-RPC invalid params.
    let unknown = &results[4]["error"];
    assert_eq!(unknown["code"], -32602, "{unknown}");
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{unknown}"
    );
    // One plugin session per MCP session.
    assert_eq!(results[5]["structured"]["value"], 1, "{}", results[5]);
    assert_eq!(results[6]["structured"]["value"], 2, "{}", results[6]);
    assert_eq!(results[7]["structured"]["value"], 1, "{}", results[7]);
}

#[test]
fn stdio_serves_the_tools_to_the_python_sdk_client() {
    let plugins = plugins();
    let report = sdk_client(
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &conversation(),
    );
    check_conversation(&report);
}

/// Raw HTTP/1.1 to a [`Server`], for what the SDK client does not do.
trait RawHttp {
    fn request(&self, head: &str, body: &str) -> (u16, String);
    fn exchange(&self, head: &str, body: &str) -> (u16, String, String);
}

impl RawHttp for Server {
    /// One raw HTTP/1.1 request; the status code and body.
    fn request(&self, head: &str, body: &str) -> (u16, String) {
        let (status, _, body) = self.exchange(head, body);
        (status, body)
    }

    /// One raw HTTP/1.1 request; the status code, the response head and
    /// the body.
    fn exchange(&self, head: &str, body: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "{head}\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        // Read to the end, but not forever: an event stream stays open, and
        // its head is all a test needs.
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
            let text = String::from_utf8_lossy(&bytes);
            if text.contains("\r\n\r\n") && text.contains("text/event-stream") {
                break;
            }
        }
        let response = String::from_utf8_lossy(&bytes).into_owned();
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
        let (head, body) = response
            .split_once("\r\n\r\n")
            .map(|(h, b)| (h.to_owned(), b.to_owned()))
            .unwrap_or_default();
        (status, head, body)
    }
}

#[test]
fn http_serves_the_tools_with_one_plugin_session_per_mcp_session() {
    let plugins = plugins();
    let mut server = Server::start(plugins.path(), &[], &[]);
    let report = sdk_client("http", &server.url, &conversation());
    check_conversation(&report);
    // SIGTERM: a graceful shutdown, exit 0.
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(0));
}

#[test]
fn http_refuses_foreign_origins_and_answers_healthz() {
    let plugins = plugin_subset(&["calc"]);
    let server = Server::start(plugins.path(), &[], &[]);
    let (status, body) = server.request("GET /healthz HTTP/1.1", "");
    assert_eq!((status, body.trim()), (200, "ok"));
    let post = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream";
    let (status, _) = server.request(
        &format!("{post}\r\nOrigin: https://evil.example"),
        &initialize_request().to_string(),
    );
    assert_eq!(status, 403, "a foreign Origin (DNS rebinding) is refused");
    let (status, _) = server.request(
        &format!("{post}\r\nOrigin: http://localhost:1234"),
        &initialize_request().to_string(),
    );
    assert_eq!(status, 200, "a loopback Origin is served");
}

#[test]
fn http_with_a_token_refuses_requests_without_it() {
    let plugins = plugin_subset(&["calc"]);
    let server = Server::start(
        plugins.path(),
        &["--token-env", "MCP_TEST_TOKEN"],
        &[("MCP_TEST_TOKEN", "s3cret")],
    );
    let post = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream";
    let (status, _) = server.request(post, &initialize_request().to_string());
    assert_eq!(status, 401);
    let (status, _) = server.request(
        &format!("{post}\r\nAuthorization: Bearer wrong"),
        &initialize_request().to_string(),
    );
    assert_eq!(status, 401);
    let (status, _) = server.request(
        &format!("{post}\r\nAuthorization: Bearer s3cret"),
        &initialize_request().to_string(),
    );
    assert_eq!(status, 200);
}

#[test]
fn http_on_a_public_address_needs_allow_remote_and_a_token() {
    let plugins = plugin_subset(&["calc"]);
    let out: Output = Command::new(toolhost_bin())
        .args(["serve", "--http", "0.0.0.0:0", "--plugins"])
        .arg(plugins.path())
        .stdin(Stdio::null())
        .output()
        .expect("toolhost starts");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
}

/// The steps that drop calc into a served directory and use it.
fn hot_reload_steps(dir: &Path) -> Value {
    let from = toolhost_tests::plugins::plugin_dir();
    json!([
        {"op": "list"},
        {"op": "copy", "files": [
            [from.join("calc.toml"), dir.join("calc.toml")],
            [from.join("calc.wasm"), dir.join("calc.wasm")],
        ]},
        {"op": "wait_list_changed", "timeout": 60},
        {"op": "list"},
        {"op": "call", "tool": "calc_eval", "args": {"expression": "6*7"}},
    ])
}

fn check_hot_reload(report: &Value) {
    let results = report["results"].as_array().expect("results");
    let names = |listed: &Value| -> Vec<String> {
        listed["tools"]
            .as_array()
            .expect("tools/list")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(&results[0]).contains(&"calc_eval".to_owned()));
    assert_eq!(
        results[2]["list_changed"], true,
        "no notifications/tools/list_changed"
    );
    assert!(
        names(&results[3]).contains(&"calc_eval".to_owned()),
        "{}",
        results[3]
    );
    // Tools served before the reload are still there.
    assert!(names(&results[3]).contains(&"text_stats".to_owned()));
    assert_eq!(results[4]["structured"]["value"], 42.0, "{}", results[4]);
}

#[test]
fn stdio_client_hears_of_a_plugin_dropped_into_the_directory() {
    let plugins = plugin_subset(&["text"]);
    let steps = hot_reload_steps(plugins.path());
    check_hot_reload(&sdk_client(
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &steps,
    ));
}

#[test]
fn http_client_hears_of_a_plugin_dropped_into_the_directory() {
    let plugins = plugin_subset(&["text"]);
    let server = Server::start(plugins.path(), &[], &[]);
    let steps = hot_reload_steps(plugins.path());
    check_hot_reload(&sdk_client("http", &server.url, &steps));
}

/// calc, and hostile_spin allowed to spin for a minute: only cancelling
/// it stops it early.
fn spin_plugins() -> tempfile::TempDir {
    let dir = plugin_subset(&["calc"]);
    copy_plugin_from(hostile_dir(), "hostile_spin", dir.path());
    std::fs::write(
        dir.path().join("hostile_spin.toml"),
        "[limits]\ntimeout_ms = 60000\nfuel = 200000000000\n",
    )
    .unwrap();
    dir
}

fn cancel_steps(pid: Value) -> Value {
    json!([
        {"op": "list"},
        // Cancelled once the server burns CPU: the guest spins.
        {"op": "cancel", "tool": "hostile_spin", "args": {}, "when_busy": pid},
        {"op": "sleep", "seconds": 0.5},
        {"op": "cpu", "pid": pid},
        {"op": "sleep", "seconds": 1.5},
        {"op": "cpu", "pid": pid},
        {"op": "call", "tool": "calc_eval", "args": {"expression": "1+1"}},
    ])
}

fn check_cancelled(report: &Value) {
    let results = report["results"].as_array().expect("results");
    assert_eq!(
        results[1]["finished_before_cancel"], false,
        "{}",
        results[1]
    );
    let ticks = |i: usize| results[i]["ticks"].as_i64().expect("ticks");
    // A guest still spinning would burn ~150 ticks (1/100 s) in 1.5 s.
    let burnt = ticks(5) - ticks(3);
    assert!(
        burnt < 40,
        "the server burnt {burnt} ticks of CPU after the cancel: the guest still runs"
    );
    let next = &results[6];
    assert_eq!(next["structured"]["value"], 2.0, "{next}");
    assert!(next["seconds"].as_f64().unwrap() < 5.0, "{next}");
}

#[test]
fn stdio_cancelled_call_stops_the_guest() {
    let plugins = spin_plugins();
    let report = sdk_client(
        "stdio",
        &stdio_command(plugins.path(), &[]),
        &cancel_steps(json!("child")),
    );
    check_cancelled(&report);
}

#[test]
fn http_cancelled_call_stops_the_guest() {
    let plugins = spin_plugins();
    let server = Server::start(plugins.path(), &[], &[]);
    let report = sdk_client("http", &server.url, &cancel_steps(json!(server.child.id())));
    check_cancelled(&report);
}

/// One request of the stateless 2026-07-28 revision (no initialize, no
/// session): its JSON-RPC answer.
fn stateless(server: &Server, method: &str, name: Option<&str>, params: Value) -> Value {
    let mut params = params;
    let meta = params
        .as_object_mut()
        .expect("params is an object")
        .entry("_meta")
        .or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "raw", "version": "0"});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\n{name}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.addr,
        body.len(),
        name = name
            .map(|n| format!("Mcp-Name: {n}\r\n"))
            .unwrap_or_default(),
    )
    .unwrap();
    // A JSON body, or an event stream whose `data:` line is the answer.
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes);
        if let Some(answer) = text
            .split(['\n', '\r'])
            .map(|line| line.strip_prefix("data: ").unwrap_or(line))
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|v| v["id"] == 7)
        {
            return answer;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => panic!("no JSON-RPC answer in: {text}"),
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn stateless_requests_keep_plugin_state_only_under_a_session_key() {
    let plugins = plugins();
    let server = Server::start(plugins.path(), &[], &[]);
    let increment = |key: Option<&str>| {
        let mut params = json!({"name": "scratchpad_increment", "arguments": {}});
        if let Some(key) = key {
            params["_meta"] = json!({"toolhost.dev/session": key});
        }
        stateless(&server, "tools/call", Some("scratchpad_increment"), params)
    };
    let value = |answer: &Value| answer["result"]["structuredContent"]["value"].clone();
    let (a, b) = (
        "3f6c1e0a-9b7d-4c55-8e21-a1b2c3d4e5f6",
        "0d9e8f7a-6b5c-4d3e-9f10-123456789abc",
    );
    assert_eq!(value(&increment(Some(a))), 1);
    assert_eq!(
        value(&increment(Some(a))),
        2,
        "the same key shares the session"
    );
    assert_eq!(
        value(&increment(Some(b))),
        1,
        "another key, another session"
    );
    assert_eq!(value(&increment(None)), 1, "no key: a one-shot session");
    assert_eq!(value(&increment(None)), 1, "no key: a one-shot session");
    assert_eq!(value(&increment(Some(a))), 3);
    let refused = increment(Some("short"));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // And tools/list works without a session too.
    let listed = stateless(&server, "tools/list", None, json!({}));
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{listed}"
    );
}

/// `--stateless`: no MCP session, so a client that initialized on one
/// process can go on with another (no affinity needed behind a load
/// balancer); the official client works against it; a stateful plugin keeps
/// state only under a `_meta` key, in the process that has it.
#[test]
fn stateless_serving_needs_no_session_affinity() {
    let plugins = plugins();
    let a = Server::start(plugins.path(), &["--stateless"], &[]);
    let b = Server::start(plugins.path(), &["--stateless"], &[]);
    let post = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream";
    let (status, head, body) = a.exchange(post, &initialize_request().to_string());
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        !head.to_ascii_lowercase().contains("mcp-session-id"),
        "no session is issued: {head}"
    );
    assert!(
        head.contains("application/json"),
        "answered as JSON: {head}"
    );
    let init: Value = serde_json::from_str(&body).expect("a JSON answer");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    // The next request goes to the other process, which never saw the
    // client: it answers all the same.
    let call = |server: &Server, tool: &str, key: Option<&str>| {
        let arguments = match tool {
            "text_stats" => json!({"text": "One two. Three!"}),
            _ => json!({}),
        };
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(key) = key {
            params["_meta"] = json!({"toolhost.dev/session": key});
        }
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
        let (status, _, answer) = server.exchange(
            &format!("{post}\r\nMCP-Protocol-Version: 2025-11-25"),
            &body.to_string(),
        );
        assert_eq!(status, 200, "{answer}");
        serde_json::from_str::<Value>(&answer).expect("a JSON answer")
    };
    let stats = call(&b, "text_stats", None);
    assert_eq!(stats["result"]["structuredContent"]["words"], 3, "{stats}");
    let key = Some("5b0c6a8e-2f4d-4e1a-9c3b-7d6e5f4a3b2c");
    let value = |answer: Value| answer["result"]["structuredContent"]["value"].clone();
    assert_eq!(value(call(&a, "scratchpad_increment", key)), 1);
    assert_eq!(value(call(&a, "scratchpad_increment", key)), 2);
    assert_eq!(
        value(call(&b, "scratchpad_increment", key)),
        1,
        "plugin state lives in the process that has it"
    );
    assert_eq!(value(call(&a, "scratchpad_increment", None)), 1);
    // The official client, which speaks 2025-11-25, works without a session.
    let report = sdk_client(
        "http",
        &a.url,
        &json!([
            {"op": "list"},
            {"op": "call", "tool": "text_stats", "args": {"text": "One two. Three!"}},
            {"op": "call", "tool": "calc_eval", "args": {"expression": 7}},
        ]),
    );
    let results = report["results"].as_array().expect("results");
    assert!(
        results[0]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "text_stats")),
        "{report}"
    );
    assert_eq!(results[1]["structured"]["words"], 3, "{report}");
    assert_eq!(results[2]["is_error"], true, "{report}");
}

#[test]
fn reads_touches_and_a_second_serve_reload_nothing_and_a_session_keeps_counting() {
    // Issue 21: the first read of a plugin's files after startup reloaded
    // it (its sessions restarted, clients got list_changed), and a plugin
    // refused at startup was refused (and logged) again on every read.
    let plugins = plugin_subset(&["scratchpad"]);
    std::fs::write(plugins.path().join("broken.wasm"), b"\0asm broken").unwrap();
    let server = Server::start(plugins.path(), &[], &[]);
    let files: Vec<_> = ["scratchpad.wasm", "scratchpad.toml", "broken.wasm"]
        .iter()
        .map(|f| plugins.path().join(f))
        .collect();
    let from = toolhost_tests::plugins::plugin_dir();
    let increment = json!({"op": "call", "tool": "scratchpad_increment", "args": {}});
    let steps = json!([
        increment,
        increment,
        {"op": "read", "files": files},
        {"op": "touch", "files": files},
        {"op": "run", "argv": [toolhost_bin(), "serve", "--wait-for-plugins", "--plugins", plugins.path(), "--cache-dir", test_cache_dir()]},
        {"op": "sleep", "seconds": 1},
        // A real change: the one list_changed there is.
        {"op": "copy", "files": [
            [from.join("calc.toml"), plugins.path().join("calc.toml")],
            [from.join("calc.wasm"), plugins.path().join("calc.wasm")],
        ]},
        {"op": "wait_list_changed", "timeout": 60},
        increment,
        {"op": "touch", "files": files},
        {"op": "wait_list_changed", "timeout": 2},
        increment,
    ]);
    let report = sdk_client("http", &server.url, &steps);
    let results = report["results"].as_array().expect("results");
    let count = |i: usize| results[i]["structured"]["value"].clone();
    assert_eq!(count(0), 1, "{}", results[0]);
    assert_eq!(count(1), 2, "{}", results[1]);
    assert_eq!(results[7]["list_changed"], true, "calc's load was not told");
    assert_eq!(count(8), 3, "the session restarted: {}", results[8]);
    assert_eq!(
        results[10]["list_changed"], false,
        "a touch was taken for a change"
    );
    assert_eq!(count(11), 4, "{}", results[11]);
}
