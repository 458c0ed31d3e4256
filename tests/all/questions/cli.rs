//! `toolhost run` and a tool's questions: on a terminal each field is
//! asked in turn (choices listed and picked by number, a wrong answer asked
//! again, `!d` declines); without a terminal the tool hears that no one can
//! be asked.

use std::path::Path;

use serde_json::{Value, json};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, toolhost_bin, workspace_root};
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

fn run_args(fake: &FakeOpenAi, plugins: &Path) -> Vec<String> {
    [
        "run",
        "Order something.",
        "--provider",
        "openai",
        "--base-url",
        &fake.url(),
        "--api-key-env",
        "TOOLHOST_TEST_KEY",
        "--model",
        "test-model",
        "--plugins",
        plugins.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec()
}

fn command(program: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env("TOOLHOST_TEST_KEY", "test-key")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG");
    command
}

/// A fake model that calls `hostile_ask` once, then answers "done".
async fn fake() -> FakeOpenAi {
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("hostile_ask", json!({})).with_id("call_ask"),
    ]));
    fake.push(Turn::text("done"));
    fake
}

/// The tool's answer list, from the result the model got.
fn answers(fake: &FakeOpenAi) -> Vec<Value> {
    let body = &fake.bodies()[1];
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    let out: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    out["answers"].as_array().cloned().unwrap()
}

async fn on_terminal(args: Vec<String>, typed: &[&str]) -> Value {
    let script = workspace_root().join("tests/all/questions/pty_answer.py");
    let typed = json!(typed).to_string();
    let bin = toolhost_bin().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        command(Path::new("python3"))
            .arg(script)
            .arg(typed)
            .arg(bin)
            .args(&args)
            .output()
    })
    .await
    .unwrap()
    .expect("python3 starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the helper's JSON")
}

#[tokio::test]
async fn on_a_terminal_each_field_is_asked_and_the_answer_reaches_the_tool() {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    let fake = fake().await;
    // Fields in the schema's order: count (11 is over its maximum: asked
    // again), gift (empty: its default), name, size (choice 3: L).
    let out = on_terminal(
        run_args(&fake, plugins.path()),
        &["11", "2", "", "Ada", "3"],
    )
    .await;
    let output = out["output"].as_str().unwrap();
    assert_eq!(out["exit"], 0, "{output}");
    assert_eq!(out["asked"], 5, "{output}");
    assert!(
        output.contains("the tool `hostile_ask` asks: Who is this order for?"),
        "{output}"
    );
    assert!(output.contains("3) L"), "the choices are listed: {output}");
    assert!(output.contains("that does not fit"), "{output}");
    assert_eq!(
        answers(&fake),
        [
            json!({"action": "accept", "content": {"name": "Ada", "size": "L", "count": 2, "gift": false}})
        ],
        "{output}"
    );
}

#[tokio::test]
async fn on_a_terminal_the_decline_key_declines_the_question() {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    let fake = fake().await;
    let out = on_terminal(run_args(&fake, plugins.path()), &["!d"]).await;
    let output = out["output"].as_str().unwrap();
    assert_eq!(out["exit"], 0, "{output}");
    assert_eq!(answers(&fake), [json!({"action": "decline"})], "{output}");
}

#[tokio::test]
async fn without_a_terminal_the_tool_hears_that_no_one_can_be_asked() {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    let fake = fake().await;
    let args = run_args(&fake, plugins.path());
    let out = tokio::task::spawn_blocking(move || {
        command(toolhost_bin())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await
    .unwrap()
    .expect("toolhost starts");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = answers(&fake);
    let error = answers[0]["error"].as_str().unwrap();
    assert!(error.starts_with("no one to ask"), "{error}");
}
