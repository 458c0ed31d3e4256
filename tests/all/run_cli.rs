//! `toolhost run` end to end, as a user runs it: the binary, the bundled
//! WASM plugins, and a loopback server speaking each provider's documented
//! wire format (which rejects what the real provider rejects), streaming
//! and not.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolhost_tests::plugins::{plugin_subset, toolhost_bin, workspace_root};
use toolhost_tests::providers::{
    Dialect, FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, FakeServer, Turn,
};

/// `toolhost run` with `args`, off the runtime (the fake serves on it).
async fn toolhost_run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(toolhost_bin())
            .args(&args)
            .env(
                "TOOLHOST_CACHE_DIR",
                workspace_root().join("target").join("test-cache"),
            )
            .env("TOOLHOST_TEST_KEY", "test-key")
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("TOOLHOST_CONFIG")
            .output()
            .expect("toolhost starts")
    })
    .await
    .expect("the command ran")
}

/// Ask for 6*7 through `calc_eval`: the fake's first turn calls the tool,
/// the second answers. Returns the run's `--json` summary and the fake.
async fn ask_calc<D: Dialect>(
    fake: FakeServer<D>,
    provider: &str,
    stream: bool,
    plugins: &Path,
    extra: &[&str],
) -> (Value, FakeServer<D>) {
    fake.push(Turn::calls(vec![FakeCall::new(
        "calc_eval",
        json!({"expression": "6*7"}),
    )]));
    fake.push(Turn::text("6*7 is 42."));
    let mut args: Vec<String> = [
        "run",
        "What is 6*7? Use the calculator.",
        "--provider",
        provider,
        "--base-url",
        &fake.url(),
        "--api-key-env",
        "TOOLHOST_TEST_KEY",
        "--model",
        "test-model",
        "--plugins",
        plugins.to_str().unwrap(),
        "--json",
    ]
    .map(str::to_owned)
    .into();
    if stream {
        args.push("--stream".into());
    }
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let out = toolhost_run(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {stdout}\n{stderr}"));
    assert_eq!(fake.pending(), 0, "both turns were asked for: {stderr}");
    (summary, fake)
}

fn assert_answered(summary: &Value) {
    assert_eq!(summary["final"], json!("6*7 is 42."), "{summary}");
    assert_eq!(summary["tool_calls"], json!(1), "{summary}");
    assert_eq!(summary["iterations"], json!(2), "{summary}");
    let call = &summary["calls"][0];
    assert_eq!(call["name"], json!("calc_eval"), "{summary}");
    assert_eq!(call["status"], json!("succeeded"), "{summary}");
    assert_eq!(call["attempts"], json!(1), "{summary}");
}

#[tokio::test]
async fn run_tool_timeout_and_retries_flags_show_as_each_call_s_options_and_log_calls_writes_lines()
{
    let plugins = plugin_subset(&["calc"]);
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("calls.jsonl");
    let (summary, _fake) = ask_calc(
        FakeOpenAi::start().await,
        "openai",
        false,
        plugins.path(),
        &[
            "--tool-timeout",
            "1500ms",
            "--tool-retries",
            "2",
            "--log-calls",
            log.to_str().unwrap(),
        ],
    )
    .await;
    assert_answered(&summary);
    let options = &summary["calls"][0]["options"];
    assert_eq!(options["timeout_ms"], json!(1500), "{summary}");
    assert_eq!(options["retries"], json!(2), "{summary}");
    assert_eq!(options["backoff"], json!("exponential"), "{summary}");
    assert_eq!(
        options["retry_on"],
        json!(["timeout", "busy", "unavailable"]),
        "{summary}"
    );
    let text = std::fs::read_to_string(&log).expect("the log was written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["tool"], json!("calc_eval"), "{text}");
    assert_eq!(lines[0]["status"], json!("ok"), "{text}");
    assert_eq!(lines[0]["attempts"], json!(1), "{text}");
    assert!(lines[0]["session"].is_string(), "{text}");
    assert!(!text.contains("6*7"), "no input without --log-io: {text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "readable by the owner only: {mode:o}");
    }

    let (plain, _fake) = ask_calc(
        FakeOpenAi::start().await,
        "openai",
        false,
        plugins.path(),
        &["--log-calls", log.to_str().unwrap(), "--log-io"],
    )
    .await;
    assert_eq!(
        plain["calls"][0]["options"]["timeout_ms"],
        Value::Null,
        "{plain}"
    );
    assert_eq!(plain["calls"][0]["options"]["retries"], json!(0), "{plain}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2, "appended: {text}");
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(last["input"].as_str().unwrap().contains("6*7"), "{last}");
    assert!(last["output"].as_str().unwrap().contains("42"), "{last}");
}

#[tokio::test]
async fn run_answers_through_a_real_plugin_over_openai_chat_completions() {
    let plugins = plugin_subset(&["calc"]);
    for stream in [false, true] {
        let (summary, fake) = ask_calc(
            FakeOpenAi::start().await,
            "openai",
            stream,
            plugins.path(),
            &[],
        )
        .await;
        assert_answered(&summary);
        let second = &fake.bodies()[1];
        let messages = second["messages"].as_array().unwrap();
        let call_id = &messages[messages.len() - 2]["tool_calls"][0]["id"];
        let result = &messages[messages.len() - 1];
        assert_eq!(result["role"], json!("tool"), "{second}");
        assert_eq!(&result["tool_call_id"], call_id);
        assert!(
            result["content"].as_str().unwrap().contains("42"),
            "{result}"
        );
        assert_eq!(second["stream"].as_bool().unwrap_or(false), stream);
        let auth = fake.requests()[0]
            .header("authorization")
            .map(str::to_owned);
        assert_eq!(auth.as_deref(), Some("Bearer test-key"));
    }
}

#[tokio::test]
async fn run_answers_through_a_real_plugin_over_anthropic_messages() {
    let plugins = plugin_subset(&["calc"]);
    for stream in [false, true] {
        let (summary, fake) = ask_calc(
            FakeAnthropic::start().await,
            "anthropic",
            stream,
            plugins.path(),
            &[],
        )
        .await;
        assert_answered(&summary);
        let second = &fake.bodies()[1];
        let last = second["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["role"], json!("user"), "{second}");
        let block = &last["content"][0];
        assert_eq!(block["type"], json!("tool_result"), "{second}");
        assert!(block["content"].to_string().contains("42"), "{block}");
        assert_eq!(second["stream"].as_bool().unwrap_or(false), stream);
    }
}

#[tokio::test]
async fn run_answers_through_a_real_plugin_over_gemini_generate_content() {
    let plugins = plugin_subset(&["calc"]);
    for stream in [false, true] {
        let (summary, fake) = ask_calc(
            FakeGemini::start().await,
            "gemini",
            stream,
            plugins.path(),
            &[],
        )
        .await;
        assert_answered(&summary);
        let requests = fake.requests();
        let endpoint = if stream {
            ":streamGenerateContent"
        } else {
            ":generateContent"
        };
        assert!(requests[1].path.contains(endpoint), "{}", requests[1].path);
        let contents = requests[1].body["contents"].as_array().unwrap();
        let response = &contents.last().unwrap()["parts"][0]["functionResponse"];
        assert_eq!(response["name"], json!("calc_eval"), "{contents:?}");
        assert!(
            response["response"].to_string().contains("42"),
            "{response}"
        );
    }
}
