//! `toolhost run` and a call that reports progress: on a terminal, a live
//! line `tool: done/total message` once the call has run a moment, cleared
//! when it ends; nothing off a terminal or with `-q`.

use std::path::Path;

use serde_json::{Value, json};
use toolhost_tests::plugins::{
    cli_command, copy_plugin_from, hostile_dir, toolhost_bin, workspace_root,
};
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

use super::{assert_ok, toolhost_run};

/// A fake whose model calls `hostile_sleep` for 1.5 s in 5 reported steps,
/// then answers; and `run` arguments against it.
async fn slow_job(plugins: &Path, extra: &[&str]) -> (FakeOpenAi, Vec<String>) {
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("hostile_sleep", json!({"ms": 1500, "steps": 5})).with_id("call_s"),
    ]));
    fake.push(Turn::text("slept"));
    let mut args: Vec<String> = [
        "run",
        "sleep a while",
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
    .into();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    (fake, args)
}

/// `toolhost ARGS` on a pseudo-terminal: {"exit", "output"}.
async fn on_terminal(args: Vec<String>) -> Value {
    let script = workspace_root().join("tests/all/approvals/pty_run.py");
    let bin = toolhost_bin().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        cli_command("python3")
            .arg(script)
            .arg("[]")
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

#[tokio::test]
async fn a_slow_call_shows_a_progress_line_on_a_terminal_and_none_elsewhere() {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_sleep", plugins.path());
    // Its own manifest ends a call at 200 ms: this job takes 1.5 s.
    std::fs::write(
        plugins.path().join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 5000\n",
    )
    .unwrap();

    let (_fake, args) = slow_job(plugins.path(), &[]).await;
    let shown = on_terminal(args).await;
    assert_eq!(shown["exit"], 0, "{shown}");
    let output = shown["output"].as_str().unwrap();
    // Drawn in place (carriage return, erase line), with the tool's name,
    // how far it is out of how much, and its message...
    let line = regex_like(output, "\r\x1b[2K  hostile_sleep: ", "/5 slept ");
    assert!(line, "no progress line in {output:?}");
    // ...and cleared before the call's result line.
    let result = output
        .find("tool hostile_sleep [call_s] ok")
        .expect("the result line");
    let cleared = output[..result].rfind("\r\x1b[2K").expect("cleared");
    assert!(
        !output[cleared..result].contains("hostile_sleep:"),
        "the line is cleared before the result: {output:?}"
    );

    // `-q` on a terminal: no line.
    let (_fake, args) = slow_job(plugins.path(), &["-q"]).await;
    let quiet = on_terminal(args).await;
    assert_eq!(quiet["exit"], 0, "{quiet}");
    assert!(
        !quiet["output"].as_str().unwrap().contains("hostile_sleep:"),
        "{quiet}"
    );

    // Off a terminal: the result line, no progress line.
    let (_fake, args) = slow_job(plugins.path(), &[]).await;
    let out = toolhost_run(args).await;
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tool hostile_sleep [call_s] ok"),
        "{stderr}"
    );
    assert!(!stderr.contains("hostile_sleep:"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr}");
}

/// Whether `text` has `start`, then digits, then `then`.
fn regex_like(text: &str, start: &str, then: &str) -> bool {
    text.match_indices(start).any(|(at, _)| {
        let rest = &text[at + start.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(then)
    })
}
