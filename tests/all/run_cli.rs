//! `toolhost run` end to end, as a user runs it: the binary, the bundled
//! WASM plugins, and a loopback server speaking each provider's documented
//! wire format (which rejects what the real provider rejects), streaming
//! and not.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolhost_tests::plugins::{plugin_subset, toolhost_run};
use toolhost_tests::providers::{
    Dialect, FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, FakeServer, Turn,
};

mod generation;
mod offers;
mod progress;
mod responses;
mod transcript;

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

/// `toolhost run PROMPT` against `fake` with `extra` flags; the output.
async fn run_against(fake: &FakeOpenAi, prompt: &str, extra: &[&str]) -> Output {
    let mut args: Vec<String> = [
        "run",
        prompt,
        "--provider",
        "openai",
        "--base-url",
        &fake.url(),
        "--api-key-env",
        "TOOLHOST_TEST_KEY",
        "--model",
        "test-model",
    ]
    .map(str::to_owned)
    .into();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    toolhost_run(args).await
}

fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each message of an OpenAI request as (role, content).
fn roles_and_text(body: &Value) -> Vec<(String, Value)> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].clone()))
        .collect()
}

#[tokio::test]
async fn resume_continues_a_saved_conversation_with_the_next_question() {
    let plugins = plugin_subset(&["calc"]);
    let work = tempfile::tempdir().unwrap();
    let saved = work.path().join("first.json");
    let resumed = work.path().join("second.json");
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![FakeCall::new(
        "calc_eval",
        json!({"expression": "6*7"}),
    )]));
    fake.push(Turn::text("6*7 is 42."));
    fake.push(Turn::text("Doubled, 84."));
    let plugins = plugins.path().to_str().unwrap();
    let flags = [
        "--plugins",
        plugins,
        "--transcript",
        saved.to_str().unwrap(),
    ];
    assert_ok(&run_against(&fake, "What is 6*7? Use the calculator.", &flags).await);
    let transcript: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    assert_eq!(transcript["format"], json!(2), "{transcript}");

    let flags = [
        "--plugins",
        plugins,
        "--resume",
        saved.to_str().unwrap(),
        "--transcript",
        resumed.to_str().unwrap(),
    ];
    let out = run_against(&fake, "And doubled?", &flags).await;
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Doubled, 84.");
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 3, "two requests, then one");
    let sent = roles_and_text(&bodies[2]);
    let roles: Vec<&str> = sent.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant", "user"],
        "{sent:?}"
    );
    assert_eq!(sent[0].1, json!("What is 6*7? Use the calculator."));
    assert_eq!(sent[3].1, json!("6*7 is 42."));
    assert_eq!(sent[4].1, json!("And doubled?"));
    // The earlier messages went out as the first run stored them.
    assert_eq!(bodies[2]["messages"][1], bodies[1]["messages"][1]);
    assert_eq!(bodies[2]["messages"][2], bodies[1]["messages"][2]);
    let second: Value = serde_json::from_slice(&std::fs::read(&resumed).unwrap()).unwrap();
    assert_eq!(second["messages"].as_array().unwrap().len(), 6, "{second}");
}

#[tokio::test]
async fn messages_from_a_file_are_sent_before_the_prompt() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("few-shot.json");
    let examples = json!([
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Colour of the sky?"},
        {"role": "assistant", "content": "Blue."},
    ]);
    std::fs::write(&file, examples.to_string()).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("Green."));
    let flags = [
        "--plugins",
        empty.path().to_str().unwrap(),
        "--messages",
        file.to_str().unwrap(),
    ];
    assert_ok(&run_against(&fake, "Colour of grass?", &flags).await);
    let sent = roles_and_text(&fake.bodies()[0]);
    assert_eq!(
        sent,
        [
            ("system".to_owned(), json!("Answer in one word.")),
            ("user".to_owned(), json!("Colour of the sky?")),
            ("assistant".to_owned(), json!("Blue.")),
            ("user".to_owned(), json!("Colour of grass?")),
        ]
    );
}

