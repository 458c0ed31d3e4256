//! MCP servers that misbehave (tests/mcp/raw_server.py, plain JSON-RPC
//! over stdio or streamable HTTP): one that never lists its tools, one
//! whose tool list or result is larger than one message may be, and ones
//! that quote back the secrets the host sent them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::mcp::{McpDecl, McpServer};
use toolhost::tools::{CallContext, Tool, ToolError, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::workspace_root;

/// The largest message a server with the default `max_result_kb` may send:
/// 16 MiB (a tool list) + 1 MiB (the envelope).
const MESSAGE_CAP: u64 = 17 << 20;

const TOKEN: &str = "mcp-s3cret-token/with+chars";

fn raw_server() -> String {
    workspace_root()
        .join("tests")
        .join("mcp")
        .join("raw_server.py")
        .display()
        .to_string()
}

/// A stdio `[[mcp]]` declaration running raw_server.py in `mode`, each
/// start noted in `starts`, with `extra` TOML keys.
fn stdio_decl(mode: &str, starts: &Path, extra: &str) -> McpDecl {
    let args = json!([raw_server(), "stdio", mode, starts.display().to_string()]);
    let text = format!("name = \"raw\"\ncommand = \"python3\"\nargs = {args}\n{extra}");
    toml::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |s| s.lines().count())
}

