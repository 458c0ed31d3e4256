//! Spans exported over OTLP/HTTP to a collector on loopback: the tree of
//! a `toolhost run` (invoke_agent → chat → execute_tool) with the GenAI
//! attribute names, and an MCP caller's trace context continued.

use std::collections::BTreeSet;

use serde_json::json;
use toolhost_tests::mcp::ServeHttp;
use toolhost_tests::plugins::{plugin_subset, toolhost_bin, workspace_root};
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};
use toolhost_tests::telemetry::{Collector, ReceivedSpan, host_config, stateless_call};

use super::tool_error;

fn named<'a>(spans: &'a [ReceivedSpan], prefix: &str) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.name.starts_with(prefix))
        .collect()
}

fn attr<'a>(span: &'a ReceivedSpan, key: &str) -> &'a str {
    span.attributes
        .get(key)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("span {} has no `{key}`: {:?}", span.name, span.attributes))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_with_two_tool_calls_exports_its_span_tree() {
    let collector = Collector::start();
    let fake = FakeOpenAi::start().await;
    fake.push(
        Turn::calls(vec![
            FakeCall::new("calc_eval", json!({"expression": "6*7"})).with_id("call_a"),
            FakeCall::new("calc_eval", json!({"expression": "1+1"})).with_id("call_b"),
        ])
        .with_usage(11, 7),
    );
    fake.push(Turn::text("42 and 2.").with_usage(20, 5));
    let plugins = plugin_subset(&["calc"]);
    let args = vec![
        "run".to_owned(),
        "What are 6*7 and 1+1?".to_owned(),
        "--provider".to_owned(),
        "openai".to_owned(),
        "--base-url".to_owned(),
        fake.url(),
        "--api-key-env".to_owned(),
        "TOOLHOST_TEST_KEY".to_owned(),
        "--model".to_owned(),
        "test-model".to_owned(),
        "--plugins".to_owned(),
        plugins.path().display().to_string(),
    ];
    let endpoint = collector.endpoint.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(toolhost_bin())
            .args(&args)
            .env(
                "TOOLHOST_CACHE_DIR",
                workspace_root().join("target").join("test-cache"),
            )
            .env("TOOLHOST_TEST_KEY", "sk-test-secret-key")
            // What an operator sets: the CLI reads these, the library not.
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_SERVICE_NAME", "toolhost-under-test")
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("TOOLHOST_PLUGINS")
            .output()
            .expect("toolhost starts")
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The process flushed its spans before it exited.
    let spans = collector.spans();
    let runs = named(&spans, "invoke_agent");
    let chats = named(&spans, "chat ");
    let tools = named(&spans, "execute_tool ");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(tools.len(), 2, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run.parent_span_id, "", "the run is the root");
    assert_eq!(run.service, "toolhost-under-test");
    assert_eq!(attr(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(run, "gen_ai.usage.input_tokens"), "31");
    assert_eq!(attr(run, "gen_ai.usage.output_tokens"), "12");
    for chat in &chats {
        assert_eq!(chat.name, "chat test-model");
        assert_eq!(
            chat.parent_span_id, run.span_id,
            "a chat's parent is the run"
        );
        assert_eq!(chat.trace_id, run.trace_id);
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(chat, "gen_ai.request.model"), "test-model");
        assert!(!attr(chat, "gen_ai.provider.name").is_empty());
    }
    let asking = chats
        .iter()
        .find(|c| attr(c, "gen_ai.response.finish_reasons") == "tool_calls")
        .expect("the chat whose answer asked for the tools");
    assert_eq!(attr(asking, "gen_ai.usage.input_tokens"), "11");
    assert_eq!(attr(asking, "gen_ai.usage.output_tokens"), "7");
    let ids: BTreeSet<&str> = tools
        .iter()
        .map(|t| attr(t, "gen_ai.tool.call.id"))
        .collect();
    assert_eq!(ids, BTreeSet::from(["call_a", "call_b"]));
    for tool in &tools {
        assert_eq!(tool.name, "execute_tool calc_eval");
        assert_eq!(
            tool.parent_span_id, asking.span_id,
            "a tool call's parent is the model request that asked for it"
        );
        assert_eq!(tool.trace_id, run.trace_id);
        assert_eq!(attr(tool, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(attr(tool, "gen_ai.tool.name"), "calc_eval");
        assert_eq!(attr(tool, "toolhost.plugin"), "calc");
        assert_eq!(attr(tool, "toolhost.instance"), "fresh");
        assert!(attr(tool, "toolhost.fuel_used").parse::<u64>().unwrap() > 0);
        assert!(attr(tool, "toolhost.memory_bytes").parse::<u64>().unwrap() > 0);
        // Inputs and outputs only when the operator asks.
        assert!(!tool.attributes.contains_key("gen_ai.tool.call.arguments"));
    }
    // Nothing secret in any attribute.
    for span in &spans {
        for value in span.attributes.values() {
            assert!(!value.contains("sk-test-secret-key"), "{span:?}");
        }
    }
}

#[test]
fn an_mcp_callers_traceparent_is_the_parent_of_its_execute_tool_span() {
    let collector = Collector::start();
    let plugins = plugin_subset(&["calc"]);
    let dir = tempfile::tempdir().unwrap();
    let config = host_config(
        dir.path(),
        &format!(
            "[telemetry]\nendpoint = \"{}\"\nservice_name = \"toolhost-serve\"\nrecord_io_bytes = 64\n",
            collector.endpoint
        ),
    );
    let server = ServeHttp::start(
        plugins.path(),
        &["--stateless", "--config", config.to_str().unwrap()],
        &[],
    );
    let from_meta = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let from_header = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let (status, answer) = stateless_call(
        &server.addr,
        "calc_eval",
        json!({"expression": "2+2"}),
        json!({"traceparent": format!("00-{}-{}-01", from_meta.0, from_meta.1)}),
        &[],
    );
    assert_eq!(status, 200);
    assert!(!tool_error(&answer).0, "{answer}");
    let header = format!("00-{}-{}-01", from_header.0, from_header.1);
    let (status, answer) = stateless_call(
        &server.addr,
        "calc_eval",
        json!({"expression": "3+3"}),
        json!({}),
        &[("traceparent", &header)],
    );
    assert_eq!(status, 200);
    assert!(!tool_error(&answer).0, "{answer}");
    let spans = collector.wait_for(|spans| named(spans, "execute_tool ").len() >= 2);
    for (trace, parent) in [from_meta, from_header] {
        let span = spans
            .iter()
            .find(|s| s.trace_id == trace)
            .unwrap_or_else(|| panic!("no span in trace {trace}: {spans:#?}"));
        assert_eq!(span.name, "execute_tool calc_eval");
        assert_eq!(
            span.parent_span_id, parent,
            "the caller's span is the parent"
        );
        assert_eq!(span.service, "toolhost-serve");
        // Asked for in the config: inputs and outputs, clipped.
        assert!(attr(span, "gen_ai.tool.call.arguments").contains("expression"));
        assert!(!attr(span, "gen_ai.tool.call.result").is_empty());
    }
}

#[test]
fn an_upstream_mcp_server_continues_the_trace_of_the_call() {
    // The outer `serve` offers the inner one's tools (`[[mcp]]`); both
    // export to the same collector. The outer call's `execute_tool` span
    // is the parent of the inner's: the trace went on in `_meta`.
    let collector = Collector::start();
    let plugins = plugin_subset(&["calc"]);
    let empty = plugin_subset(&[]);
    let dir = tempfile::tempdir().unwrap();
    let telemetry = |service: &str| {
        format!(
            "[telemetry]\nendpoint = \"{}\"\nservice_name = \"{service}\"\n",
            collector.endpoint
        )
    };
    let inner = dir.path().join("inner.toml");
    std::fs::write(&inner, telemetry("inner")).unwrap();
    let outer = host_config(
        dir.path(),
        &format!(
            "{}\n[[mcp]]\nname = \"inner\"\ncommand = {}\nargs = [\"serve\", \"--plugins\", {}, \"--cache-dir\", {}, \"--config\", {}]\nprefix = \"\"\n",
            telemetry("outer"),
            json!(toolhost_bin()),
            json!(plugins.path()),
            json!(workspace_root().join("target").join("test-cache")),
            json!(inner),
        ),
    );
    let server = ServeHttp::start(
        empty.path(),
        &["--stateless", "--config", outer.to_str().unwrap()],
        &[],
    );
    let caller = ("5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8");
    let meta = json!({"traceparent": format!("00-{}-{}-01", caller.0, caller.1)});
    // The inner server may still be starting: its tool is offered once
    // it is connected.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, answer) = stateless_call(
            &server.addr,
            "calc_eval",
            json!({"expression": "2+3"}),
            meta.clone(),
            &[],
        );
        assert_eq!(status, 200, "{answer}");
        if !tool_error(&answer).0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the inner server's tool never answered: {answer}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let done = |spans: &[ReceivedSpan]| {
        spans
            .iter()
            .any(|s| s.service == "inner" && s.trace_id == caller.0)
    };
    let spans = collector.wait_for(done);
    let in_trace: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.trace_id == caller.0).collect();
    let outer_span = in_trace
        .iter()
        .find(|s| {
            s.service == "outer"
                && s.name == "execute_tool calc_eval"
                && s.parent_span_id == caller.1
        })
        .unwrap_or_else(|| panic!("no outer execute_tool span under the caller's: {in_trace:#?}"));
    assert_eq!(attr(outer_span, "toolhost.tool.source"), "mcp");
    assert_eq!(attr(outer_span, "toolhost.plugin"), "inner");
    let inner_span = in_trace
        .iter()
        .find(|s| s.service == "inner" && s.name == "execute_tool calc_eval")
        .unwrap_or_else(|| panic!("no inner execute_tool span in the trace: {in_trace:#?}"));
    assert_eq!(
        inner_span.parent_span_id, outer_span.span_id,
        "the inner call continues the outer call's span"
    );
    assert_eq!(attr(inner_span, "toolhost.plugin"), "calc");
}

