//! `toolhost run` and approvals: on a terminal it asks (yes, no, always for
//! the tool); without one a call that needs approval is refused unless
//! `--approve` covers it, or, with `--transcript`, the run pauses (exit 3)
//! and `--resume FILE --approve-call CALL_ID` continues it.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolhost::runner::{PAUSED_TRANSCRIPT_FORMAT, Transcript};
use toolhost_tests::plugins::{cli_command, plugin_subset, toolhost_bin, workspace_root};
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

/// The `run` arguments against `fake` with the `calc` plugin in `plugins`.
pub(super) fn run_args(
    fake: &FakeOpenAi,
    plugins: &Path,
    prompt: Option<&str>,
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(prompt.map(str::to_owned));
    for arg in [
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
    ] {
        args.push(arg.to_owned());
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// `toolhost ARGS` with no terminal (stdin closed, output captured).
pub(super) async fn no_terminal(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        cli_command(toolhost_bin())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("toolhost starts")
    })
    .await
    .unwrap()
}

/// `toolhost ARGS` on a pseudo-terminal, typing `answers` at its prompts:
/// {"exit", "asked", "output"}.
async fn on_terminal(args: Vec<String>, answers: &[&str]) -> Value {
    let script = workspace_root().join("tests/all/approvals/pty_run.py");
    let answers = json!(answers).to_string();
    let bin = toolhost_bin().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        cli_command("python3")
            .arg(script)
            .arg(answers)
            .arg(bin)
            .args(&args)
            .output()
            .expect("python3 starts")
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the helper's JSON")
}

pub(super) fn calc(expression: &str, id: &str) -> FakeCall {
    FakeCall::new("calc_eval", json!({"expression": expression})).with_id(id)
}

/// The OpenAI `tool` results of a request body: (tool_call_id, content).
pub(super) fn results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

