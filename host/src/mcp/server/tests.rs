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
