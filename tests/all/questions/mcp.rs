//! `toolhost serve` and a tool's questions: each goes to the MCP client's
//! user through elicitation (the official Python SDK's client answering),
//! and the answer reaches the tool; a client without the capability lets
//! the tool hear that no one can be asked, at once. Both protocol
//! revisions: 2025-11-25 (`elicitation/create`) and 2026-07-28 (an
//! `input_required` result, the call run again with the answers so far).

use serde_json::{Value, json};
use toolhost_tests::mcp::{python_client, test_cache_dir};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, toolhost_bin};

fn ask(mode: &str, answer: &str) -> Value {
    ask_in(mode, answer, None)
}

/// As [`ask`], the server run with host config `config`.
fn ask_in(mode: &str, answer: &str, config: Option<&str>) -> Value {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    let mut argv = json!([
        toolhost_bin(),
        "serve",
        "--plugins",
        plugins.path(),
        "--cache-dir",
        test_cache_dir(),
        "--no-watch",
    ]);
    if let Some(config) = config {
        let file = plugins.path().join("host.toml");
        std::fs::write(&file, config).unwrap();
        let argv = argv.as_array_mut().unwrap();
        argv.push(json!("--config"));
        argv.push(json!(file));
    }
    python_client(
        "tests/all/questions/mcp_ask.py",
        &[mode, answer, &argv.to_string()],
    )
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

#[test]
fn a_call_that_needs_approval_and_asks_is_approved_once_in_either_revision() {
    // The approval is the first elicitation; in 2026-07-28 the retried
    // call carries it on (in `requestState`) with the answers, so neither
    // it nor an answered question is asked again in a later round.
    let config = "[approval]\nrequire = [\"hostile_ask\"]\n";
    for (mode, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let got = ask_in(mode, "accept", Some(config));
        assert_eq!(got["protocol_version"], version, "{got}");
        let asked = got["asked"].as_array().unwrap();
        assert_eq!(
            asked.len(),
            3,
            "the approval, then each question, once: {got}"
        );
        let approval = asked[0]["message"].as_str().unwrap();
        assert!(approval.contains("Allow this call?"), "{got}");
        for question in &asked[1..] {
            assert_eq!(question["message"], "Who is this order for?", "{got}");
        }
        // The approval's accept is not taken for an answer: the tool got
        // the answers to its two questions.
        let answers = answers(&got);
        assert_eq!(answers.len(), 2, "{got}");
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a["content"]["name"], format!("Ada {}", i + 2), "{got}");
        }
    }
}

#[test]
fn answers_count_only_for_the_arguments_they_were_given_for() {
    // 2026-07-28 keeps nothing between rounds: answers carried in
    // `requestState` to a round with other arguments are dropped, and the
    // tool asks from the start.
    let got = ask("switch", "accept");
    assert_eq!(got["protocol_version"], "2026-07-28", "{got}");
    let rounds = got["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "{got}");
    assert_eq!(rounds[0]["answers_kept"], 0, "{got}");
    assert_eq!(rounds[1]["answers_kept"], 1, "{got}");
    assert_eq!(
        rounds[2]["answers_kept"], 0,
        "other arguments: asked from the start: {got}"
    );
    let last = json!({"is_error": rounds[3]["is_error"], "text": rounds[3]["text"]});
    let names: Vec<Value> = answers(&last)
        .iter()
        .map(|a| a["content"]["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("Ada 1"), json!("Ada 2")], "{got}");
}
