//! The replay provider: recorded turns, strict history checks.

use toolhost::llm::{
    AssistantMessage, FinishReason, LlmError, Message, ProviderKind, ProviderOptions,
    ReplayProvider, ToolChoice,
};

use super::{answered, args, ask, run_tool, start, status_of, tools};

const RECORDING: &str = r#"{
  "turns": [
    {"content": "Adding.", "tool_calls": [
        {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"name": "add", "arguments": "{\"a\": oops"}
    ], "usage": {"input_tokens": 12, "output_tokens": 4}},
    {"tool_calls": [{"name": "lookup", "arguments": {"word": "cat"}}]},
    {"content": "The answer is 3."}
  ]
}"#;

#[tokio::test]
async fn plays_turns_in_order_through_a_strict_history_check() {
    let replay = ReplayProvider::from_json(RECORDING).expect("valid recording");
    assert_eq!(replay.len(), 3);
    let (first, _) = ask(&replay, &start(), &tools(), ToolChoice::Auto, false).await;
    let first = first.expect("turn 1");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.usage.input_tokens, 12);
    let calls = &first.message.tool_calls;
    assert_eq!(
        (calls[0].id.as_str(), calls[1].id.as_str()),
        ("c1", "replay_0_1")
    );
    assert_eq!(args(&calls[0]), serde_json::json!({"a": 1, "b": 2}));
    assert_eq!(
        calls[1].arguments, "{\"a\": oops",
        "malformed arguments replay verbatim"
    );

    let history = answered(start(), &first.message, run_tool);
    let (second, pieces) = ask(&replay, &history, &tools(), ToolChoice::Auto, true).await;
    let second = second.expect("turn 2");
    assert_eq!(second.message.tool_calls[0].id, "replay_1_0");
    assert!(pieces.is_empty(), "turn 2 has no text");
    let history = answered(history, &second.message, run_tool);
    let (third, pieces) = ask(&replay, &history, &tools(), ToolChoice::Auto, true).await;
    assert_eq!(third.expect("turn 3").finish_reason, FinishReason::Stop);
    assert_eq!(pieces, ["The answer is 3."]);

    let text_only = AssistantMessage {
        content: "The answer is 3.".into(),
        ..AssistantMessage::default()
    };
    let history = answered(history, &text_only, run_tool);
    let (fourth, _) = ask(&replay, &history, &tools(), ToolChoice::Auto, false).await;
    match fourth {
        Err(LlmError::InvalidResponse { provider, message }) => {
            assert_eq!(provider, "replay");
            assert!(
                message.contains("3 turn(s)") && message.contains("position 4"),
                "{message}"
            );
        }
        other => panic!("expected the recording to run out, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unanswered_or_duplicated_result_is_refused_like_a_strict_provider() {
    let replay = ReplayProvider::from_json(RECORDING).expect("valid recording");
    let (first, _) = ask(&replay, &start(), &tools(), ToolChoice::Auto, false).await;
    let first = first.expect("turn 1").message;

    let mut missing = answered(start(), &first, run_tool);
    missing.pop();
    let (result, _) = ask(&replay, &missing, &tools(), ToolChoice::Auto, false).await;
    let (provider, status, message) = status_of(&result.expect_err("refused")).expect("status");
    assert_eq!((provider.as_str(), status), ("replay", 400));
    assert!(message.contains("replay_0_1"), "{message}");

    let mut twice = answered(start(), &first, run_tool);
    let duplicate = twice[3].clone();
    twice.push(duplicate);
    let (result, _) = ask(&replay, &twice, &tools(), ToolChoice::Auto, false).await;
    let (_, _, message) = status_of(&result.expect_err("refused")).expect("status");
    assert!(
        message.contains("tool call `c1` a second time"),
        "{message}"
    );

    let mut interleaved = answered(start(), &first, run_tool);
    interleaved.insert(4, Message::user("interrupting"));
    let (result, _) = ask(&replay, &interleaved, &tools(), ToolChoice::Auto, false).await;
    assert!(status_of(&result.expect_err("refused")).is_some());
}

#[tokio::test]
async fn tools_disabled_jumps_to_the_next_text_answer() {
    let replay = ReplayProvider::from_json(RECORDING).expect("valid recording");
    let (first, _) = ask(&replay, &start(), &tools(), ToolChoice::Auto, false).await;
    let history = answered(start(), &first.expect("turn 1").message, run_tool);
    let (last, _) = ask(&replay, &history, &tools(), ToolChoice::None, false).await;
    let last = last.expect("the recorded final answer");
    assert_eq!(last.message.content, "The answer is 3.");
    assert!(last.message.tool_calls.is_empty());

    let only_calls =
        ReplayProvider::from_json(r#"{"turns":[{"tool_calls":[{"name":"add","arguments":{}}]}]}"#)
            .expect("valid");
    let (result, _) = ask(&only_calls, &start(), &tools(), ToolChoice::None, false).await;
    assert!(
        matches!(&result, Err(LlmError::InvalidResponse { message, .. }) if message.contains("without tool calls")),
        "{result:?}"
    );
}

#[tokio::test]
async fn recordings_load_from_files_and_bad_ones_are_config_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("demo.json");
    std::fs::write(&path, RECORDING).expect("write");
    let provider = ProviderKind::Replay
        .build(ProviderOptions {
            replay_file: Some(path.clone()),
            ..ProviderOptions::default()
        })
        .expect("loads");
    assert_eq!(provider.name(), "replay");

    std::fs::write(&path, r#"{"turns":[{"text":"typo in the field name"}]}"#).expect("write");
    let error = ReplayProvider::from_file(&path).expect_err("unknown field");
    assert!(matches!(error, LlmError::Config { .. }), "{error:?}");
    assert!(error.to_string().contains("demo.json"), "{error}");
    let missing = ProviderKind::Replay.build(ProviderOptions::default()).err();
    assert!(matches!(missing, Some(LlmError::Config { .. })));
}
