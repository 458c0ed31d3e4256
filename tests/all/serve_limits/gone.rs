//! A client that goes away (issue 36, class 5): closing a request's
//! connection cancels the call in flight, on the direct path, through
//! rmcp and in the stateless revisions, and ends a pending question; the
//! instance it held is free at once, not when its deadline or the
//! question's time limit runs out.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use super::*;

/// `plugins()` and hostile_ask, with a host config that keeps no spare
/// instances: `instances_in_use` counts exactly the calls running.
fn plugins_counted() -> (tempfile::TempDir, String) {
    let dir = plugins();
    copy_plugin_from(hostile_dir(), "hostile_ask", dir.path());
    let config = dir.path().join("host.toml");
    std::fs::write(&config, "spare_instances = 0\n").unwrap();
    let config = config.to_str().unwrap().to_owned();
    (dir, config)
}

/// `toolhost_instances_in_use` as `/metrics` says now.
fn instances_in_use(addr: &str) -> f64 {
    let (status, _, body) = exchange(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|line| line.strip_prefix("toolhost_instances_in_use "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no toolhost_instances_in_use in {body}"))
}

/// Wait until `instances_in_use` is `n`; how long it took. Panics after
/// `limit`.
fn wait_for_instances(addr: &str, n: f64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let now = instances_in_use(addr);
        if now == n {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "instances_in_use stayed {now}, not {n}, for {limit:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Send `request` on a connection of its own and return it, open.
fn send(addr: &str, request: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// A POST of `body` in `session` (none: stateless), with extra headers.
fn post_with(addr: &str, session: Option<&str>, extra: &str, body: &Value) -> String {
    let body = body.to_string();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}{extra}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn spin_call(id: u64, meta: Option<Value>) -> Value {
    let mut call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "hostile_spin", "arguments": {}}});
    if let Some(meta) = meta {
        call["params"]["_meta"] = meta;
    }
    call
}

/// Start `request` (a call of hostile_spin, which spins for a minute),
/// wait until its instance is in use, close the connection, and check the
/// instance is free again long before the minute is up.
fn close_mid_call(addr: &str, request: &str) {
    assert_eq!(instances_in_use(addr), 0.0);
    let stream = send(addr, request);
    wait_for_instances(addr, 1.0, Duration::from_secs(30));
    drop(stream);
    let took = wait_for_instances(addr, 0.0, Duration::from_secs(20));
    assert!(took < Duration::from_secs(20), "freed after {took:?}");
}

#[test]
fn a_direct_call_whose_client_goes_away_is_stopped() {
    let (plugins, config) = plugins_counted();
    let server = serve(plugins.path(), &["--config", &config]);
    let session = super::direct::open_direct(&server.addr);
    for id in [31, 32] {
        close_mid_call(
            &server.addr,
            &post_with(&server.addr, Some(&session.id), "", &spin_call(id, None)),
        );
    }
    // The session goes on.
    let answer = session.call("calc_eval", json!({"expression": "2+2"}));
    assert_eq!(answer["result"]["structuredContent"]["value"], 4.0);
}

/// A progress token sends the call through rmcp's session worker: its
/// answer is an event stream, and closing that stream cancels the call.
#[test]
fn a_call_through_rmcp_whose_client_goes_away_is_stopped() {
    let (plugins, config) = plugins_counted();
    let server = serve(plugins.path(), &["--config", &config]);
    let session = Session::open(&server.addr);
    for id in [41, 42] {
        let call = spin_call(id, Some(json!({"progressToken": format!("p{id}")})));
        close_mid_call(
            &server.addr,
            &post_with(&server.addr, Some(&session.id), "", &call),
        );
    }
    let answer = session.call("calc_eval", json!({"expression": "2+2"}));
    assert_eq!(answer["result"]["structuredContent"]["value"], 4.0);
}

/// The stateless revision (2026-07-28) and a `--stateless` server.
#[test]
fn a_stateless_call_whose_client_goes_away_is_stopped() {
    let (plugins, config) = plugins_counted();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}});
    let modern = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
                  Mcp-Name: hostile_spin\r\n";
    let server = serve(plugins.path(), &["--config", &config]);
    close_mid_call(
        &server.addr,
        &post_with(
            &server.addr,
            None,
            modern,
            &spin_call(51, Some(meta.clone())),
        ),
    );
    let stateless = serve(plugins.path(), &["--config", &config, "--stateless"]);
    close_mid_call(
        &stateless.addr,
        &post_with(&stateless.addr, None, modern, &spin_call(52, Some(meta))),
    );
    close_mid_call(
        &stateless.addr,
        &post_with(&stateless.addr, None, "", &spin_call(53, None)),
    );
}

