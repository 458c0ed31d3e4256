//! `GET /metrics` scraped by a real Prometheus, read back through its
//! query API.

use serde_json::json;
use toolhost_tests::mcp::ServeHttp;
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, plugin_subset};
use toolhost_tests::telemetry::{Prometheus, ScrapeJob, http, stateless_call};

use super::tool_error;

const TOKEN: &str = "telemetry-test-token-0123456789abcdef";

/// calc, and hostile_sleep with a 300 ms deadline.
fn plugins() -> tempfile::TempDir {
    let dir = plugin_subset(&["calc"]);
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 300\n",
    )
    .unwrap();
    dir
}

#[test]
fn prometheus_scrapes_calls_that_succeed_fail_and_time_out() {
    let plugins = plugins();
    let server = ServeHttp::start(
        plugins.path(),
        &["--stateless", "--token-env", "TELEMETRY_TEST_TOKEN"],
        &[("TELEMETRY_TEST_TOKEN", TOKEN)],
    );
    // The same token rule as /mcp.
    let (status, _) = http(&server.addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 401, "/metrics without the token");
    let auth = format!("Bearer {TOKEN}");
    let call = |tool: &str, arguments| {
        let (status, answer) = stateless_call(
            &server.addr,
            tool,
            arguments,
            json!({}),
            &[("Authorization", &auth)],
        );
        assert_eq!(status, 200, "{tool}: {answer}");
        tool_error(&answer)
    };
    for expression in ["1+2", "6*7", "2*21"] {
        let (failed, text) = call("calc_eval", json!({ "expression": expression }));
        assert!(!failed, "{expression}: {text}");
    }
    for bad in [json!({}), json!({"expression": 5})] {
        let (failed, text) = call("calc_eval", bad);
        assert!(failed && text.starts_with("invalid_input"), "{text}");
    }
    let (failed, text) = call("hostile_sleep", json!({"ms": 5000}));
    assert!(failed && text.starts_with("timeout"), "{text}");

    let prometheus = Prometheus::start(&[ScrapeJob {
        name: "toolhost".into(),
        targets: vec![server.addr.clone()],
        bearer: Some(TOKEN.into()),
    }]);
    prometheus.wait_for(r#"up{job="toolhost"}"#, |up| up == 1.0);
    let calls = |tool: &str, outcome: &str| {
        format!(r#"sum(toolhost_tool_calls_total{{tool="{tool}",outcome="{outcome}"}})"#)
    };
    assert_eq!(
        prometheus.wait_for(&calls("calc_eval", "ok"), |n| n >= 3.0),
        3.0
    );
    assert_eq!(
        prometheus.wait_for(&calls("calc_eval", "invalid_input"), |n| n >= 2.0),
        2.0
    );
    assert_eq!(
        prometheus.wait_for(&calls("hostile_sleep", "timeout"), |n| n >= 1.0),
        1.0
    );
    // Latency of every call; fuel and memory of those that ran in a guest.
    assert_eq!(
        prometheus.wait_for(
            r#"sum(toolhost_tool_call_duration_seconds_count{tool="calc_eval"})"#,
            |n| n >= 5.0
        ),
        5.0
    );
    let timed_out = prometheus.wait_for(
        r#"sum(toolhost_tool_call_duration_seconds_sum{tool="hostile_sleep"})"#,
        |s| s > 0.0,
    );
    assert!((0.3..5.0).contains(&timed_out), "{timed_out} s");
    prometheus.wait_for(
        r#"sum(toolhost_tool_call_fuel_used_count{tool="calc_eval"})"#,
        |n| n >= 3.0,
    );
    prometheus.wait_for(
        r#"sum(toolhost_tool_call_fuel_used_sum{tool="calc_eval"})"#,
        |fuel| fuel > 0.0,
    );
    prometheus.wait_for(
        r#"sum(toolhost_tool_call_memory_bytes_count{tool="calc_eval"})"#,
        |n| n >= 3.0,
    );
    // HTTP answers by status, the instance pool, sessions (none: stateless).
    prometheus.wait_for(r#"sum(toolhost_http_requests_total{status="200"})"#, |n| {
        n >= 6.0
    });
    prometheus.wait_for(r#"sum(toolhost_http_requests_total{status="401"})"#, |n| {
        n >= 1.0
    });
    prometheus.wait_for("toolhost_instances_in_use", |n| n >= 0.0);
    prometheus.wait_for("toolhost_instances_spare", |n| n >= 0.0);
    prometheus.wait_for("toolhost_mcp_sessions", |n| n == 0.0);
}

#[test]
fn metrics_can_have_an_address_of_their_own() {
    let plugins = plugin_subset(&["calc"]);
    let config_dir = tempfile::tempdir().unwrap();
    let port = toolhost_tests::telemetry::free_port();
    let config = toolhost_tests::telemetry::host_config(
        config_dir.path(),
        &format!("[telemetry]\nmetrics_addr = \"127.0.0.1:{port}\"\n"),
    );
    let server = ServeHttp::start(
        plugins.path(),
        &[
            "--stateless",
            "--token-env",
            "TELEMETRY_TEST_TOKEN",
            "--config",
            config.to_str().unwrap(),
        ],
        &[("TELEMETRY_TEST_TOKEN", TOKEN)],
    );
    let auth = format!("Bearer {TOKEN}");
    let (status, answer) = stateless_call(
        &server.addr,
        "calc_eval",
        json!({"expression": "1+1"}),
        json!({}),
        &[("Authorization", &auth)],
    );
    assert_eq!(status, 200, "{answer}");
    // Its own address needs no token; the MCP address keeps the token rule.
    let metrics_addr = format!("127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(&metrics_addr).is_err() {
        assert!(std::time::Instant::now() < deadline, "no metrics listener");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, text) = http(&metrics_addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(r#"toolhost_tool_calls_total{tool="calc_eval",outcome="ok"} 1"#),
        "{text}"
    );
    assert_eq!(http(&server.addr, "GET", "/metrics", &[], "").0, 401);
}