/// An HTTP server on loopback that answers `{"ok": true}` and keeps the
/// head of every request it gets.
fn recording_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&heads);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            kept.lock().unwrap().push(head);
            let body = r#"{"ok":true}"#;
            let _ = write!(
                writer,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (origin, heads)
}

#[test]
fn a_rest_tool_hands_the_trace_on_and_no_secret_reaches_a_span() {
    let collector = Collector::start();
    let (origin, heads) = recording_server();
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let config = host_config(
        dir.path(),
        &format!(
            r#"[allow]
http = ["{origin}"]
http_private = true

[telemetry]
endpoint = "{endpoint}"

[[rest]]
name = "status"
description = "A service's status."
url = "{origin}/status"
input_schema = {{ type = "object" }}
headers.Authorization = {{ env = "TELEMETRY_TEST_SECRET", prefix = "Bearer " }}
"#,
            endpoint = collector.endpoint
        ),
    );
    let secret = "rest-secret-value-9f8e7d6c";
    let out = std::process::Command::new(toolhost_bin())
        .args(["call", "status", "--input", "{}", "--plugins"])
        .arg(&plugins)
        .arg("--config")
        .arg(&config)
        .env("TELEMETRY_TEST_SECRET", secret)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .expect("toolhost runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = collector.wait_for(|spans| !named(spans, "execute_tool status").is_empty());
    let span = named(&spans, "execute_tool status")[0];
    assert_eq!(attr(span, "toolhost.tool.source"), "rest");
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let traceparent = heads[0]
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("traceparent")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no traceparent in {}", heads[0]));
    assert_eq!(
        traceparent,
        format!("00-{}-{}-01", span.trace_id, span.span_id),
        "the service's request continues the call's span"
    );
    for span in &spans {
        for value in span.attributes.values() {
            assert!(!value.contains(secret), "{span:?}");
        }
    }
}
