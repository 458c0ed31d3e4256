//! `notifications/tools/list_changed` follows the registry itself,
//! whatever changed it: a program serving its own registry with the
//! library's [`ToolServer`] and changing it, and `toolhost serve
//! --no-watch` re-exporting an `[[mcp]]` server whose tool list changes.
//! The client is the official MCP Python SDK (tests/mcp/client.py).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolhost::mcp::server::{ServerOptions, ToolServer};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::mcp::{sdk_client, stdio_command, venv_python};
use toolhost_tests::plugins::workspace_root;

fn names(listed: &Value) -> Vec<String> {
    listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list result: {listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A tool answering `{"said": NAME}` that tells `called` each time it runs.
fn announcing(name: &'static str, called: &mpsc::UnboundedSender<&'static str>) -> NativeTool {
    let called = called.clone();
    NativeTool::new(
        name,
        "Answers with its name.",
        json!({"type": "object"}),
        move |_| {
            let _ = called.send(name);
            async move { Ok(json!({"said": name})) }
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_a_program_registers_and_removes_reach_a_connected_client_as_list_changed() {
    let (called, mut calls) = mpsc::unbounded_channel();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(announcing("hello", &called)).unwrap();
    let server = ToolServer::new(Arc::clone(&registry), ServerOptions::new());
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .expect("serves on loopback");
    let steps = json!([
        {"op": "list"},
        {"op": "call", "tool": "hello", "args": {}},
        // The program registers `goodbye` once `hello` was called.
        {"op": "wait_list_changed", "timeout": 60},
        {"op": "list"},
        {"op": "call", "tool": "goodbye", "args": {}},
        // The program removes `hello` once `goodbye` was called.
        {"op": "wait_list_changed", "timeout": 60},
        {"op": "list"},
    ]);
    let url = http.url();
    let client = tokio::task::spawn_blocking(move || sdk_client("http", &url, &steps));
    assert_eq!(calls.recv().await, Some("hello"));
    registry.register(announcing("goodbye", &called)).unwrap();
    assert_eq!(calls.recv().await, Some("goodbye"));
    registry.unregister("hello").expect("hello is registered");
    let report = client.await.unwrap();
    http.shutdown().await;
    let results = report["results"].as_array().expect("results");
    assert_eq!(names(&results[0]), ["hello"], "{report}");
    assert_eq!(results[1]["structured"]["said"], "hello", "{report}");
    assert_eq!(results[2]["list_changed"], true, "registering was not told");
    assert_eq!(names(&results[3]), ["goodbye", "hello"], "{report}");
    assert_eq!(results[4]["structured"]["said"], "goodbye", "{report}");
    assert_eq!(results[5]["list_changed"], true, "removing was not told");
    assert_eq!(names(&results[6]), ["goodbye"], "{report}");
}

/// A host config with the growing peer (tests/mcp/peers/growing.py) as
/// `[[mcp]]` server `growing`, in `dir`, with an empty plugin directory.
fn growing_setup(dir: &Path) {
    let peer = workspace_root()
        .join("tests")
        .join("mcp")
        .join("peers")
        .join("growing.py");
    let table = format!(
        "[[mcp]]\nname = \"growing\"\ncommand = {}\nargs = [{}]\n",
        json!(venv_python().display().to_string()),
        json!(peer.display().to_string()),
    );
    std::fs::write(dir.join("toolhost.toml"), table).unwrap();
    std::fs::create_dir(dir.join("plugins")).unwrap();
}

#[test]
fn an_mcp_server_s_new_tool_reaches_clients_of_serve_without_the_watcher() {
    let dir = tempfile::tempdir().unwrap();
    growing_setup(dir.path());
    let config = dir.path().join("toolhost.toml").display().to_string();
    let command = stdio_command(
        &dir.path().join("plugins"),
        &["--no-watch", "--config", &config],
    );
    let steps = json!([
        {"op": "list"},
        {"op": "call", "tool": "growing_grow", "args": {}},
        {"op": "wait_list_changed", "timeout": 60},
        {"op": "list"},
        {"op": "call", "tool": "growing_grown", "args": {}},
    ]);
    let report = sdk_client("stdio", &command, &steps);
    let results = report["results"].as_array().expect("results");
    assert_eq!(names(&results[0]), ["growing_grow"], "{report}");
    assert_eq!(results[1]["is_error"], false, "{report}");
    assert_eq!(
        results[2]["list_changed"], true,
        "the MCP server's new tool was not told: {report}"
    );
    assert_eq!(
        names(&results[3]),
        ["growing_grow", "growing_grown"],
        "{report}"
    );
    assert_eq!(results[4]["is_error"], false, "{report}");
    assert!(results[4]["text"].to_string().contains("grown"), "{report}");
}