pub(super) fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn on_a_terminal_yes_runs_the_call_and_no_refuses_it_with_who_and_why() {
    let plugins = plugin_subset(&["calc"]);
    for (answer, expected) in [
        ("y", r#"{"value":42.0}"#),
        (
            "n",
            "permission_denied: the user at the terminal refused this call: declined at the prompt",
        ),
    ] {
        let fake = FakeOpenAi::start().await;
        fake.push(Turn::calls(vec![calc("6*7", "call_calc")]));
        fake.push(Turn::text("finished"));
        let args = run_args(
            &fake,
            plugins.path(),
            Some("What is 6*7?"),
            &["--require-approval", "calc_*"],
        );
        let out = on_terminal(args, &[answer]).await;
        let output = out["output"].as_str().unwrap();
        assert_eq!(out["exit"], 0, "{output}");
        assert_eq!(out["asked"], 1, "{output}");
        assert!(output.contains("`calc_eval` [call_calc]"), "{output}");
        assert!(output.contains(r#"{"expression":"6*7"}"#), "{output}");
        let sent = results(&fake.bodies()[1]);
        assert_eq!(
            sent,
            [("call_calc".to_owned(), expected.to_owned())],
            "{output}"
        );
    }
}

#[tokio::test]
async fn on_a_terminal_always_approves_the_tool_for_the_rest_of_the_run() {
    let plugins = plugin_subset(&["calc"]);
    let config = tempfile::tempdir().unwrap();
    let config_file = config.path().join("toolhost.toml");
    // The operator's policy, from the host config.
    std::fs::write(&config_file, "[approval]\nrequire = [\"calc_eval\"]\n").unwrap();
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![calc("1+1", "c1"), calc("2+2", "c2")]));
    fake.push(Turn::calls(vec![calc("3+3", "c3")]));
    fake.push(Turn::text("2, 4, 6"));
    let args = run_args(
        &fake,
        plugins.path(),
        Some("Add things."),
        &["--config", config_file.to_str().unwrap()],
    );
    let out = on_terminal(args, &["a"]).await;
    let output = out["output"].as_str().unwrap();
    assert_eq!(out["exit"], 0, "{output}");
    assert_eq!(out["asked"], 1, "asked once for three calls: {output}");
    let bodies = fake.bodies();
    assert_eq!(
        results(&bodies[2]),
        [
            ("c1".to_owned(), r#"{"value":2.0}"#.to_owned()),
            ("c2".to_owned(), r#"{"value":4.0}"#.to_owned()),
            ("c3".to_owned(), r#"{"value":6.0}"#.to_owned())
        ]
    );
}

#[tokio::test]
async fn without_a_terminal_a_call_is_refused_unless_approve_covers_it() {
    let plugins = plugin_subset(&["calc"]);
    for (flags, expected) in [
        (
            vec!["--require-approval", "calc_eval"],
            "permission_denied: toolhost run refused this call: this tool needs approval and nobody is at a terminal",
        ),
        (
            vec!["--require-approval", "calc_eval", "--approve", "calc_*"],
            r#"{"value":42.0}"#,
        ),
        (
            vec!["--require-approval", "calc_eval", "--approve-all"],
            r#"{"value":42.0}"#,
        ),
        (
            vec![
                "--require-approval",
                "calc_eval",
                "--approve-all",
                "--deny",
                "calc_eval",
            ],
            "permission_denied: the operator refused this call: --deny covers this tool",
        ),
        // Nothing needs approval: today's behaviour.
        (vec![], r#"{"value":42.0}"#),
    ] {
        let fake = FakeOpenAi::start().await;
        fake.push(Turn::calls(vec![calc("6*7", "call_calc")]));
        fake.push(Turn::text("finished"));
        let out = no_terminal(run_args(&fake, plugins.path(), Some("6*7?"), &flags)).await;
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", text(&out));
        let sent = results(&fake.bodies()[1]);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].1.starts_with(expected), "{flags:?}: {}", sent[0].1);
    }
}

#[tokio::test]
async fn without_a_terminal_a_saved_run_pauses_and_resume_with_approve_finishes_it() {
    let plugins = plugin_subset(&["calc"]);
    let work = tempfile::tempdir().unwrap();
    let paused = work.path().join("paused.json");
    let done = work.path().join("done.json");
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        calc("6*7", "call_a"),
        calc("1+1", "call_b"),
    ]));
    fake.push(Turn::text("42 and no"));
    let flags = [
        "--require-approval",
        "calc_eval",
        "--transcript",
        paused.to_str().unwrap(),
    ];
    let out = no_terminal(run_args(&fake, plugins.path(), Some("6*7?"), &flags)).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--approve-call call_a --approve-call call_b"),
        "{stderr}"
    );
    assert_eq!(fake.requests().len(), 1);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&paused).unwrap()).unwrap();
    assert_eq!(saved["format"], json!(PAUSED_TRANSCRIPT_FORMAT));

    // A prompt is refused while the run waits: the round comes first.
    let resume = ["--resume", paused.to_str().unwrap()];
    let out = no_terminal(run_args(&fake, plugins.path(), Some("more?"), &resume)).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("paused waiting for approval"),
        "{}",
        text(&out)
    );

    let flags = [
        "--resume",
        paused.to_str().unwrap(),
        "--approve",
        "call_a",
        "--deny",
        "call_b",
        "--transcript",
        done.to_str().unwrap(),
        "--json",
    ];
    let out = no_terminal(run_args(&fake, plugins.path(), None, &flags)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        fake.requests().len(),
        2,
        "no new request for the decided round"
    );
    let sent = results(&fake.bodies()[1]);
    assert_eq!(
        sent[0],
        ("call_a".to_owned(), r#"{"value":42.0}"#.to_owned())
    );
    assert!(
        sent[1]
            .1
            .starts_with("permission_denied: the operator refused this call"),
        "{sent:?}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["final"], "42 and no");
    let finished = Transcript::load(&done).unwrap();
    assert!(finished.pending.is_none());
    assert_eq!(finished.final_text.as_deref(), Some("42 and no"));
}

#[tokio::test]
async fn a_plugin_whose_manifest_asks_for_approval_is_refused_without_a_terminal() {
    let plugins = plugin_subset(&["calc"]);
    let manifest = plugins.path().join("calc.toml");
    let mut declared = std::fs::read_to_string(&manifest).unwrap();
    declared.push_str("\n[exec]\nneeds_approval = true\n");
    std::fs::write(&manifest, declared).unwrap();
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![calc("6*7", "call_calc")]));
    fake.push(Turn::text("finished"));
    let out = no_terminal(run_args(&fake, plugins.path(), Some("6*7?"), &[])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sent = results(&fake.bodies()[1]);
    assert!(
        sent[0]
            .1
            .starts_with("permission_denied: toolhost run refused this call"),
        "{sent:?}"
    );
}
