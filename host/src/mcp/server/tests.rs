//! The server over an in-memory pipe, driven by rmcp's client: the stdio
//! path (`serve_io`) and its list_changed, without a process.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;

use super::{ServerOptions, ToolServer};
use crate::tools::{NativeTool, ToolRegistry};

struct Listener(Arc<Notify>);

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.0.notify_one();
        std::future::ready(())
    }
}

fn answering(name: &'static str) -> NativeTool {
    NativeTool::new(
        name,
        "Answers.",
        json!({"type": "object"}),
        move |_| async move { Ok(json!({"said": name})) },
    )
}

/// `serve_io` of `registry` on an in-memory pipe: the client's end, and
/// the serving task.
fn serving(
    registry: Arc<ToolRegistry>,
) -> (
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<Result<(), super::ServeError>>,
) {
    let server = ToolServer::new(registry, ServerOptions::new());
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move {
        server
            .serve_io(server_read, server_write, std::future::pending())
            .await
    });
    (client_end, serving)
}

#[tokio::test]
async fn serve_io_lists_calls_and_tells_of_tools_registered_and_removed_later() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(answering("first")).unwrap();
    let (client_end, serving) = serving(Arc::clone(&registry));
    let changed = Arc::new(Notify::new());
    let client = Listener(Arc::clone(&changed))
        .serve(tokio::io::split(client_end))
        .await
        .expect("handshake");
    let listed = client.list_tools(None).await.unwrap();
    assert_eq!(listed.tools.len(), 1);
    let called = client
        .call_tool(CallToolRequestParams::new("first").with_arguments(JsonObject::new()))
        .await
        .unwrap();
    assert_eq!(called.structured_content, Some(json!({"said": "first"})));

    let told = |what: &'static str| {
        let changed = Arc::clone(&changed);
        async move {
            tokio::time::timeout(Duration::from_secs(30), changed.notified())
                .await
                .unwrap_or_else(|_| panic!("no list_changed after {what}"));
        }
    };
    registry.register(answering("second")).unwrap();
    told("register").await;
    let names: Vec<_> = client
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["first", "second"]);
    registry.unregister("first").unwrap();
    told("unregister").await;
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 1);

    // The client going away ends serving.
    client.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving ends with the client")
        .unwrap()
        .unwrap();
}

/// A stdio connection driven line by line (what a client writes and
/// reads), to see each answer as it comes.
struct Lines {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Lines {
    /// `serve_io` of `registry`, past the handshake (revision 2025-11-25).
    async fn serve(
        registry: Arc<ToolRegistry>,
    ) -> (Self, tokio::task::JoinHandle<Result<(), super::ServeError>>) {
        use tokio::io::AsyncBufReadExt;
        let (client_end, serving) = serving(registry);
        let (read, write) = tokio::io::split(client_end);
        let mut lines = Self {
            write,
            read: tokio::io::BufReader::new(read).lines(),
        };
        lines
            .send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "lines", "version": "0"}}}),
            )
            .await;
        assert_eq!(lines.next().await["id"], 0);
        lines
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (lines, serving)
    }

    async fn send(&mut self, message: serde_json::Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    fn call(id: u64, name: &str) -> serde_json::Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {}}})
    }

    /// The next line, as JSON.
    async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.read.next_line())
            .await
            .expect("a line within 30 s")
            .unwrap()
            .expect("the server wrote a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
}

/// A tool that waits until its call is dropped, and says when it was.
fn waiting_tool(dropped: Arc<Notify>) -> NativeTool {
    struct Dropped(Arc<Notify>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.notify_one();
        }
    }
    NativeTool::new("wait", "Waits.", json!({"type": "object"}), move |_| {
        let guard = Dropped(Arc::clone(&dropped));
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(json!({}))
        }
    })
}

