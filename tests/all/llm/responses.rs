//! OpenAI Responses against its strict fake: items, reasoning carried back
//! adjacent to its calls, every 400 the real API gives for a broken
//! history (streaming and not), errors and retries.

use serde_json::{Value, json};
use toolhost::llm::{
    AssistantMessage, FinishReason, GenerationParams, LlmError, Message, ResponsesConfig,
    ResponsesProvider, ToolCall, ToolChoice, ToolResult,
};
use toolhost_tests::providers::{FakeCall, FakeResponses, Reply, Turn};

use super::{answered, args, ask, http, run_tool, start, status_of, tools};

fn provider(server: &FakeResponses) -> ResponsesProvider {
    ResponsesProvider::new(ResponsesConfig::new(http(server.url()), "o4-mini"))
        .expect("valid config")
}

/// A reasoning model's turn: reasoning, a preamble, two calls.
fn reasoned_calls() -> Turn {
    Turn::calls(vec![
        FakeCall::new("add", json!({"a": 1, "b": 2})),
        FakeCall::new("lookup", json!({"word": "cat", "lang": "en"})),
    ])
    .with_text("Let me check.")
    .with_reasoning("Add, then look up.")
    .with_usage(31, 17)
}

/// (type, id or call_id or role) of each input item of a request body.
fn items(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let name = item["id"]
                .as_str()
                .or(item["call_id"].as_str())
                .or(item["role"].as_str())
                .unwrap_or_default();
            (
                item["type"].as_str().unwrap_or_default().to_owned(),
                name.to_owned(),
            )
        })
        .collect()
}

async fn round_trip(stream: bool) {
    let server = FakeResponses::start().await;
    server
        .push(reasoned_calls())
        .push(Turn::text("1+2 is 3; a cat is a cat.").with_usage(50, 9));
    let responses = provider(&server);
    let (first, pieces) = ask(&responses, &start(), &tools(), ToolChoice::Auto, stream).await;
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
    assert!(calls[0].id.starts_with("call_"), "{}", calls[0].id);
    if stream {
        assert!(pieces.len() > 1, "text arrives in pieces: {pieces:?}");
        assert_eq!(pieces.concat(), "Let me check.");
    } else {
        assert!(pieces.is_empty());
    }

    let history = answered(start(), &first.message, run_tool);
    let (second, _) = ask(&responses, &history, &tools(), ToolChoice::Auto, stream).await;
    let second = second.expect("the strict server accepts the answered history");
    assert_eq!(second.message.content, "1+2 is 3; a cat is a cat.");
    assert_eq!(second.finish_reason, FinishReason::Stop);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer test-key-do-not-log")
    );
    assert_eq!(requests[0].path, "/v1/responses");
    let body = &requests[1].body;
    assert_eq!(body["stream"], stream);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "add", "description": "Add two integers.",
               "parameters": tools()[0].input_schema, "strict": false})
    );
    assert!(body.get("tool_choice").is_none(), "auto is not sent");
    // The reasoning item, its preamble and the calls, in the model's order.
    let kinds: Vec<String> = items(body).into_iter().map(|(kind, _)| kind).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    let input = &body["input"];
    assert!(
        input[2]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("rs_"))
    );
    assert_eq!(
        input[2]["encrypted_content"],
        format!("enc:{}", input[2]["id"].as_str().unwrap_or_default())
    );
    assert_eq!(input[4]["call_id"], calls[0].id.as_str());
    assert_eq!(input[4]["arguments"], "{\"a\":1,\"b\":2}");
    assert!(
        input[4]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("fc_"))
    );
    assert_eq!(
        input[6],
        json!({"type": "function_call_output", "call_id": calls[0].id, "output": "3"})
    );
}

#[tokio::test]
async fn non_streaming_reasoned_parallel_calls_round_trip() {
    round_trip(false).await;
}

#[tokio::test]
async fn streaming_reasoned_parallel_calls_round_trip() {
    round_trip(true).await;
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "add".into(),
        arguments: "{\"a\":1,\"b\":1}".into(),
        signature: None,
    }
}

fn result(id: &str) -> Message {
    Message::Tool(ToolResult {
        tool_call_id: id.into(),
        name: "add".into(),
        content: "2".into(),
        is_error: false,
        parts: Vec::new(),
    })
}

async fn rejected(server: &FakeResponses, history: &[Message], stream: bool) -> String {
    rejected_by(&provider(server), history, stream).await
}