async fn call(registry: &ToolRegistry, tool: &str, input: Value) -> Result<Value, ToolError> {
    registry
        .call(tool, input, &CallContext::default())
        .await
        .output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_lists_its_tools_is_down_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("starts");
    let decl = stdio_decl("never-lists", &file, "list_timeout_ms = 300");
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(!server.start().await, "up without a tool list");
    let down = server.summary().down.expect("down");
    assert!(
        down.contains("did not answer `tools/list` within 300 ms"),
        "{down}"
    );
    assert!(down.contains("list_timeout_ms"), "{down}");
    assert!(server.tools().is_empty());
    // Restarted with backoff, again and again.
    let since = Instant::now();
    while starts(&file) < 3 {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "not restarted: {} starts",
            starts(&file)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(server.summary().down.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_over_the_message_cap_puts_the_server_down_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("starts");
    let decl = stdio_decl("huge-list", &file, "");
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(!server.start().await, "up with a list it could not read");
    let down = server.summary().down.expect("down");
    assert!(down.contains("`tools/list` answer has"), "{down}");
    assert!(
        down.contains(&format!("more than the {MESSAGE_CAP} bytes")),
        "{down}"
    );
    assert!(server.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_over_a_cap_are_output_too_large_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let decl = stdio_decl(
        "huge-result",
        &dir.path().join("starts"),
        "max_result_kb = 1\nexec = { timeout_ms = 30000, retries = 0 }",
    );
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    assert!(server.attach(&registry).is_empty());

    // Over the transport's cap on one message: an error of its own, at
    // once, not a timeout.
    let big = call(&registry, "raw_big", json!({"bytes": 18 << 20}))
        .await
        .expect_err("too large");
    assert_eq!(big.kind, ToolErrorKind::OutputTooLarge, "{big}");
    assert!(big.message.contains(&MESSAGE_CAP.to_string()), "{big}");
    assert!(big.message.contains("max_result_kb"), "{big}");

    // Over `max_result_kb`, within the transport's cap.
    let over = call(&registry, "raw_big", json!({"bytes": 4096}))
        .await
        .expect_err("too large");
    assert_eq!(over.kind, ToolErrorKind::OutputTooLarge, "{over}");
    assert!(over.message.contains("1024 allowed"), "{over}");

    // The connection is still good.
    let small = call(&registry, "raw_big", json!({"bytes": 10})).await;
    assert_eq!(small, Ok(json!("xxxxxxxxxx")));
    assert_eq!(starts(&dir.path().join("starts")), 1, "never restarted");
}

#[track_caller]
fn assert_redacted(text: &str) {
    assert!(!text.contains("s3cret"), "the secret came back: {text}");
    assert!(!text.contains("s3cret%2F"), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
}

/// Each way the server quotes the secret comes back redacted: a result
/// (raw and JSON-escaped), an `isError` result, a JSON-RPC error, a tool
/// description.
async fn secrets_stay_out(server: &McpServer) {
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    assert!(server.attach(&registry).is_empty());
    let echo = call(&registry, "raw_echo", json!({})).await.expect("echo");
    assert_redacted(echo.as_str().expect("text"));
    let fail = call(&registry, "raw_fail", json!({}))
        .await
        .expect_err("fails");
    assert_eq!(fail.kind, ToolErrorKind::ToolFailed);
    assert_redacted(&fail.message);
    let refuse = call(&registry, "raw_refuse", json!({}))
        .await
        .expect_err("refused");
    assert_redacted(&refuse.message);
    let tools = server.tools();
    let described = tools
        .iter()
        .find(|t| t.remote_name() == "echo")
        .expect("echo listed");
    assert_redacted(&described.spec().description);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_quoting_its_token_gets_it_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let decl = stdio_decl(
        "echo-secrets",
        &dir.path().join("starts"),
        "env = [\"MCP_API_TOKEN\"]",
    );
    let config = HostConfig::default().env("MCP_API_TOKEN", TOKEN);
    let server = McpServer::new(decl, &config.mcp_rules()).unwrap();
    secrets_stay_out(&server).await;
}

/// raw_server.py over HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    async fn start(mode: &str, dir: &Path) -> Self {
        let port_file: PathBuf = dir.join("port");
        let child = Command::new("python3")
            .args([raw_server().as_str(), "http", mode])
            .arg(&port_file)
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let since = Instant::now();
        let port = loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                break port;
            }
            assert!(since.elapsed() < Duration::from_secs(20), "no port");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        Self {
            child,
            url: format!("http://127.0.0.1:{}/mcp", port.trim()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_echoing_its_authorization_header_gets_it_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let peer = HttpServer::start("echo-secrets", dir.path()).await;
    let text = format!(
        "name = \"raw\"\nurl = \"{}\"\nheaders.Authorization = {{ env = \"MCP_HTTP_TOKEN\", prefix = \"Bearer \" }}\n",
        peer.url
    );
    let decl: McpDecl = toml::from_str(&text).unwrap();
    let config = HostConfig::default().env("MCP_HTTP_TOKEN", TOKEN);
    let server = McpServer::new(decl, &config.mcp_rules()).unwrap();
    secrets_stay_out(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_result_over_the_message_cap_is_output_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let peer = HttpServer::start("huge-result", dir.path()).await;
    let text = format!(
        "name = \"raw\"\nurl = \"{}\"\nexec = {{ timeout_ms = 30000, retries = 0 }}\n",
        peer.url
    );
    let decl: McpDecl = toml::from_str(&text).unwrap();
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    assert!(server.attach(&registry).is_empty());
    let big = call(&registry, "raw_big", json!({"bytes": 18 << 20}))
        .await
        .expect_err("too large");
    assert_eq!(big.kind, ToolErrorKind::OutputTooLarge, "{big}");
    assert!(big.message.contains(&MESSAGE_CAP.to_string()), "{big}");
    let small = call(&registry, "raw_big", json!({"bytes": 3})).await;
    assert_eq!(small, Ok(json!("xxx")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_tool_over_a_budget_is_skipped_by_the_rule_a_plugin_meets() {
    let dir = tempfile::tempdir().unwrap();
    let decl = stdio_decl("over-budget", &dir.path().join("starts"), "");
    let mut config = HostConfig::default();
    config.plugins.max_description_bytes = 100;
    config.plugins.max_schema_bytes = 2048;
    let server = McpServer::new(decl, &config.mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    // Skipped while listed, as a plugin's would fail to load: none reaches
    // the registry to be refused there.
    let refused = server.attach(&registry);
    assert!(refused.is_empty(), "{refused:?}");
    let mut names: Vec<String> = registry
        .snapshot()
        .tools()
        .map(|t| t.spec().name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["raw_fine"]);
}