#[tokio::test]
async fn stdio_calls_run_side_by_side_and_a_cancelled_one_is_stopped_and_not_answered() {
    let registry = Arc::new(ToolRegistry::new());
    let dropped = Arc::new(Notify::new());
    registry.register(answering("first")).unwrap();
    registry
        .register(waiting_tool(Arc::clone(&dropped)))
        .unwrap();
    let (mut lines, _serving) = Lines::serve(registry).await;
    // A call that never ends, then quick ones: they are answered while it
    // runs, each on a line of its own.
    lines.send(Lines::call(1, "wait")).await;
    for id in 2..12 {
        lines.send(Lines::call(id, "first")).await;
    }
    let mut answered = Vec::new();
    for _ in 2..12 {
        let answer = lines.next().await;
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"said": "first"}),
            "{answer}"
        );
        answered.push(answer["id"].as_u64().unwrap());
    }
    answered.sort_unstable();
    assert_eq!(answered, (2..12).collect::<Vec<_>>());
    // Cancelled: the tool's call is dropped, and no answer comes for it
    // (the next line is the answer to the call after it).
    lines
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 1, "reason": "no longer needed"}}),
        )
        .await;
    tokio::time::timeout(Duration::from_secs(30), dropped.notified())
        .await
        .expect("the cancelled call is stopped");
    lines.send(Lines::call(12, "first")).await;
    assert_eq!(lines.next().await["id"], 12);
}

#[tokio::test]
async fn stdio_calls_that_need_rmcp_and_other_requests_are_still_answered() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(answering("first")).unwrap();
    let (mut lines, serving) = Lines::serve(registry).await;
    // Progress needs rmcp's request context; an unknown tool is an error
    // (invalid params); tools/list is rmcp's.
    lines
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "first", "arguments": {}, "_meta": {"progressToken": "p"}}}))
        .await;
    let answer = lines.next().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"said": "first"})
    );
    lines.send(Lines::call(2, "nope")).await;
    let answer = lines.next().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    lines
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .await;
    let answer = lines.next().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["tools"][0]["name"], "first");
    // A line longer than the direct path holds (1 MiB) is passed on to
    // rmcp as it comes, and answered (its input is over the host's budget
    // for one: an error result that says so); the call after it too.
    lines
        .send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "first", "arguments": {"text": "x".repeat(3 << 20)}}}))
        .await;
    lines.send(Lines::call(5, "first")).await;
    let mut ids = Vec::new();
    for _ in [4, 5] {
        let answer = lines.next().await;
        let result = &answer["result"];
        match answer["id"].as_u64() {
            Some(4) => assert!(
                result["isError"] == true
                    && result["content"][0]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("the most a tool takes")),
                "{answer}"
            ),
            _ => assert_eq!(result["structuredContent"], json!({"said": "first"})),
        }
        ids.push(answer["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [4, 5], "each answered once, in any order");
    // The end of the input ends serving.
    drop(lines);
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving ends with the input")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_end_of_stdio_input_stops_a_running_call() {
    let registry = Arc::new(ToolRegistry::new());
    let dropped = Arc::new(Notify::new());
    registry
        .register(waiting_tool(Arc::clone(&dropped)))
        .unwrap();
    let (mut lines, serving) = Lines::serve(registry).await;
    lines.send(Lines::call(1, "wait")).await;
    // Let the call start before the input ends.
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(lines);
    tokio::time::timeout(Duration::from_secs(30), dropped.notified())
        .await
        .expect("the running call is stopped");
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving ends with the input")
        .unwrap()
        .unwrap();
}

/// The `_meta` every request of the sessionless 2026-07-28 revision
/// carries (there is no handshake), with `extra` added.
fn modern_meta(extra: serde_json::Value) -> serde_json::Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
    });
    if let (Some(meta), Some(extra)) = (meta.as_object_mut(), extra.as_object()) {
        meta.extend(extra.clone());
    }
    meta
}

#[tokio::test]
async fn stdio_calls_of_unknown_tools_are_counted_on_every_path_and_revision() {
    use crate::telemetry::{Metrics, UNKNOWN_TOOL};
    let metrics = Metrics::new();
    let registry = Arc::new(
        ToolRegistry::new().observed(crate::tools::Observability::new().metrics(metrics.clone())),
    );
    registry.register(answering("first")).unwrap();
    let unknown = || metrics.calls(UNKNOWN_TOOL, "unknown_tool");

    // 2025-11-25: a plain call goes the direct path, one with a progress
    // token through rmcp; both are refused as invalid params, and counted.
    let (mut lines, _serving) = Lines::serve(Arc::clone(&registry)).await;
    lines.send(Lines::call(1, "nope")).await;
    assert_eq!(lines.next().await["error"]["code"], -32602);
    assert_eq!(unknown(), 1, "{}", metrics.render());
    lines
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "also_nope", "arguments": {"x": 1},
                                "_meta": {"progressToken": "p"}}}))
        .await;
    assert_eq!(lines.next().await["error"]["code"], -32602);
    assert_eq!(unknown(), 2, "{}", metrics.render());
    // A known tool is counted under its own name, as before.
    lines.send(Lines::call(3, "first")).await;
    assert_eq!(lines.next().await["id"], 3);
    assert_eq!(metrics.calls("first", "ok"), 1);
    drop(lines);

    // 2026-07-28 (no handshake: each request says its revision).
    let (client_end, _serving) = serving(Arc::clone(&registry));
    let (read, write) = tokio::io::split(client_end);
    let mut lines = Lines {
        write,
        read: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read)),
    };
    for (id, extra) in [(1, json!({})), (2, json!({"progressToken": "p"}))] {
        lines
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "nope", "arguments": {},
                                    "_meta": modern_meta(extra)}}))
            .await;
        let answer = lines.next().await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    assert_eq!(unknown(), 4, "{}", metrics.render());
    assert!(
        metrics
            .render()
            .contains(r#"toolhost_tool_calls_total{tool="(unknown)",outcome="unknown_tool"} 4"#),
        "{}",
        metrics.render()
    );
}