#[tokio::test]
async fn resume_and_messages_refuse_bad_files_with_exit_2() {
    let work = tempfile::tempdir().unwrap();
    let unanswered = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "calc_eval", "arguments": "{}"}]},
    ]);
    let cases: [(&str, &str, String, &str); 6] = [
        (
            "--resume",
            "broken.json",
            "{\"messages\": [".into(),
            "not valid JSON",
        ),
        (
            "--resume",
            "future.json",
            json!({"format": 99, "messages": [{"role": "user", "content": "hi"}]}).to_string(),
            "transcript format 99",
        ),
        (
            "--resume",
            "array.json",
            json!([{"role": "user", "content": "hi"}]).to_string(),
            "not a transcript",
        ),
        (
            "--resume",
            "unanswered.json",
            json!({"format": 1, "messages": unanswered}).to_string(),
            "has no tool result",
        ),
        (
            "--messages",
            "unanswered.json",
            unanswered.to_string(),
            "has no tool result",
        ),
        (
            "--messages",
            "wrong-role.json",
            json!([{"role": "narrator", "content": "hi"}]).to_string(),
            "expected a JSON array of messages",
        ),
    ];
    let fake = FakeOpenAi::start().await;
    for (flag, name, text, expected) in cases {
        let path = work.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = run_against(&fake, "next", &[flag, path.to_str().unwrap()]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {name}: {stderr}");
        assert!(stderr.contains(expected), "{flag} {name}: {stderr}");
        assert!(stderr.contains(name), "the file is named: {stderr}");
    }
    let missing = work.path().join("missing.json");
    let out = run_against(&fake, "next", &["--resume", missing.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the transcript file"));
    let path = work.path().join("array.json");
    let path = path.to_str().unwrap();
    let out = run_against(&fake, "next", &["--resume", path, "--messages", path]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "--resume and --messages conflict"
    );
    assert!(fake.bodies().is_empty(), "no request was sent");
}

/// `-q` leaves errors only on stderr (the answer still goes to stdout);
/// a streamed answer's line is ended before the next progress line and at
/// the end, also when text came before a tool call.
#[tokio::test]
async fn quiet_run_prints_no_progress_and_streamed_text_ends_its_lines() {
    let plugins = plugin_subset(&["calc"]);
    let dir = plugins.path().to_str().unwrap();
    let calc = || {
        Turn::calls(vec![FakeCall::new(
            "calc_eval",
            json!({"expression": "6*7"}),
        )])
        .with_text("Let me compute.")
    };
    for stream in [false, true] {
        let fake = FakeOpenAi::start().await;
        fake.push(calc());
        fake.push(Turn::text("6*7 is 42."));
        let mut flags = vec!["--plugins", dir, "-q"];
        if stream {
            flags.push("--stream");
        }
        let out = run_against(&fake, "What is 6*7?", &flags).await;
        assert_ok(&out);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "6*7 is 42.\n");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stream {
            // Asked for: the streamed text, nothing else.
            assert_eq!(stderr, "Let me compute.\n6*7 is 42.\n", "-q --stream");
        } else {
            assert_eq!(stderr, "", "-q");
        }
    }

    let fake = FakeOpenAi::start().await;
    fake.push(calc());
    fake.push(Turn::text("6*7 is 42."));
    let out = run_against(&fake, "What is 6*7?", &["--plugins", dir, "--stream"]).await;
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.ends_with('\n'), "{stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.contains(&"Let me compute."), "{stderr}");
    assert!(lines.contains(&"6*7 is 42."), "{stderr}");
    assert!(
        lines.iter().any(|l| l.starts_with("iteration 1:")),
        "{stderr}"
    );
    assert!(lines.iter().any(|l| l.starts_with("stopped:")), "{stderr}");
}

/// `--defer-tools`: the calculator is held back until the model's search
/// finds it, then called; the first request offers the search tool and
/// the text tools only.
#[tokio::test]
async fn defer_tools_holds_tools_back_until_a_search_finds_them() {
    let plugins = plugin_subset(&["calc", "text"]);
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![FakeCall::new(
        "tool_search",
        json!({"query": "evaluate an arithmetic expression"}),
    )]));
    let (summary, fake) = ask_calc(
        fake,
        "openai",
        false,
        plugins.path(),
        &["--defer-tools", "calc_*"],
    )
    .await;
    assert_eq!(summary["final"], json!("6*7 is 42."), "{summary}");
    let calls = summary["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{summary}");
    assert_eq!(calls[0]["name"], json!("tool_search"), "{summary}");
    assert_eq!(calls[1]["name"], json!("calc_eval"), "{summary}");
    assert_eq!(calls[1]["status"], json!("succeeded"), "{summary}");
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let bodies = fake.bodies();
    let first = names(&bodies[0]);
    assert_eq!(first[0], "tool_search", "{first:?}");
    assert!(first.iter().all(|n| !n.starts_with("calc_")), "{first:?}");
    assert!(first.iter().any(|n| n.starts_with("text_")), "{first:?}");
    assert!(names(&bodies[1]).contains(&"calc_eval".to_owned()));
}
