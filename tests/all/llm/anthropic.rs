//! Anthropic Messages.

use serde_json::json;
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, AssistantMessage, FinishReason, LlmError, Message,
    ToolCall, ToolChoice, ToolResult,
};
use toolhost_tests::providers::{FakeAnthropic, FakeCall, Reply, Turn};

use super::{answered, args, ask, http, run_tool, start, status_of, tools};

fn provider(server: &FakeAnthropic) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig::new(http(server.url()), "claude-test"))
        .expect("valid config")
}

async fn round_trip(stream: bool) {
    let server = FakeAnthropic::start().await;
    server
        .push(
            Turn::calls(vec![
                FakeCall::new("add", json!({"a": 1, "b": 2})),
                FakeCall::new("lookup", json!({"word": "cat"})),
            ])
            .with_text("Checking.")
            .with_usage(40, 12),
        )
        .push(Turn::text("3, and a cat."));
    let claude = provider(&server);
    let (first, pieces) = ask(&claude, &start(), &tools(), ToolChoice::Auto, stream).await;
    let first = first.expect("first answer");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.message.content, "Checking.");
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (40, 12)
    );
    let calls = &first.message.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(args(&calls[0]), json!({"a": 1, "b": 2}));
    assert_eq!(args(&calls[1]), json!({"word": "cat"}));
    assert!(calls[0].id.starts_with("toolu_"));
    assert_eq!(pieces.concat(), if stream { "Checking." } else { "" });

    // One result is an error; a user message follows the results.
    let mut history = answered(start(), &first.message, |call| {
        if call.name == "add" {
            run_tool(call)
        } else {
            ("dictionary offline".into(), true)
        }
    });
    history.push(Message::user("Thanks."));
    let (second, _) = ask(&claude, &history, &tools(), ToolChoice::None, stream).await;
    assert_eq!(second.expect("accepted").message.content, "3, and a cat.");

    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some("test-key-do-not-log"));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    let body = &requests[1].body;
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["tool_choice"], json!({"type": "none"}));
    assert_eq!(
        body["tools"][0],
        json!({"name": "add", "description": "Add two integers.", "input_schema": tools()[0].input_schema})
    );
    let (id0, id1) = (&calls[0].id, &calls[1].id);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is 1+2? Also look up 'cat'."}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": id0, "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": id1, "name": "lookup", "input": {"word": "cat"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id0, "content": "3"},
                {"type": "tool_result", "tool_use_id": id1, "content": "dictionary offline", "is_error": true},
                {"type": "text", "text": "Thanks."}
            ]}
        ])
    );
}

#[tokio::test]
async fn non_streaming_parallel_calls_and_merged_results() {
    round_trip(false).await;
}

#[tokio::test]
async fn streaming_parallel_calls_and_merged_results() {
    round_trip(true).await;
}

fn call(id: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "lookup".into(),
        arguments: arguments.into(),
        signature: None,
    }
}

fn result(id: &str) -> Message {
    Message::Tool(ToolResult {
        tool_call_id: id.into(),
        name: "lookup".into(),
        content: "{}".into(),
        is_error: false,
        parts: Vec::new(),
    })
}

#[tokio::test]
async fn the_fake_rejects_what_anthropic_rejects() {
    let server = FakeAnthropic::start().await;
    let claude = provider(&server);
    let assistant = Message::Assistant(AssistantMessage {
        content: String::new(),
        tool_calls: vec![call("toolu_a", "{}"), call("toolu_b", "{}")],
        reasoning: None,
        provider_blocks: Vec::new(),
    });
    let mut missing = start();
    missing.extend([assistant.clone(), result("toolu_a")]);
    let (answer, _) = ask(&claude, &missing, &tools(), ToolChoice::Auto, false).await;
    let (provider_name, status, message) = status_of(&answer.expect_err("400")).expect("status");
    assert_eq!((provider_name.as_str(), status), ("anthropic", 400));
    assert!(
        message.contains(
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_b"
        ),
        "{message}"
    );

    let mut unexpected = start();
    unexpected.extend([
        assistant,
        result("toolu_a"),
        result("toolu_b"),
        result("toolu_zzz"),
    ]);
    let (answer, _) = ask(&claude, &unexpected, &tools(), ToolChoice::Auto, false).await;
    let (_, _, message) = status_of(&answer.expect_err("400")).expect("status");
    assert!(
        message.contains("unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 2, "400s are not retried");
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_kept_as_text() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("I see my mistake."));
    let mut history = start();
    history.push(Message::Assistant(AssistantMessage {
        content: String::new(),
        tool_calls: vec![call("toolu_bad", "{\"word\": "), call("toolu_empty", "")],
        reasoning: None,
        provider_blocks: Vec::new(),
    }));
    history.extend([result("toolu_bad"), result("toolu_empty")]);
    let (answer, _) = ask(
        &provider(&server),
        &history,
        &tools(),
        ToolChoice::Auto,
        false,
    )
    .await;
    answer.expect("the API accepts object inputs");
    let content = &server.bodies()[0]["messages"][1]["content"];
    assert_eq!(
        content[0]["input"],
        json!({"_unparsed_arguments": "{\"word\": "})
    );
    assert_eq!(content[1]["input"], json!({}));
}

#[tokio::test]
async fn a_cut_stream_mid_tool_use_is_interrupted() {
    let server = FakeAnthropic::start().await;
    // message_start, ping, tool block start, two input deltas, then cut.
    server.push(Reply::Cut {
        turn: Turn::calls(vec![FakeCall::new(
            "lookup",
            json!({"word": "interrupted"}),
        )]),
        events: 5,
    });
    let (answer, _) = ask(
        &provider(&server),
        &start(),
        &tools(),
        ToolChoice::Auto,
        true,
    )
    .await;
    assert!(
        matches!(&answer, Err(LlmError::StreamInterrupted { provider, .. }) if provider == "anthropic"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn results_go_first_even_when_a_user_message_came_between_them() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("ok"));
    let mut history = start();
    history.push(Message::Assistant(AssistantMessage {
        content: String::new(),
        tool_calls: vec![call("toolu_a", "{}"), call("toolu_b", "{}")],
        reasoning: None,
        provider_blocks: Vec::new(),
    }));
    history.extend([result("toolu_a"), Message::user("also"), result("toolu_b")]);
    let (answer, _) = ask(
        &provider(&server),
        &history,
        &tools(),
        ToolChoice::Auto,
        false,
    )
    .await;
    answer.expect("the strict fake accepts: both results lead the user message");
    let kinds: Vec<_> = server.bodies()[0]["messages"][2]["content"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|b| b["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
}