/// A stateful tool: a counter per plugin session, as a stateful plugin
/// keeps one per instance.
struct Counter {
    spec: crate::tools::ToolSpec,
    counts: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl Counter {
    fn new() -> Self {
        Self {
            spec: crate::tools::ToolSpec {
                name: "count".into(),
                description: "Counts calls in its session.".into(),
                input_schema: json!({"type": "object"}),
            },
            counts: std::sync::Mutex::default(),
        }
    }
}

impl crate::tools::Tool for Counter {
    fn spec(&self) -> &crate::tools::ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _input: serde_json::Value,
        cx: &crate::tools::CallContext,
    ) -> futures::future::BoxFuture<
        'static,
        Result<crate::tools::ToolOutput, crate::tools::ToolError>,
    > {
        let session = cx.session.as_ref().map(|s| s.as_str().to_owned());
        let mut counts = self.counts.lock().unwrap();
        let count = counts.entry(session.unwrap_or_default()).or_insert(0);
        *count += 1;
        let value = *count;
        Box::pin(async move { Ok(json!({"value": value}).into()) })
    }

    fn is_stateful(&self) -> bool {
        true
    }
}

/// Calls `count` on `lines` with ids from `first`, alternately plain (the
/// direct path, where the revision has one) and with a progress token
/// (rmcp's path), each request's `_meta` made by `meta`; the values.
async fn counts(
    lines: &mut Lines,
    first: u64,
    meta: impl Fn(serde_json::Value) -> serde_json::Value,
) -> Vec<serde_json::Value> {
    let mut values = Vec::new();
    for id in first..first + 4 {
        let extra = if id % 2 == 0 {
            json!({"progressToken": id})
        } else {
            json!({})
        };
        lines
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "count", "arguments": {}, "_meta": meta(extra)}}))
            .await;
        // Progress notifications (none from this tool) would come first.
        let answer = lines.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        let result = &answer["result"];
        assert!(
            result.get("_meta").is_none(),
            "no session handle on a connection that keeps one: {answer}"
        );
        values.push(result["structuredContent"]["value"].clone());
    }
    values
}

#[tokio::test]
async fn a_stdio_connection_keeps_one_plugin_session_on_every_revision_and_path() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Counter::new()).unwrap();
    // 2025-11-25, after the handshake.
    let (mut lines, _serving) = Lines::serve(Arc::clone(&registry)).await;
    assert_eq!(counts(&mut lines, 1, |extra| extra).await, [1, 2, 3, 4]);
    drop(lines);

    // 2026-07-28: no handshake, each request says its revision; the
    // connection is still one client, with one session.
    let modern = || {
        let (client_end, serving) = serving(Arc::clone(&registry));
        let (read, write) = tokio::io::split(client_end);
        let lines = Lines {
            write,
            read: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read)),
        };
        (lines, serving)
    };
    let (mut lines, _serving) = modern();
    assert_eq!(counts(&mut lines, 1, modern_meta).await, [1, 2, 3, 4]);
    // The same after a bootstrap `server/discover`, as the SDKs begin.
    let (mut other, _serving_other) = modern();
    other
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                     "params": {"_meta": modern_meta(json!({}))}}),
        )
        .await;
    assert_eq!(other.next().await["id"], 0);
    assert_eq!(counts(&mut other, 1, modern_meta).await, [1, 2, 3, 4]);
    // Each connection its own session; the first goes on where it was.
    assert_eq!(counts(&mut lines, 5, modern_meta).await, [5, 6, 7, 8]);
}
