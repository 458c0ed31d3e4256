//! OpenAI Chat Completions, DeepSeek and llama.cpp.

use serde_json::json;
use toolhost::llm::{
    AssistantMessage, FinishReason, LlmError, Message, OpenAiConfig, OpenAiProvider, ToolCall,
    ToolChoice,
};
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

use super::{answered, args, ask, http, run_tool, start, status_of, tools};

fn provider(server: &FakeOpenAi) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(http(server.url()), "gpt-test")).expect("valid config")
}

fn two_calls() -> Turn {
    Turn::calls(vec![
        FakeCall::new("add", json!({"a": 1, "b": 2})),
        FakeCall::new("lookup", json!({"word": "cat", "lang": "en"})),
    ])
    .with_text("Let me check.")
    .with_usage(31, 17)
}

async fn round_trip(stream: bool) {
    let server = FakeOpenAi::start().await;
    server
        .push(two_calls())
        .push(Turn::text("1+2 is 3; a cat is a cat.").with_usage(50, 9));
    let openai = provider(&server);
    let (first, pieces) = ask(&openai, &start(), &tools(), ToolChoice::Auto, stream).await;
    let first = first.expect("first answer");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.message.content, "Let me check.");
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (31, 17)
    );
    let calls = &first.message.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].name.as_str(), args(&calls[0])),
        ("add", json!({"a": 1, "b": 2}))
    );
    assert_eq!(
        (calls[1].name.as_str(), args(&calls[1])),
        ("lookup", json!({"word": "cat", "lang": "en"}))
    );
    assert_ne!(calls[0].id, calls[1].id);
    if stream {
        assert!(pieces.len() > 1, "text arrives in pieces: {pieces:?}");
        assert_eq!(pieces.concat(), "Let me check.");
    } else {
        assert!(pieces.is_empty());
    }

    let history = answered(start(), &first.message, run_tool);
    let (second, _) = ask(&openai, &history, &tools(), ToolChoice::Auto, stream).await;
    let second = second.expect("the strict server accepts the answered history");
    assert_eq!(second.message.content, "1+2 is 3; a cat is a cat.");
    assert_eq!(second.finish_reason, FinishReason::Stop);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer test-key-do-not-log")
    );
    let body = &requests[1].body;
    assert_eq!(body["stream"], stream);
    if stream {
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "add", "description": "Add two integers.",
               "parameters": tools()[0].input_schema}})
    );
    assert!(
        body.get("tool_choice").is_none(),
        "auto is the default and is not sent"
    );
    // Golden: the assistant turn and one tool message per result.
    let (id0, id1) = (&calls[0].id, &calls[1].id);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 1+2? Also look up 'cat'."},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": id0, "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}},
                {"id": id1, "type": "function", "function": {"name": "lookup", "arguments": "{\"lang\":\"en\",\"word\":\"cat\"}"}}
            ]},
            {"role": "tool", "tool_call_id": id0, "content": "3"},
            {"role": "tool", "tool_call_id": id1, "content": "{\"echo\":{\"lang\":\"en\",\"word\":\"cat\"}}"}
        ])
    );
}

#[tokio::test]
async fn non_streaming_parallel_calls_round_trip() {
    round_trip(false).await;
}

#[tokio::test]
async fn streaming_parallel_calls_round_trip() {
    round_trip(true).await;
}

#[tokio::test]
async fn tool_choice_none_still_declares_the_tools() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::text("no tools today"));
    let (answer, _) = ask(
        &provider(&server),
        &start(),
        &tools(),
        ToolChoice::None,
        false,
    )
    .await;
    assert_eq!(answer.expect("answer").message.content, "no tools today");
    let body = &server.bodies()[0];
    assert_eq!(body["tool_choice"], "none");
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "add".into(),
        arguments: "{\"a\":1,\"b\":1}".into(),
        signature: None,
    }
}

#[tokio::test]
async fn the_fake_rejects_an_unanswered_call_and_an_orphan_result_like_openai() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::text("never sent"));
    let openai = provider(&server);
    let mut history = start();
    history.push(Message::Assistant(AssistantMessage {
        content: String::new(),
        tool_calls: vec![call("call_a"), call("call_b")],
        reasoning: None,
        provider_blocks: Vec::new(),
    }));
    history.push(Message::Tool(toolhost::llm::ToolResult {
        tool_call_id: "call_a".into(),
        name: "add".into(),
        content: "2".into(),
        is_error: false,
        parts: Vec::new(),
    }));
    let (result, _) = ask(&openai, &history, &tools(), ToolChoice::Auto, false).await;
    let (name, status, message) = status_of(&result.expect_err("400")).expect("a status error");
    assert_eq!((name.as_str(), status), ("openai", 400));
    assert!(
        message.contains("did not have response messages: call_b"),
        "{message}"
    );

    let orphan = vec![
        Message::user("hi"),
        Message::Tool(toolhost::llm::ToolResult {
            tool_call_id: "call_x".into(),
            name: "add".into(),
            content: "2".into(),
            is_error: false,
            parts: Vec::new(),
        }),
    ];
    let (result, _) = ask(&openai, &orphan, &tools(), ToolChoice::Auto, false).await;
    let (_, _, message) = status_of(&result.expect_err("400")).expect("a status error");
    assert!(
        message.contains("must be a response to a preceeding message with 'tool_calls'"),
        "{message}"
    );
    // A 400 is not retried, and nothing was taken from the queue.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn deepseek_reasoning_content_goes_back_on_the_tool_turn() {
    for stream in [false, true] {
        let server = FakeOpenAi::start_deepseek().await;
        let turn = Turn::calls(vec![FakeCall::new("add", json!({"a": 2, "b": 2}))])
            .with_reasoning("I should add.");
        server.push(turn.clone()).push(Turn::text("4"));
        let mut config = OpenAiConfig::new(http(server.url()), "deepseek-reasoner");
        config.send_reasoning = true;
        let deepseek = OpenAiProvider::new(config).expect("valid config");
        let (first, _) = ask(&deepseek, &start(), &tools(), ToolChoice::Auto, stream).await;
        let first = first.expect("first answer");
        assert_eq!(first.message.reasoning.as_deref(), Some("I should add."));
        let history = answered(start(), &first.message, run_tool);
        let (second, _) = ask(&deepseek, &history, &tools(), ToolChoice::Auto, stream).await;
        assert_eq!(
            second.expect("accepted with reasoning").message.content,
            "4"
        );
        assert_eq!(
            server.bodies()[1]["messages"][2]["reasoning_content"],
            "I should add."
        );

        // Without it, DeepSeek refuses the same history.
        let mut config = OpenAiConfig::new(http(server.url()), "deepseek-reasoner");
        config.send_reasoning = false;
        let forgetful = OpenAiProvider::new(config).expect("valid config");
        let (third, _) = ask(&forgetful, &history, &tools(), ToolChoice::Auto, stream).await;
        let (_, status, message) = status_of(&third.expect_err("400")).expect("a status error");
        assert_eq!(status, 400);
        assert!(message.contains("reasoning_content"), "{message}");
    }
}

