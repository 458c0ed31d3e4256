//! MCP servers as tool sources (`[[mcp]]` in the host config), against real
//! servers: PyPI `mcp-server-time` over stdio, and npm
//! `@modelcontextprotocol/server-everything` over stdio and streamable
//! HTTP. Both are pinned and installed by `.ci/install-guest-toolchains.sh
//! mcp` (the venv under target/toolchains, and tests/mcp/peers).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::mcp::{McpDecl, McpServer};
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};
use toolhost_tests::mcp::{sdk_client, stdio_command, venv_python};
use toolhost_tests::plugins::{toolhost_bin, toolhost_run, workspace_root};

fn peers() -> PathBuf {
    workspace_root().join("tests").join("mcp").join("peers")
}

/// server-everything's entry point.
fn everything() -> PathBuf {
    let js = peers()
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join("server-everything")
        .join("dist")
        .join("index.js");
    assert!(
        js.is_file(),
        "no {}: run .ci/install-guest-toolchains.sh mcp to install the MCP peers",
        js.display()
    );
    js
}

/// The `[[mcp]]` table of the time server.
fn time_server() -> String {
    format!(
        "[[mcp]]\nname = \"time\"\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
        toml_string(&venv_python())
    )
}

/// The `[[mcp]]` table of server-everything over stdio.
fn everything_stdio() -> String {
    format!(
        "[[mcp]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
        toml_string(&everything())
    )
}

fn toml_string(path: &Path) -> String {
    json!(path.display().to_string()).to_string()
}

