//! `toolhost run`'s generation flags, and `"final"` holding only this
//! run's answer (never the resumed history's).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

use super::{run_against, toolhost_run};

/// A loopback base URL that nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// A `--messages` file whose last assistant message is an old answer.
fn old_answer(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("history.json");
    let history = json!([
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "OLD ANSWER: 2"},
    ]);
    std::fs::write(&file, history.to_string()).expect("written");
    file
}

fn summary(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test]
async fn stale_final_messages_with_an_unreachable_provider_print_no_old_answer() {
    let work = tempfile::tempdir().expect("tempdir");
    let history = old_answer(work.path());
    let empty = tempfile::tempdir().expect("tempdir");
    let transcript = work.path().join("t.json");
    let args: Vec<String> = [
        "run",
        "And 2+2?",
        "--provider",
        "openai",
        "--base-url",
        &closed_port(),
        "--api-key-env",
        "TOOLHOST_TEST_KEY",
        "--plugins",
        empty.path().to_str().expect("utf-8"),
        "--messages",
        history.to_str().expect("utf-8"),
        "--transcript",
        transcript.to_str().expect("utf-8"),
        "--json",
    ]
    .map(str::to_owned)
    .into();
    let out = toolhost_run(args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary = summary(&out);
    assert_eq!(summary["final"], Value::Null, "{summary}");
    assert_eq!(summary["stop_reason"], json!("error"));
    assert!(
        summary["error"]
            .as_str()
            .is_some_and(|e| e.contains("could not reach")),
        "{summary}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("OLD ANSWER"));
    assert!(stderr.contains("no answer"), "{stderr}");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&transcript).expect("written")).expect("JSON");
    assert_eq!(saved["final"], Value::Null, "{saved}");
    assert_eq!(saved["messages"].as_array().map(Vec::len), Some(3));

    // Without --json, nothing is printed on stdout either.
    let args: Vec<String> = [
        "run",
        "And 2+2?",
        "--provider",
        "openai",
        "--base-url",
        &closed_port(),
        "--plugins",
        empty.path().to_str().expect("utf-8"),
        "--messages",
        history.to_str().expect("utf-8"),
    ]
    .map(str::to_owned)
    .into();
    let out = toolhost_run(args).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
}

#[tokio::test]
async fn stale_final_resume_with_over_limit_fail_prints_no_old_answer() {
    let plugins = plugin_subset(&["calc"]);
    let plugins = plugins.path().to_str().expect("utf-8");
    let work = tempfile::tempdir().expect("tempdir");
    let saved = work.path().join("first.json");
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("OLD ANSWER: 2"));
    let flags = [
        "--plugins",
        plugins,
        "--transcript",
        saved.to_str().expect("utf-8"),
    ];
    let out = run_against(&fake, "What is 1+1?", &flags).await;
    assert_eq!(out.status.code(), Some(0));

    let calc = |e: &str| FakeCall::new("calc_eval", json!({"expression": e}));
    fake.push(Turn::calls(vec![calc("2+2"), calc("3+3")]).with_text("Two at once."));
    let flags = [
        "--plugins",
        plugins,
        "--resume",
        saved.to_str().expect("utf-8"),
        "--max-calls-per-response",
        "1",
        "--over-limit",
        "fail",
        "--json",
    ];
    let out = run_against(&fake, "And 2+2?", &flags).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary = summary(&out);
    assert_eq!(summary["final"], Value::Null, "{summary}");
    assert_eq!(summary["stop_reason"], json!("over_limit"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("OLD ANSWER"));
}

#[tokio::test]
async fn generation_flags_reach_the_request_body() {
    let plugins = plugin_subset(&["calc"]);
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![FakeCall::new(
        "calc_eval",
        json!({"expression": "6*7"}),
    )]));
    fake.push(Turn::text("42."));
    let flags = [
        "--plugins",
        plugins.path().to_str().expect("utf-8"),
        "--temperature",
        "0",
        "--top-p",
        "0.9",
        "--max-tokens",
        "300",
        "--tool-choice",
        "required",
        "--seed",
        "-7",
        "--stop",
        "END",
        "--stop",
        "STOP",
        "--param",
        "reasoning_effort=\"low\"",
        "--max-iterations",
        "1",
        "--on-max-iterations",
        "final-answer",
        "--json",
    ];
    let out = run_against(&fake, "What is 6*7?", &flags).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(summary(&out)["final"], json!("42."));
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 2);
    for (body, choice) in bodies.iter().zip([json!("required"), json!("none")]) {
        assert_eq!(body["temperature"], json!(0.0), "{body}");
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["max_tokens"], json!(300));
        assert_eq!(body["seed"], json!(-7));
        assert_eq!(body["stop"], json!(["END", "STOP"]));
        assert_eq!(body["reasoning_effort"], json!("low"));
        assert_eq!(
            body["tool_choice"], choice,
            "the final answer forbids tools"
        );
    }
}

#[tokio::test]
async fn generation_flags_a_provider_cannot_take_fail_before_sending() {
    let fake = FakeOpenAi::start().await;
    let empty = tempfile::tempdir().expect("tempdir");
    let plugins = empty.path().to_str().expect("utf-8");
    let out = run_against(&fake, "hi", &["--plugins", plugins, "--temperature", "3"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("temperature"), "{stderr}");
    assert!(stderr.contains("0 to 2"), "{stderr}");
    let out = run_against(
        &fake,
        "hi",
        &["--plugins", plugins, "--tool-choice", "nope"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tool_choice"), "{stderr}");
    assert!(fake.bodies().is_empty(), "nothing was sent");
    for bad in [
        ["--param", "reasoning_effort=low"],
        ["--param", "no-equals-sign"],
    ] {
        let out = run_against(&fake, "hi", &bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    let twice = ["--param", "a=1", "--param", "a=2", "--plugins", plugins];
    let out = run_against(&fake, "hi", &twice).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(fake.bodies().is_empty());
}
