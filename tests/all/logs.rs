//! A plugin's log lines beyond the host's own log: to a program's
//! `LogSink` at its level, and through `toolhost serve` to an MCP client
//! that asked for them (the official Python SDK running tests/mcp/client.py):
//! `logging/setLevel` in a 2025-11-25 session over stdio and HTTP, and the
//! per-request `_meta` level of 2026-07-28 over HTTP.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, LogLevel, LogSink};
use toolhost_tests::mcp::{ServeHttp as Server, sdk_client, stdio_command, test_cache_dir};
use toolhost_tests::plugins::{copy_plugin_from, fixtures_dir, hostile_dir};

/// The fixture tool that logs one line at each level, trace to error.
const LEVELS_TOOL: &str = "test_tool_with_log_levels";

/// The warning line as a client gets it: newline and escape escaped.
const WARN_LINE: &str = r"warn line\nforged line\u{1b}[2J";

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    dir
}

#[tokio::test]
async fn a_call_s_log_lines_reach_the_sink_of_its_context_at_its_level() {
    let dir = fixture();
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir())).unwrap();
    let report = host.load_dir(dir.path()).await.unwrap();
    let registry = report.registry().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let seen = Arc::clone(&seen);
        LogSink::new(LogLevel::Warn, move |line| seen.lock().unwrap().push(line))
    };
    let cx = CallContext::default().with_logs(sink);
    registry
        .call(LEVELS_TOOL, json!({}), &cx)
        .await
        .output
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    let lines: Vec<(LogLevel, &str)> = seen.iter().map(|l| (l.level, l.message.as_str())).collect();
    assert_eq!(
        lines,
        [(LogLevel::Warn, WARN_LINE), (LogLevel::Error, "error line")],
        "warnings and worse, escaped, in order"
    );
    // Without a sink the same call logs to the host's log only.
    registry
        .call(LEVELS_TOOL, json!({}), &CallContext::default())
        .await
        .output
        .unwrap();
}

/// `[level, data]` of each log notification in `logs`, checking that each
/// names the tool.
fn lines(logs: &Value) -> Vec<(String, String)> {
    logs.as_array()
        .unwrap_or_else(|| panic!("a list of log notifications: {logs}"))
        .iter()
        .map(|log| {
            assert_eq!(log["logger"], LEVELS_TOOL, "{log}");
            (
                log["level"].as_str().unwrap().to_owned(),
                log["data"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(l, d)| ((*l).to_owned(), (*d).to_owned()))
        .collect()
}

const EVERY_LINE: [(&str, &str); 5] = [
    ("debug", "trace line"),
    ("debug", "debug line"),
    ("info", "info line"),
    ("warning", WARN_LINE),
    ("error", "error line"),
];

#[test]
fn stdio_client_gets_the_lines_at_the_level_it_set_before_the_result() {
    let dir = fixture();
    let report = sdk_client(
        "stdio",
        &stdio_command(dir.path(), &[]),
        &json!([
            {"op": "call", "tool": LEVELS_TOOL},
            {"op": "set_level", "level": "warning"},
            {"op": "call", "tool": LEVELS_TOOL},
            {"op": "set_level", "level": "debug"},
            {"op": "call", "tool": LEVELS_TOOL},
            {"op": "set_level", "level": "critical"},
            {"op": "call", "tool": LEVELS_TOOL},
            {"op": "logs"},
        ]),
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[0]["logs"], json!([]), "none before setLevel");
    assert_eq!(results[1], json!({}), "setLevel answers {{}}");
    assert_eq!(
        lines(&results[2]["logs"]),
        pairs(&[("warning", WARN_LINE), ("error", "error line")]),
        "warning and above, before the result"
    );
    assert_eq!(lines(&results[4]["logs"]), pairs(&EVERY_LINE));
    assert_eq!(results[6]["logs"], json!([]), "nothing is critical");
    assert_eq!(results[7]["logs"], json!([]), "and nothing came later");
}

#[test]
fn http_clients_get_the_lines_they_asked_for_in_a_session_and_per_request() {
    let dir = fixture();
    let server = Server::start(dir.path(), &[], &[]);
    let report = sdk_client(
        "http",
        &server.url,
        &json!([
            // 2026-07-28: per request, in `_meta`.
            {"op": "call", "tool": LEVELS_TOOL, "session": "modern"},
            {"op": "call", "tool": LEVELS_TOOL, "session": "modern", "log_level": "info"},
            {"op": "call", "tool": LEVELS_TOOL, "session": "modern", "log_level": "verbose"},
            // 2025-11-25: for the session. rmcp sends these on the
            // session's GET stream, so they are waited for.
            {"op": "call", "tool": LEVELS_TOOL, "session": "old"},
            {"op": "set_level", "level": "error", "session": "old"},
            {"op": "call", "tool": LEVELS_TOOL, "session": "old"},
            {"op": "wait_logs", "count": 1, "session": "old"},
            {"op": "logs", "session": "old"},
        ]),
    );
    let sessions = &report["sessions"];
    assert_eq!(sessions["modern"]["protocol_version"], "2026-07-28");
    assert_eq!(sessions["old"]["protocol_version"], "2025-11-25");
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0]["logs"], json!([]), "no `_meta` level, no lines");
    assert_eq!(
        lines(&results[1]["logs"]),
        pairs(&EVERY_LINE[2..]),
        "info and above, on the request's own stream, before the result"
    );
    assert_eq!(
        results[2]["error"]["code"], -32602,
        "a level that is no MCP level: {}",
        results[2]
    );
    assert_eq!(results[3]["logs"], json!([]), "none before setLevel");
    assert_eq!(results[3]["is_error"], false, "{}", results[3]);
    let mut old = lines(&results[5]["logs"]);
    old.extend(lines(&results[7]["logs"]));
    assert_eq!(old, pairs(&[("error", "error line")]));
}

/// What a sink got from one `hostile_log_flood` call: (lines, bytes).
async fn flood(width: usize) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_output", dir.path());
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir())).unwrap();
    let report = host.load_dir(dir.path()).await.unwrap();
    let registry = report.registry().unwrap();
    let got = Arc::new(Mutex::new((0, 0)));
    let sink = {
        let got = Arc::clone(&got);
        LogSink::new(LogLevel::Trace, move |line| {
            let mut got = got.lock().unwrap();
            got.0 += 1;
            got.1 += line.message.len();
        })
    };
    let out = registry
        .call(
            "hostile_log_flood",
            json!({"lines": 100_000, "width": width}),
            &CallContext::default().with_logs(sink),
        )
        .await
        .output
        .expect("a flood is cut off, not fatal");
    assert_eq!(out["logged"], 100_000);
    *got.lock().unwrap()
}

#[tokio::test]
async fn a_log_flood_reaches_a_sink_within_the_per_call_budgets() {
    // Long lines: the 64 KiB a call binds first.
    let (lines, bytes) = flood(100).await;
    // The last line is cut to what is left and says so (`... [N more
    // bytes]`): the note may pass the budget by its own length.
    assert!(bytes <= (64 << 10) + 32, "{bytes} bytes");
    assert!(bytes > 60 << 10, "the budget is used, not more: {bytes}");
    assert!(lines < 1024, "{lines} lines");
    // Short lines: the 1,024 lines a call bind first.
    let (lines, bytes) = flood(0).await;
    assert_eq!(lines, 1024, "{bytes} bytes");
}