#[tokio::test]
async fn llama_cpp_quirks_are_tolerated() {
    for stream in [false, true] {
        let server = FakeOpenAi::start_llama_cpp().await;
        // Random-looking ids first, then the reused `call_0` on two turns.
        server
            .push(Turn::calls(vec![FakeCall::new(
                "add",
                json!({"a": 1, "b": 2}),
            )]))
            .push(Turn::calls(vec![
                FakeCall::new("add", json!({"a": 3, "b": 4})).with_id("call_0"),
            ]))
            .push(Turn::calls(vec![
                FakeCall::new("add", json!({"a": 5, "b": 6})).with_id("call_0"),
            ]))
            .push(Turn::text("done").with_usage(7, 3));
        let llama = provider(&server);
        let mut history = start();
        let mut ids = Vec::new();
        loop {
            let (answer, _) = ask(&llama, &history, &tools(), ToolChoice::Auto, stream).await;
            let answer = answer.expect("llama.cpp answers");
            if answer.message.tool_calls.is_empty() {
                assert_eq!(answer.message.content, "done");
                assert_eq!(answer.usage.output_tokens, 3);
                break;
            }
            assert_eq!(
                answer.message.content, "",
                "llama.cpp's content \"\" is no text"
            );
            assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
            ids.push(answer.message.tool_calls[0].id.clone());
            history = answered(history, &answer.message, run_tool);
        }
        assert_eq!(ids[0].len(), 32);
        assert!(
            ids[0].chars().all(|c| c.is_ascii_alphanumeric()),
            "{}",
            ids[0]
        );
        assert_eq!(&ids[1..], ["call_0", "call_0"]);
        let last = &server.bodies()[3]["messages"];
        assert_eq!(last[7]["tool_call_id"], "call_0");
        assert_eq!(last[7]["content"], "11");

        // A history ending on an assistant turn with calls: llama.cpp's 400.
        let mut dangling = start();
        dangling.push(Message::Assistant(AssistantMessage {
            content: String::new(),
            tool_calls: vec![call("x")],
            reasoning: None,
            provider_blocks: Vec::new(),
        }));
        let (result, _) = ask(&llama, &dangling, &tools(), ToolChoice::Auto, stream).await;
        let (_, _, message) = status_of(&result.expect_err("400")).expect("a status error");
        assert!(
            message.contains("Cannot continue an assistant message"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn malformed_arguments_reach_the_caller_unchanged() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![FakeCall::new(
        "add",
        json!("{\"a\": 1, \"b\":"),
    )]));
    let (answer, _) = ask(
        &provider(&server),
        &start(),
        &tools(),
        ToolChoice::Auto,
        true,
    )
    .await;
    assert_eq!(
        answer.expect("answer").message.tool_calls[0].arguments,
        "{\"a\": 1, \"b\":"
    );
}

#[tokio::test]
async fn a_cut_stream_is_interrupted_not_a_short_answer() {
    let server = FakeOpenAi::start().await;
    // role chunk, text chunk, call head, two argument fragments, then cut.
    server.push(toolhost_tests::providers::Reply::Cut {
        turn: Turn::calls(vec![FakeCall::new(
            "lookup",
            json!({"word": "a rather long word"}),
        )])
        .with_text("ok"),
        events: 5,
    });
    server.push(toolhost_tests::providers::Reply::Cut {
        turn: Turn::text("whole body never arrives"),
        events: 0,
    });
    let openai = provider(&server);
    let (result, _) = ask(&openai, &start(), &tools(), ToolChoice::Auto, true).await;
    assert!(
        matches!(&result, Err(LlmError::StreamInterrupted { provider, .. }) if provider == "openai"),
        "{result:?}"
    );
    let (result, _) = ask(&openai, &start(), &tools(), ToolChoice::Auto, false).await;
    assert!(
        matches!(result, Err(LlmError::StreamInterrupted { .. })),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 2, "a cut body is not retried");
}
