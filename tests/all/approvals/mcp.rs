//! `toolhost serve` and approvals: a call of a tool that needs approval asks
//! the MCP client's user through elicitation (the official Python SDK's
//! client answering), runs on accept, and answers `isError` naming the
//! policy on decline and cancel; a client without the capability is
//! refused, never served silently. Both protocol revisions: 2025-11-25
//! (`elicitation/create`) and 2026-07-28 (an `input_required` result).

use serde_json::{Value, json};
use toolhost_tests::mcp::{python_client, test_cache_dir};
use toolhost_tests::plugins::{plugin_subset, toolhost_bin};

/// The Python client against `toolhost serve` over stdio, with the host
/// config requiring approval for `calc_eval`.
fn ask(mode: &str, answer: &str) -> Value {
    let plugins = plugin_subset(&["calc", "text"]);
    let config = plugins.path().join("host.toml");
    std::fs::write(&config, "[approval]\nrequire = [\"calc_*\"]\n").unwrap();
    let argv = json!([
        toolhost_bin(),
        "serve",
        "--wait-for-plugins",
        "--plugins",
        plugins.path(),
        "--cache-dir",
        test_cache_dir(),
        "--config",
        config,
        "--no-watch",
    ]);
    python_client(
        "tests/all/approvals/mcp_approve.py",
        &[mode, answer, &argv.to_string()],
    )
}

fn check(got: &Value, version: &str, approved: bool, refusal: &str) {
    assert_eq!(got["protocol_version"], version, "{got}");
    let asked = got["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "asked once, for calc_eval only: {got}");
    let message = asked[0].as_str().unwrap();
    assert!(
        message.contains("`calc_eval`") && message.contains(r#"{"expression":"6*7"}"#),
        "{message}"
    );
    let calc = &got["results"][0];
    if approved {
        assert_eq!(calc["is_error"], false, "{got}");
        assert!(calc["text"].as_str().unwrap().contains("42"), "{got}");
    } else {
        assert_eq!(calc["is_error"], true, "{got}");
        let text = calc["text"].as_str().unwrap();
        assert!(text.starts_with("permission_denied:"), "{text}");
        assert!(
            text.contains(refusal) && text.contains("approval policy"),
            "{text}"
        );
    }
    // A tool the policy does not name is not asked about.
    assert_eq!(got["results"][1]["is_error"], false, "{got}");
}

#[test]
fn elicitation_create_accept_runs_the_call_decline_and_cancel_refuse_it() {
    check(&ask("legacy", "accept"), "2025-11-25", true, "");
    check(&ask("legacy", "decline"), "2025-11-25", false, "declined");
    check(&ask("legacy", "cancel"), "2025-11-25", false, "cancelled");
}

#[test]
fn an_input_required_elicitation_accept_runs_the_call_decline_and_cancel_refuse_it() {
    check(&ask("modern", "accept"), "2026-07-28", true, "");
    check(&ask("modern", "decline"), "2026-07-28", false, "declined");
    check(&ask("modern", "cancel"), "2026-07-28", false, "cancelled");
}

#[test]
fn a_client_without_elicitation_is_refused_and_told_why() {
    let got = ask("none", "accept");
    assert_eq!(got["asked"], json!([]));
    let calc = &got["results"][0];
    assert_eq!(calc["is_error"], true, "{got}");
    let text = calc["text"].as_str().unwrap();
    assert!(
        text.contains("did not declare the elicitation capability") && text.contains("not run"),
        "{text}"
    );
    assert_eq!(got["results"][1]["is_error"], false, "{got}");
}

#[test]
fn an_accept_is_for_the_arguments_the_user_was_shown() {
    // 2026-07-28 keeps nothing between rounds: a retry that carries the
    // accept of one call with other arguments is asked about those again.
    let got = ask("switch", "accept");
    assert_eq!(got["protocol_version"], "2026-07-28", "{got}");
    let rounds = got["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "{got}");
    let asked = |i: usize| rounds[i]["asked"].as_str().unwrap_or_default();
    assert!(asked(0).contains(r#"{"expression":"6*7"}"#), "{got}");
    // The accept of 6*7 sent with 6*9 did not run 6*9: the user is asked.
    assert!(asked(1).contains(r#"{"expression":"6*9"}"#), "{got}");
    assert_eq!(rounds[2]["is_error"], false, "{got}");
    assert!(rounds[2]["text"].as_str().unwrap().contains("54"), "{got}");
    assert_eq!(rounds[3]["is_error"], false, "{got}");
    assert!(rounds[3]["text"].as_str().unwrap().contains("42"), "{got}");
}
