//! A collector that accepts and never answers (issue 36, class 7): the
//! export of the last spans holds an exit at most
//! `telemetry.shutdown_timeout_ms` (default 1 s), and `serve`'s stop at
//! most its `--shutdown-grace` too; it used to add 5 s to each.

use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_tests::mcp::{ServeHttp, test_cache_dir};
use toolhost_tests::plugins::{plugin_subset, toolhost_bin};
use toolhost_tests::telemetry::{host_config, stateless_call};

/// A collector that accepts every connection, reads nothing and never
/// answers; its base URL.
fn silent_collector() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    format!("http://{address}")
}

/// `toolhost call calc_eval` (one `execute_tool` span), traces to
/// `endpoint` when given; its output and how long it took.
fn call(
    plugins: &std::path::Path,
    endpoint: Option<&str>,
    config: Option<&str>,
) -> (Output, Duration) {
    let mut command = Command::new(toolhost_bin());
    command
        .args([
            "call",
            "calc_eval",
            "--input",
            r#"{"expression": "6*7"}"#,
            "--plugins",
        ])
        .arg(plugins)
        .arg("--cache-dir")
        .arg(test_cache_dir())
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED");
    if let Some(config) = config {
        command.args(["--config", config]);
    }
    if let Some(endpoint) = endpoint {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    }
    let started = Instant::now();
    let out = command.output().expect("toolhost starts");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, took)
}

#[test]
fn a_silent_collector_delays_a_commands_exit_by_at_most_the_bound() {
    let plugins = plugin_subset(&["calc"]);
    let silent = silent_collector();
    // The same command without traces, just before: what it costs here.
    let (_, alone) = call(plugins.path(), None, None);
    let (out, with_silent) = call(plugins.path(), Some(&silent), None);
    assert!(String::from_utf8_lossy(&out.stdout).contains("42"));
    // Default bound 1 s; it used to be 5 s. Generous for a loaded machine.
    let added = with_silent.saturating_sub(alone);
    assert!(
        added < Duration::from_secs(3),
        "the exit took {added:?} longer"
    );

    // A bound of the operator's own.
    let dir = tempfile::tempdir().unwrap();
    let config = host_config(
        dir.path(),
        &format!("[telemetry]\nendpoint = \"{silent}\"\nshutdown_timeout_ms = 100\n"),
    );
    let (_, short) = call(plugins.path(), None, Some(config.to_str().unwrap()));
    let added = short.saturating_sub(alone);
    assert!(
        added < Duration::from_secs(2),
        "the exit took {added:?} longer"
    );
}

#[test]
fn a_silent_collector_does_not_hold_serve_past_its_shutdown_grace() {
    let plugins = plugin_subset(&["calc"]);
    let silent = silent_collector();
    let mut server = ServeHttp::start(
        plugins.path(),
        &["--stateless", "--shutdown-grace", "300ms"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", silent.as_str())],
    );
    let (status, answer) = stateless_call(
        &server.addr,
        "calc_eval",
        json!({"expression": "6*7"}),
        json!({}),
        &[],
    );
    assert_eq!(status, 200, "{answer}");
    let started = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let code = loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "serve still running 4 s after SIGTERM (grace 300 ms; the span export used to take 5 s)"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
}