/// A host config file holding `tables`, in a directory that also serves as
/// the (empty) plugin directory.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(tables: &[String]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), tables.join("\n")).unwrap();
        Self { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("toolhost.toml")
    }

    fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    /// `--plugins DIR --config FILE --no-cache`.
    fn flags(&self) -> Vec<String> {
        [
            "--plugins".to_owned(),
            self.plugins().display().to_string(),
            "--config".to_owned(),
            self.config().display().to_string(),
            "--no-cache".to_owned(),
        ]
        .into()
    }

    /// `toolhost ARGS` with [`flags`](Self::flags).
    fn toolhost(&self, args: &[&str]) -> Output {
        Command::new(toolhost_bin())
            .args(args)
            .args(self.flags())
            .env_remove("TOOLHOST_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("toolhost runs")
    }

    /// `toolhost serve` over stdio on this setup, for an MCP client.
    fn serve_command(&self) -> String {
        stdio_command(
            &self.plugins(),
            &["--config", &self.config().display().to_string()],
        )
    }

    /// `toolhost call TOOL --input INPUT --json`: its JSON answer.
    fn call(&self, tool: &str, input: &Value) -> Value {
        let out = self.toolhost(&["call", tool, "--input", &input.to_string(), "--json"]);
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "call stdout is not JSON ({e}): {text}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

#[test]
fn list_shows_the_servers_tools_with_their_prefix() {
    let setup = Setup::new(&[time_server(), everything_stdio()]);
    let out = setup.toolhost(&["list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "time_get_current_time",
        "time_convert_time",
        "everything_echo",
        "everything_get-sum",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    let time = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "time_get_current_time")
        .unwrap();
    assert_eq!(time["source"]["kind"], "mcp", "{time}");
    assert_eq!(time["source"]["server"], "time", "{time}");
    assert_eq!(time["input_schema"]["type"], "object", "{time}");

    let out = setup.toolhost(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mcp: time (stdio "), "{text}");
    assert!(text.contains("- time_get_current_time: "), "{text}");
}

#[test]
fn call_returns_the_time_server_s_answer_and_bad_input_never_reaches_it() {
    let setup = Setup::new(&[time_server()]);
    let answer = setup.call(
        "time_get_current_time",
        &json!({"timezone": "Europe/Warsaw"}),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    // Its structuredContent is the output.
    let output = &answer["output"];
    assert_eq!(output["timezone"], "Europe/Warsaw", "{output}");
    assert!(output["datetime"].is_string(), "{output}");

    // The registry checks the schema first: `timezone` must be a string.
    let refused = setup.call("time_get_current_time", &json!({"timezone": 5}));
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["error"]["kind"], "invalid_input", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(!message.contains("MCP server"), "{message}");

    // The server's own refusal (an unknown zone) is a tool failure.
    let failed = setup.call(
        "time_get_current_time",
        &json!({"timezone": "Mars/Olympus"}),
    );
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["error"]["kind"], "tool_failed", "{failed}");
}

#[test]
fn server_everything_over_stdio_echoes_and_adds() {
    let setup = Setup::new(&[everything_stdio()]);
    let echo = setup.call("everything_echo", &json!({"message": "hello there"}));
    assert_eq!(echo["ok"], true, "{echo}");
    assert!(
        echo["output"].as_str().unwrap().contains("hello there"),
        "{echo}"
    );
    let sum = setup.call("everything_get-sum", &json!({"a": 2, "b": 40}));
    assert_eq!(sum["ok"], true, "{sum}");
    assert!(sum["output"].to_string().contains("42"), "{sum}");
    // structuredContent is the output, as JSON.
    let weather = setup.call(
        "everything_get-structured-content",
        &json!({"location": "Chicago"}),
    );
    assert_eq!(weather["ok"], true, "{weather}");
    assert!(weather["output"]["temperature"].is_number(), "{weather}");
    // The schema's enum is checked before the server is asked.
    let refused = setup.call(
        "everything_get-structured-content",
        &json!({"location": "Atlantis"}),
    );
    assert_eq!(refused["error"]["kind"], "invalid_input", "{refused}");
}

/// server-everything over streamable HTTP on 127.0.0.1, killed when dropped.
struct HttpEverything {
    child: Child,
    port: u16,
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpEverything {
    fn start() -> Self {
        let mut child = Command::new("node")
            .arg("--import")
            .arg(peers().join("loopback.mjs"))
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("server-everything said its port before exiting")
                .unwrap();
            if let Some(port) = line.strip_prefix("toolhost-test-port ") {
                break port.trim().parse().unwrap();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, port }
    }

    fn table(&self) -> String {
        format!(
            "[[mcp]]\nname = \"web\"\nurl = \"http://127.0.0.1:{}/mcp\"\nheaders.X-Test = {{ value = \"yes\" }}\n",
            self.port
        )
    }
}

#[test]
fn server_everything_over_streamable_http_echoes_and_adds() {
    let server = HttpEverything::start();
    let setup = Setup::new(&[server.table()]);
    let echo = setup.call("web_echo", &json!({"message": "over http"}));
    assert_eq!(echo["ok"], true, "{echo}");
    assert!(
        echo["output"].as_str().unwrap().contains("over http"),
        "{echo}"
    );
    let sum = setup.call("web_get-sum", &json!({"a": 1.5, "b": 1}));
    assert_eq!(sum["ok"], true, "{sum}");
    assert!(sum["output"].to_string().contains("2.5"), "{sum}");
}

#[test]
fn run_with_a_replayed_model_calls_a_server_s_tool() {
    let setup = Setup::new(&[time_server()]);
    let recording = setup.dir.path().join("recording.json");
    std::fs::write(
        &recording,
        json!({"turns": [
            {"tool_calls": [{"id": "c1", "name": "time_get_current_time",
                             "arguments": {"timezone": "Asia/Tokyo"}}]},
            {"content": "It is late in Tokyo."}
        ]})
        .to_string(),
    )
    .unwrap();
    let transcript = setup.dir.path().join("transcript.json");
    let out = setup.toolhost(&[
        "run",
        "What time is it in Tokyo?",
        "--provider",
        "replay",
        "--replay",
        recording.to_str().unwrap(),
        "--transcript",
        transcript.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    assert_eq!(saved["final"], "It is late in Tokyo.", "{saved}");
    let result = saved["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    assert_eq!(result["tool_call_id"], "c1", "{result}");
    assert!(result["is_error"] != true, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("Asia/Tokyo"), "{content}");
    assert!(content.contains("datetime"), "{content}");
}

#[test]
fn serve_re_exports_a_server_s_tool_to_an_mcp_client() {
    let setup = Setup::new(&[time_server()]);
    let steps = json!([
        {"op": "list"},
        {"op": "call", "tool": "time_get_current_time", "args": {"timezone": "UTC"}}
    ]);
    let report = sdk_client("stdio", &setup.serve_command(), &steps);
    let listed = &report["results"][0]["tools"];
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "time_get_current_time"),
        "{listed}"
    );
    let called = &report["results"][1];
    assert_eq!(called["is_error"], false, "{called}");
    assert!(called["text"].to_string().contains("UTC"), "{called}");
}

/// Call `tool` on `registry` until `done` accepts the answer, for at most
/// `within`; the last answer.
async fn call_until(
    registry: &ToolRegistry,
    tool: &str,
    input: &str,
    within: Duration,
    done: impl Fn(&Result<Value, toolhost::tools::ToolError>) -> bool,
) -> Result<Value, toolhost::tools::ToolError> {
    let start = Instant::now();
    loop {
        let answer = registry
            .call(tool, input, &CallContext::default())
            .await
            .output;
        if done(&answer) || start.elapsed() > within {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_answers_unavailable_and_comes_back() {
    let decl: McpDecl = toml::from_str(&time_server().replace("[[mcp]]\n", "")).unwrap();
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());
    let registry = Arc::new(ToolRegistry::new());
    assert!(server.attach(&registry).is_empty());
    let input = r#"{"timezone": "UTC"}"#;
    let first = registry
        .call("time_get_current_time", input, &CallContext::default())
        .await;
    assert!(first.output.is_ok(), "{first:?}");

    let pid = server.summary().pid.expect("a stdio server has a pid");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let down = call_until(
        &registry,
        "time_get_current_time",
        input,
        Duration::from_secs(10),
        |a| a.is_err(),
    )
    .await
    .expect_err("a dead server cannot answer");
    assert!(
        matches!(
            down.kind,
            ToolErrorKind::Unavailable | ToolErrorKind::ToolFailed
        ),
        "{down}"
    );
    assert!(down.message.contains("MCP server `time`"), "{down}");

    let back = call_until(
        &registry,
        "time_get_current_time",
        input,
        Duration::from_secs(20),
        Result::is_ok,
    )
    .await;
    assert!(back.is_ok(), "not back after restart: {back:?}");
    let new_pid = server.summary().pid.expect("restarted");
    assert_ne!(new_pid, pid);

    // Dropping the server and the registry kills the child.
    drop(registry);
    drop(server);
    let gone = Instant::now();
    while Path::new(&format!("/proc/{new_pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{new_pid}/stat"))
            .is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the child {new_pid} outlived its server"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The PNG signature, as tests/mcp/client.py shows an image's first bytes.
const PNG_HEAD: &str = "89504e470d0a1a0a";

/// Issue 37: an upstream server's image is a content part, not a note that
/// it was left out. Through `toolhost serve`, an MCP client gets the image
/// block itself.
#[test]
fn an_upstream_image_reaches_an_mcp_client_of_serve() {
    let setup = Setup::new(&[everything_stdio()]);
    let steps = json!([{"op": "call", "tool": "everything_get-tiny-image", "args": {}}]);
    let report = sdk_client("stdio", &setup.serve_command(), &steps);
    let result = &report["results"][0];
    assert_eq!(result["is_error"], false, "{report}");
    let blocks = result["blocks"].as_array().expect("blocks");
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block: {report}"));
    assert_eq!(image["mimeType"], "image/png", "{image}");
    assert_eq!(image["head"], PNG_HEAD, "{image}");
    // The text around it comes along, in order.
    assert_eq!(blocks.first().map(|b| &b["type"]), Some(&json!("text")));
}

/// Through `toolhost run`, the model gets the upstream's image in the tool
/// result, in its provider's wire format (the Responses API's
/// `input_image`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_image_reaches_the_model_through_run() {
    use toolhost_tests::providers::{FakeCall, FakeResponses, Turn};
    let setup = Setup::new(&[everything_stdio()]);
    let fake = FakeResponses::start().await;
    fake.push(Turn::calls(vec![FakeCall::new(
        "everything_get-tiny-image",
        json!({}),
    )]));
    fake.push(Turn::text("The MCP logo."));
    let mut args = fake.run_args("Show me the logo.");
    args.extend(setup.flags());
    let out = toolhost_run(args).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let sent = bodies[1].to_string();
    assert!(sent.contains("input_image"), "{sent}");
    // The image's own bytes (a PNG in base64 starts `iVBORw0KGgo`).
    assert!(sent.contains("image/png;base64,iVBORw0KGgo"), "{sent}");
}
