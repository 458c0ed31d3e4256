//! `toolhost serve` and a tool's questions: each goes to the MCP client's
//! user through elicitation (the official Python SDK's client answering),
//! and the answer reaches the tool; a client without the capability lets
//! the tool hear that no one can be asked, at once. Both protocol
//! revisions: 2025-11-25 (`elicitation/create`) and 2026-07-28 (an
//! `input_required` result, the call run again with the answers so far).

use serde_json::{Value, json};
use toolhost_tests::mcp::{python_client, test_cache_dir};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, plugin_dir, toolhost_bin};

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
        "--wait-for-plugins",
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

/// `tool` of plugin `plugin` (from `from`) called through the official
/// Python SDK's client in `mode` ("legacy": 2025-11-25, "modern":
/// 2026-07-28), every question answered with `answer`.
fn answer_through_client(
    from: &std::path::Path,
    plugin: &str,
    mode: &str,
    tool: &str,
    arguments: &Value,
    answer: &Value,
) -> Value {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(from, plugin, plugins.path());
    let argv = json!([
        toolhost_bin(),
        "serve",
        "--wait-for-plugins",
        "--plugins",
        plugins.path(),
        "--cache-dir",
        test_cache_dir(),
        "--no-watch",
    ]);
    python_client(
        "tests/all/questions/mcp_answer.py",
        &[
            mode,
            tool,
            &arguments.to_string(),
            &answer.to_string(),
            &argv.to_string(),
        ],
    )
}

/// The one question asked, in `got`.
fn only_question(got: &Value) -> &Value {
    let asked = got["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{got}");
    &asked[0]
}

// Issue 36 (class 8): the SDKs' questions as their types derive them
// (Python's `Literal`, Go's struct with `additionalProperties`, Rust's
// `Option`s and enums) were refused by the host, so no client ever saw
// them; each now reaches a real client, and its answer the tool.

#[test]
fn a_python_literal_question_reaches_the_client_and_its_answer_the_tool() {
    // One column: no delimiter to detect, so py_textstats_csv asks which
    // one it is (a `Literal` field).
    let table = json!({"table": "word\nalpha\nbeta\n"});
    for (mode, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let got = answer_through_client(
            plugin_dir(),
            "py_textstats",
            mode,
            "py_textstats_csv",
            &table,
            &json!({"action": "accept", "content": {"delimiter": ";"}}),
        );
        assert_eq!(got["protocol_version"], version, "{got}");
        let field = &only_question(&got)["schema"]["properties"]["delimiter"];
        assert_eq!(field["type"], "string", "{got}");
        assert_eq!(field["enum"], json!([",", ";", "tab", "|"]), "{got}");
        assert_eq!(got["is_error"], false, "{got}");
        let stats: Value = serde_json::from_str(got["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            stats["delimiter"], ";",
            "the answer reached the tool: {got}"
        );
        assert_eq!(stats["columns"][0]["distinct"], 2, "{got}");
        // A decline reaches it too: it says what to pass.
        let got = answer_through_client(
            plugin_dir(),
            "py_textstats",
            mode,
            "py_textstats_csv",
            &table,
            &json!({"action": "decline"}),
        );
        only_question(&got);
        assert_eq!(got["is_error"], true, "{got}");
        let text = got["text"].as_str().unwrap();
        assert!(
            text.contains("the user did not say which delimiter"),
            "{got}"
        );
    }
}

#[test]
fn a_go_ask_question_reaches_the_client_and_its_answer_the_tool() {
    // Past the work budget (16 M steps), go_mandelbrot asks for a
    // go-ahead (`Ask[goAhead]`, a struct with a bool).
    let big = json!({"width": 256, "height": 256, "max_iterations": 256});
    for (mode, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let got = answer_through_client(
            plugin_dir(),
            "go_mandelbrot",
            mode,
            "go_mandelbrot",
            &big,
            &json!({"action": "decline"}),
        );
        assert_eq!(got["protocol_version"], version, "{got}");
        let schema = &only_question(&got)["schema"];
        assert_eq!(schema["properties"]["go_ahead"]["type"], "boolean", "{got}");
        assert!(schema.get("additionalProperties").is_none(), "{got}");
        assert_eq!(got["is_error"], true, "{got}");
        assert!(
            got["text"]
                .as_str()
                .unwrap()
                .contains("the user did not want a render this large"),
            "the decline reached the tool: {got}"
        );
    }
    let got = answer_through_client(
        plugin_dir(),
        "go_mandelbrot",
        "legacy",
        "go_mandelbrot",
        &big,
        &json!({"action": "accept", "content": {"go_ahead": true}}),
    );
    only_question(&got);
    assert_eq!(
        got["is_error"], false,
        "the go-ahead reached the tool: {got}"
    );
    assert!(
        got["text"]
            .as_str()
            .unwrap()
            .contains("\"max_iterations\":256"),
        "{got}"
    );
}

#[test]
fn rust_derived_and_field_less_questions_reach_the_client_and_their_answers_the_tool() {
    for (mode, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let got = answer_through_client(
            hostile_dir(),
            "hostile_ask",
            mode,
            "hostile_ask",
            &json!({"shape": "derived"}),
            &json!({"action": "accept", "content": {"name": "Ada", "size": "S", "colour": "red", "count": 2}}),
        );
        assert_eq!(got["protocol_version"], version, "{got}");
        let schema = &only_question(&got)["schema"];
        let properties = &schema["properties"];
        assert_eq!(properties["size"]["type"], "string", "{got}");
        assert_eq!(properties["colour"]["type"], "string", "{got}");
        assert_eq!(
            properties["colour"]["enum"],
            json!(["red", "blue"]),
            "{got}"
        );
        assert_eq!(properties["count"]["type"], "integer", "{got}");
        assert!(schema.get("additionalProperties").is_none(), "{got}");
        let given = answers(&got);
        assert_eq!(
            given,
            [
                json!({"action": "accept", "content": {"name": "Ada", "size": "S", "colour": "red", "count": 2}})
            ],
            "{got}"
        );
        // No `properties`: asked as a form with no fields.
        let got = answer_through_client(
            hostile_dir(),
            "hostile_ask",
            mode,
            "hostile_ask",
            &json!({"shape": "empty"}),
            &json!({"action": "accept", "content": {}}),
        );
        assert_eq!(
            only_question(&got)["schema"]["properties"],
            json!({}),
            "{got}"
        );
        assert_eq!(
            answers(&got),
            [json!({"action": "accept", "content": {}})],
            "{got}"
        );
    }
}

#[test]
fn a_c_question_reaches_the_client_and_its_answer_the_tool() {
    // Without `text`, c_barcode asks for it (a schema written by hand).
    for (mode, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let got = answer_through_client(
            plugin_dir(),
            "c_barcode",
            mode,
            "c_barcode",
            &json!({}),
            &json!({"action": "accept", "content": {"text": "HI 36"}}),
        );
        assert_eq!(got["protocol_version"], version, "{got}");
        let field = &only_question(&got)["schema"]["properties"]["text"];
        assert_eq!(field["type"], "string", "{got}");
        assert_eq!(got["is_error"], false, "{got}");
        assert!(
            got["text"].as_str().unwrap().contains("HI 36"),
            "the answer reached the tool: {got}"
        );
    }
}