/// The provider's own message of the 400 `provider` gets for `history`.
async fn rejected_by(provider: &ResponsesProvider, history: &[Message], stream: bool) -> String {
    let (answer, _) = ask(provider, history, &tools(), ToolChoice::Auto, stream).await;
    let (name, status, message) = status_of(&answer.expect_err("400")).expect("a status error");
    assert_eq!((name.as_str(), status), ("openai-responses", 400));
    // The provider's own message, after its error type.
    message
        .strip_prefix("invalid_request_error: ")
        .unwrap_or_else(|| panic!("an invalid_request_error: {message}"))
        .to_owned()
}

#[tokio::test]
async fn the_fake_rejects_an_unanswered_call_and_an_orphan_output_like_openai() {
    for stream in [false, true] {
        let server = FakeResponses::start().await;
        server.push(Turn::text("never sent"));
        let mut history = start();
        history.push(Message::Assistant(AssistantMessage {
            content: String::new(),
            tool_calls: vec![call("call_a"), call("call_b")],
            reasoning: None,
            provider_blocks: Vec::new(),
        }));
        history.push(result("call_a"));
        let message = rejected(&server, &history, stream).await;
        assert_eq!(message, "No tool output found for function call call_b.");

        let orphan = vec![Message::user("hi"), result("call_x")];
        let message = rejected(&server, &orphan, stream).await;
        assert_eq!(
            message,
            "No tool call found for function call output with call_id call_x."
        );
        // A 400 is not retried, and nothing was taken from the queue.
        assert_eq!(server.requests().len(), 2);
        assert_eq!(server.pending(), 1);
    }
}

/// The first answer of a reasoning model calling `add` (no preamble).
async fn reasoned_answer(server: &FakeResponses, stream: bool) -> AssistantMessage {
    server.push(
        Turn::calls(vec![FakeCall::new("add", json!({"a": 2, "b": 2}))])
            .with_reasoning("I should add."),
    );
    let (answer, _) = ask(
        &provider(server),
        &start(),
        &tools(),
        ToolChoice::Auto,
        stream,
    )
    .await;
    answer.expect("first answer").message
}

fn signature(message: &AssistantMessage) -> Value {
    let text = message.tool_calls[0]
        .signature
        .as_deref()
        .expect("the call carries its items");
    serde_json::from_str(text).expect("JSON")
}

fn with_signature(message: &AssistantMessage, state: &Value) -> AssistantMessage {
    let mut message = message.clone();
    message.tool_calls[0].signature = Some(state.to_string());
    message
}

