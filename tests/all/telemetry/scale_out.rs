//! The scale-out of docs/deploy.md, for real: nginx in front of two
//! `toolhost serve --http` processes, with Prometheus scraping both.

use serde_json::{Value, json};
use toolhost_tests::mcp::ServeHttp;
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::telemetry::{
    Balance, Nginx, Prometheus, ScrapeJob, http, json_rpc_answer, stateless_call,
};

use super::tool_error;

fn scrape_both(servers: &[&ServeHttp]) -> Prometheus {
    Prometheus::start(&[ScrapeJob {
        name: "toolhost".into(),
        targets: servers.iter().map(|s| s.addr.clone()).collect(),
        bearer: None,
    }])
}

#[test]
fn nginx_round_robin_over_stateless_servers_and_prometheus_scrapes_both() {
    let plugins = plugin_subset(&["calc"]);
    let a = ServeHttp::start(plugins.path(), &["--stateless"], &[]);
    let b = ServeHttp::start(plugins.path(), &["--stateless"], &[]);
    let nginx = Nginx::start(&[a.addr.clone(), b.addr.clone()], Balance::RoundRobin);
    for i in 0..6 {
        let (status, answer) = stateless_call(
            &nginx.address,
            "calc_eval",
            json!({ "expression": format!("{i}+1") }),
            json!({}),
            &[],
        );
        assert_eq!(status, 200, "{answer}\n{}", nginx.error_log());
        assert!(!tool_error(&answer).0, "{answer}");
    }
    let prometheus = scrape_both(&[&a, &b]);
    prometheus.wait_for(r#"count(up{job="toolhost"} == 1)"#, |n| n == 2.0);
    let total = r#"sum(toolhost_tool_calls_total{outcome="ok"})"#;
    assert_eq!(prometheus.wait_for(total, |n| n >= 6.0), 6.0);
    // No affinity: both processes answered calls.
    for server in [&a, &b] {
        let one = format!(
            r#"sum(toolhost_tool_calls_total{{outcome="ok",instance="{}"}})"#,
            server.addr
        );
        prometheus.wait_for(&one, |n| n >= 1.0);
    }
}

/// A raw MCP session (the 2025-11-25 revision) through `address`.
struct Session {
    address: String,
    id: String,
}

impl Session {
    fn open(address: &str) -> Self {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "scale-out", "version": "0"}}});
        let (status, head, body) = post(address, None, &init);
        assert_eq!(status, 200, "initialize: {body}");
        let id = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no Mcp-Session-Id in {head}"));
        let (status, _, body) = post(
            address,
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(status, 202, "notifications/initialized: {body}");
        Self {
            address: address.to_owned(),
            id,
        }
    }

    fn call(&self, tool: &str, arguments: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let (status, _, body) = post(&self.address, Some(&self.id), &request);
        assert_eq!(status, 200, "tools/call: {body}");
        json_rpc_answer(&body)
    }
}

/// A POST to /mcp: status, head, body.
fn post(address: &str, session: Option<&str>, body: &Value) -> (u16, String, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    let (status, head, body) = http_with_head(address, &headers, &body.to_string());
    (status, head, body)
}

fn http_with_head(address: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let response = String::from_utf8_lossy(&bytes).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (status, head.to_owned(), body.to_owned())
}

#[test]
fn nginx_keeps_each_session_of_a_stateful_plugin_on_its_process() {
    let plugins = plugin_subset(&["scratchpad"]);
    let a = ServeHttp::start(plugins.path(), &[], &[]);
    let b = ServeHttp::start(plugins.path(), &[], &[]);
    let nginx = Nginx::start(&[a.addr.clone(), b.addr.clone()], Balance::SessionAffinity);
    let sessions: Vec<Session> = (0..4).map(|_| Session::open(&nginx.address)).collect();
    // Each session's counter counts its own calls only: every request of a
    // session reached the process holding its plugin instance.
    for round in 1..=3 {
        for session in &sessions {
            let answer = session.call("scratchpad_increment", json!({}));
            let (failed, text) = tool_error(&answer);
            assert!(!failed, "{text}\n{}", nginx.error_log());
            let value = answer["result"]["structuredContent"]["value"]
                .as_i64()
                .or_else(|| text.trim().parse().ok())
                .unwrap_or_else(|| panic!("no counter in {answer}"));
            assert_eq!(
                value, round,
                "session {} lost its state: {answer}",
                session.id
            );
        }
    }
    let prometheus = scrape_both(&[&a, &b]);
    prometheus.wait_for(r#"count(up{job="toolhost"} == 1)"#, |n| n == 2.0);
    let total = r#"sum(toolhost_tool_calls_total{tool="scratchpad_increment",outcome="ok"})"#;
    assert_eq!(prometheus.wait_for(total, |n| n >= 12.0), 12.0);
    assert_eq!(
        prometheus.wait_for("sum(toolhost_mcp_sessions)", |n| n >= 4.0),
        4.0
    );
    // Sessions were spread: both processes hold some.
    for server in [&a, &b] {
        let live = format!(r#"toolhost_mcp_sessions{{instance="{}"}}"#, server.addr);
        prometheus.wait_for(&live, |n| n >= 1.0);
    }
    let (status, _) = http(&nginx.address, "GET", "/healthz", &[], "");
    assert_eq!(status, 200);
}
