//! The programs in `examples/` run, and do what their comments say.

use std::process::Command;

use toolhost_tests::plugins::{example_bin, plugin_dir};

#[test]
fn embed_example_calls_tools_and_handles_each_error_kind() {
    let out = Command::new(example_bin("embed"))
        .arg(plugin_dir())
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains(r#"calc_eval({"expression":"2 * (3 + 4) ^ 2"}) = {"value":98.0}"#),
        "{stdout}"
    );
    assert!(
        stdout.contains("calc_eval: fix the input: at column 3: division by zero"),
        "{stdout}"
    );
    assert!(
        stdout.contains("calc_eval: fix the input: the input does not match"),
        "{stdout}"
    );
    assert!(stdout.contains("no_such_tool: no such tool"), "{stdout}");
    // files asks for a directory grant; the example's deny-all host refuses it.
    assert!(
        stdout.contains("skipped:") && stdout.contains("files.toml"),
        "{stdout}"
    );
}

#[test]
fn agent_example_runs_the_capped_loop_over_the_plugins() {
    let out = Command::new(example_bin("agent"))
        .arg(plugin_dir())
        .env_remove("TOOLHOST_PROVIDER")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    // The recording asks for four calls at once; the cap of two runs two
    // and declines two, which the model asks for again in the next round.
    assert!(
        // 42.195 * 3 as the tool computes it in f64, passed on exactly.
        stdout.contains(r#"tool calc_eval -> {"value":126.58500000000001}"#),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("Declined: not executed").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"tool text_transform -> "three-marathons-in-a-week""#),
        "{stdout}"
    );
    assert!(
        stdout.contains("answer after 3 round(s) and 4 tool call(s): Three marathons"),
        "{stdout}"
    );
}

/// A REST endpoint on loopback for the toolbox example: `GET
/// /weather/{city}` answers JSON naming the city.
async fn weather_server() -> String {
    let app = axum::Router::new().route(
        "/weather/{city}",
        axum::routing::get(
            |axum::extract::Path(city): axum::extract::Path<String>| async move {
                axum::Json(serde_json::json!({"city": city, "sky": "clear", "celsius": 21}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolbox_example_calls_a_plugin_a_rest_endpoint_an_mcp_server_and_a_rust_function() {
    let base = weather_server().await;
    // The example starts `python3 -m mcp_server_time`: the venv's.
    let venv_bin = toolhost_tests::mcp::venv_python()
        .parent()
        .expect("the venv's bin")
        .to_owned();
    let path = std::env::join_paths(std::iter::once(venv_bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("a PATH");
    let out = tokio::process::Command::new(example_bin("toolbox"))
        .arg(plugin_dir())
        .arg(&base)
        .env("PATH", path)
        .output()
        .await
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for tool in [
        "calc_eval",
        "weather",
        "time_get_current_time",
        "word_count",
    ] {
        assert!(
            stdout.contains(&format!(" {tool},")) || stdout.contains(&format!(" {tool}\n")),
            "{tool} listed: {stdout}"
        );
    }
    assert!(
        stdout.contains(r#"calc_eval -> {"value":42.0}"#),
        "{stdout}"
    );
    assert!(stdout.contains(r#""city":"Lisbon""#), "{stdout}");
    assert!(
        stdout.contains("time_get_current_time -> ") && stdout.contains("UTC"),
        "{stdout}"
    );
    assert!(stdout.contains("word_count -> 4"), "{stdout}");
}

#[test]
fn serve_mcp_example_is_listed_and_called_by_the_official_python_sdk_client() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let mut child = Command::new(example_bin("serve_mcp"))
        .arg(plugin_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut line)
        .expect("it says where it serves");
    let url = line
        .split_whitespace()
        .last()
        .filter(|u| u.starts_with("http://127.0.0.1:") && u.ends_with("/mcp"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    let steps = serde_json::json!([
        {"op": "list"},
        {"op": "call", "tool": "greet", "args": {"name": "Ada"}},
        {"op": "call", "tool": "calc_eval", "args": {"expression": "6*7"}},
    ]);
    let out = Command::new(toolhost_tests::mcp::venv_python())
        .arg(
            toolhost_tests::plugins::workspace_root()
                .join("tests")
                .join("mcp")
                .join("client.py"),
        )
        .args(["http", &url, &steps.to_string()])
        .output()
        .expect("python starts");
    // Enter stops the example; it ends on its own.
    let _ = child.stdin.take().expect("its stdin").write_all(b"\n");
    let status = child.wait().expect("the example ends");
    assert!(out.status.success(), "the MCP client failed: {out:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the client's report is JSON");
    let results = &report["results"];
    let names: Vec<&str> = results[0]["tools"]
        .as_array()
        .expect("tools/list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"greet") && names.contains(&"calc_eval"),
        "{names:?}"
    );
    assert_eq!(results[1]["is_error"], false, "{report}");
    assert!(
        results[1]["text"].to_string().contains("Hello, Ada!"),
        "{report}"
    );
    assert!(results[2]["structured"]["value"] == 42.0, "{report}");
    assert!(status.success(), "the example stopped cleanly: {status:?}");
}