/// A 2025-11-25 session of a client that declares form elicitation; its id.
fn open_asking(addr: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let (status, head, body) = post(addr, None, &initialize);
    assert_eq!(status, 200, "{body}");
    let id = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap();
    let (status, _, _) = post(
        addr,
        Some(&id),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    id
}

/// POST `call` in session `id` and read its event stream until the
/// server asks the client something (`elicitation/create`): the stream,
/// still open, and the request asked.
fn until_asked(addr: &str, id: &str, call: &Value) -> (BufReader<TcpStream>, Value) {
    let stream = send(addr, &post_with(addr, Some(id), "", call));
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).expect("the question arrives");
        assert!(n > 0, "the stream ended before the question");
        if let Some(data) = line.trim_end().strip_prefix("data:")
            && data.contains("elicitation/create")
        {
            return (lines, serde_json::from_str(data.trim()).unwrap());
        }
    }
}

/// A call whose tool asks its user (2025-11-25: `elicitation/create` on
/// the call's event stream) and whose client closes the stream instead of
/// answering: the question ends and the instance is free at once, not
/// after the question's five minutes.
#[test]
fn a_pending_question_whose_stream_closes_frees_its_instance() {
    let (plugins, config) = plugins_counted();
    let server = serve(plugins.path(), &["--config", &config]);
    let addr = &server.addr;
    let id = open_asking(addr);
    for (call_id, times) in [(61, 1), (62, 3)] {
        assert_eq!(instances_in_use(addr), 0.0);
        let call = json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                          "params": {"name": "hostile_ask", "arguments": {"times": times}}});
        let (lines, _) = until_asked(addr, &id, &call);
        assert_eq!(
            instances_in_use(addr),
            1.0,
            "the call waits, holding its instance"
        );
        drop(lines);
        let took = wait_for_instances(addr, 0.0, Duration::from_secs(20));
        assert!(took < Duration::from_secs(20), "freed after {took:?}");
    }
}

/// A call that needs approval (the host config's `[approval] require`)
/// and whose client closes the stream instead of answering: the approval
/// ends with the stream, and an answer sent after it runs nothing. A
/// pending approval holds no instance (the tool has not started); the
/// call it guarded never takes one.
#[test]
fn a_pending_approval_whose_stream_closes_runs_nothing_even_when_answered_late() {
    let (plugins, config) = plugins_counted();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[approval]\nrequire = [\"hostile_spin\"]\n");
    std::fs::write(&config, text).unwrap();
    let server = serve(plugins.path(), &["--config", &config]);
    let addr = &server.addr;
    let id = open_asking(addr);
    for call_id in [71, 72] {
        let (lines, asked) = until_asked(addr, &id, &spin_call(call_id, None));
        assert!(
            asked["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("hostile_spin")),
            "{asked}"
        );
        assert_eq!(instances_in_use(addr), 0.0, "an approval holds no instance");
        drop(lines);
        // The user's accept arrives after the client gave up on the call.
        let late = json!({"jsonrpc": "2.0", "id": asked["id"],
                          "result": {"action": "accept", "content": {}}});
        let (status, _, body) = post(addr, Some(&id), &late);
        assert!((200..300).contains(&status), "{status} {body}");
        // The session goes on; the call never started, so nothing holds
        // an instance (a spin that ran would hold one for a minute).
        let answer = Session {
            addr: addr.clone(),
            id: id.clone(),
        }
        .call("calc_eval", json!({"expression": "2+2"}));
        assert_eq!(answer["result"]["structuredContent"]["value"], 4.0);
        let took = wait_for_instances(addr, 0.0, Duration::from_secs(20));
        assert!(took < Duration::from_secs(20), "held for {took:?}");
    }
}
