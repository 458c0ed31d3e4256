//! `toolhost serve` and a tool's questions: each goes to the MCP client's
//! user through elicitation (the official Python SDK's client answering),
//! and the answer reaches the tool; a client without the capability lets
//! the tool hear that no one can be asked, at once. Both protocol
//! revisions: 2025-11-25 (`elicitation/create`) and 2026-07-28 (an
//! `input_required` result, the call run again with the answers so far).

use std::process::Command;

use serde_json::{Value, json};
use toolhost_tests::mcp::{test_cache_dir, venv_python};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, toolhost_bin, workspace_root};

fn ask(mode: &str, answer: &str) -> Value {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    let argv = json!([
        toolhost_bin(),
        "serve",
        "--plugins",
        plugins.path(),
        "--cache-dir",
        test_cache_dir(),
        "--no-watch",
    ]);
    let out = Command::new(venv_python())
        .arg(workspace_root().join("tests/all/questions/mcp_ask.py"))
        .args([mode, answer, &argv.to_string()])
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON from the client ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The tool's own answer list, from the result's text.
fn answers(got: &Value) -> Vec<Value> {
    assert_eq!(got["is_error"], false, "{got}");
    let text = got["text"].as_str().unwrap();
    let out: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    out["answers"].as_array().cloned().unwrap()
}

fn check(got: &Value, version: &str, answer: &str) {
    assert_eq!(got["protocol_version"], version, "{got}");
    let asked = got["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "each question asked once: {got}");
    assert_eq!(asked[0]["message"], "Who is this order for?", "{got}");
    let schema = &asked[0]["schema"];
    assert_eq!(
        schema["properties"]["size"]["enum"],
        json!(["S", "M", "L"]),
        "{got}"
    );
    assert_eq!(schema["required"], json!(["name"]), "{got}");
    let answers = answers(got);
    match answer {
        "accept" => {
            for (i, a) in answers.iter().enumerate() {
                assert_eq!(a["action"], "accept", "{got}");
                assert_eq!(a["content"]["name"], format!("Ada {}", i + 1), "{got}");
                assert_eq!(a["content"]["size"], "S", "{got}");
            }
        }
        other => assert_eq!(
            answers,
            [json!({"action": other}), json!({"action": other})],
            "{got}"
        ),
    }
}

#[test]
fn elicitation_create_brings_accept_decline_and_cancel_to_the_tool() {
    for answer in ["accept", "decline", "cancel"] {
        check(&ask("legacy", answer), "2025-11-25", answer);
    }
}

#[test]
fn an_input_required_elicitation_brings_accept_decline_and_cancel_to_the_tool() {
    for answer in ["accept", "decline", "cancel"] {
        check(&ask("modern", answer), "2026-07-28", answer);
    }
}

#[test]
fn a_client_without_elicitation_lets_the_tool_hear_that_no_one_can_be_asked() {
    let got = ask("none", "accept");
    assert_eq!(got["asked"], json!([]), "{got}");
    for a in answers(&got) {
        let error = a["error"].as_str().unwrap();
        assert!(error.starts_with("no one to ask"), "{error}");
    }
}