#[tokio::test]
async fn a_reasoning_item_apart_from_its_call_is_rejected_either_way_round() {
    for stream in [false, true] {
        let server = FakeResponses::start().await;
        let answer = reasoned_answer(&server, stream).await;
        let state = signature(&answer);
        let fc = state["responses_item_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let rs = state["responses_before"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(fc.starts_with("fc_") && rs.starts_with("rs_"), "{state}");

        // As carried, the server takes it.
        server.push(Turn::text("4"));
        let history = answered(start(), &answer, run_tool);
        let (ok, _) = ask(
            &provider(&server),
            &history,
            &tools(),
            ToolChoice::Auto,
            stream,
        )
        .await;
        assert_eq!(ok.expect("accepted").message.content, "4");

        // The call without its reasoning item.
        let mut bare = state.clone();
        bare["responses_before"] = json!([]);
        let history = answered(start(), &with_signature(&answer, &bare), run_tool);
        let message = rejected(&server, &history, stream).await;
        assert_eq!(
            message,
            format!(
                "Item '{fc}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
            )
        );

        // The reasoning item without the call that followed it.
        let mut anonymous = state.clone();
        anonymous["responses_item_id"] = Value::Null;
        let history = answered(start(), &with_signature(&answer, &anonymous), run_tool);
        let message = rejected(&server, &history, stream).await;
        assert_eq!(
            message,
            format!(
                "Item '{rs}' of type 'reasoning' was provided without its required following item."
            )
        );

        // Reasoning without its encrypted content, with nothing stored.
        let mut plain = state.clone();
        if let Some(item) = plain["responses_before"][0].as_object_mut() {
            item.remove("encrypted_content");
        }
        let history = answered(start(), &with_signature(&answer, &plain), run_tool);
        let message = rejected(&server, &history, stream).await;
        assert!(
            message.contains("Items are not persisted when `store` is set to false"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn stored_responses_send_no_include() {
    let server = FakeResponses::start().await;
    server.push(Turn::text("hi"));
    let mut config = ResponsesConfig::new(http(server.url()), "gpt-test");
    config.store = true;
    config.strict = true;
    let stored = ResponsesProvider::new(config).expect("valid config");
    let (answer, _) = ask(&stored, &start(), &tools(), ToolChoice::Required, false).await;
    assert_eq!(answer.expect("answer").message.content, "hi");
    let body = &server.bodies()[0];
    assert_eq!(body["store"], true);
    assert!(body.get("include").is_none(), "{body}");
    assert_eq!(body["tools"][1]["strict"], true);
    assert_eq!(body["tool_choice"], "required");
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_request() {
    let server = FakeResponses::start().await;
    server.fail_stream("The server had an error while processing your request.");
    let (answer, _) = ask(
        &provider(&server),
        &start(),
        &tools(),
        ToolChoice::Auto,
        true,
    )
    .await;
    match answer {
        Err(LlmError::StreamInterrupted { provider, message }) => {
            assert_eq!(provider, "openai-responses");
            assert!(
                message.contains("had an error while processing"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_and_a_400_is_the_provider_s_own() {
    let server = FakeResponses::start().await;
    server
        .push(Reply::rate_limited("0"))
        .push(Reply::error(503, "The engine is currently overloaded"))
        .push(Turn::text("after two retries"));
    let responses = provider(&server);
    let (answer, _) = ask(&responses, &start(), &tools(), ToolChoice::Auto, false).await;
    assert_eq!(answer.expect("answer").message.content, "after two retries");
    assert_eq!(server.requests().len(), 3);

    server.push(Reply::error(
        400,
        "Invalid 'input[1].content': string too long.",
    ));
    let (answer, _) = ask(&responses, &start(), &tools(), ToolChoice::Auto, true).await;
    let (_, status, message) = status_of(&answer.expect_err("400")).expect("a status error");
    assert_eq!(status, 400);
    assert!(
        message.contains("Invalid 'input[1].content': string too long."),
        "{message}"
    );
    assert_eq!(server.requests().len(), 4, "a 400 is not retried");
}

#[tokio::test]
async fn seed_and_stop_are_refused_before_sending() {
    let server = FakeResponses::start().await;
    let responses = provider(&server);
    for (params, name) in [
        (
            GenerationParams {
                seed: Some(7),
                ..GenerationParams::default()
            },
            "seed",
        ),
        (
            GenerationParams {
                stop: vec!["END".into()],
                ..GenerationParams::default()
            },
            "stop",
        ),
    ] {
        let messages = start();
        let request = toolhost::llm::ChatRequest {
            messages: &messages,
            tools: &tools(),
            deferred: &[],
            params: &params,
            stream: false,
            on_text: None,
        };
        let error = toolhost::llm::Provider::complete(&responses, request)
            .await
            .expect_err("refused");
        match error {
            LlmError::InvalidParams { provider, source } => {
                assert_eq!(
                    (provider.as_str(), source.parameter.as_str()),
                    ("openai-responses", name)
                );
                assert!(
                    source.message.contains("OpenAI Responses has no"),
                    "{source}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_cut_stream_is_interrupted_not_a_short_answer() {
    let server = FakeResponses::start().await;
    server.push(Reply::Cut {
        turn: Turn::calls(vec![FakeCall::new(
            "lookup",
            json!({"word": "a rather long word"}),
        )]),
        events: 4,
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
        matches!(&answer, Err(LlmError::StreamInterrupted { provider, .. }) if provider == "openai-responses"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn only_reasoning_models_ask_for_encrypted_reasoning() {
    let server = FakeResponses::start().await;
    server.push(Turn::text("no reasoning here"));
    let plain = ResponsesProvider::new(ResponsesConfig::new(http(server.url()), "gpt-4.1-mini"))
        .expect("valid config");
    let (answer, _) = ask(&plain, &start(), &tools(), ToolChoice::Auto, false).await;
    assert_eq!(
        answer.expect("accepted").message.content,
        "no reasoning here"
    );
    assert!(server.bodies()[0].get("include").is_none());

    // Forced on for a model that has no reasoning: OpenAI's own 400.
    let mut config = ResponsesConfig::new(http(server.url()), "gpt-4.1-mini");
    config.encrypted_reasoning = true;
    let forced = ResponsesProvider::new(config).expect("valid config");
    let message = rejected_by(&forced, &start(), false).await;
    assert_eq!(
        message,
        "Encrypted content is not supported with this model."
    );
}
