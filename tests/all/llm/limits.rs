//! Issue 36, class 4: every read of a provider's answer is capped. A real
//! loopback server sends a body without end (JSON, an SSE line that never
//! ends, data lines of one event that never dispatch, small events without
//! end, an error body without end); the request fails at the cap with
//! [`LlmError::TooLarge`] naming it, after reading about the cap and no
//! more, and the loop keeps the conversation for a resume.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, GeminiConfig, GeminiProvider, HttpConfig, LlmError,
    Message, OpenAiConfig, OpenAiProvider, Provider, ProviderKind, ProviderOptions, ResponseLimits,
    ResponsesConfig, ResponsesProvider, ToolChoice,
};
use toolhost::runner::{RunErrorKind, RunnerConfig, StopReason, ToolRunner};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::providers::{
    FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, FakeResponses, Reply, Turn,
};

use super::{ask, http, start, tools};

/// Small caps, so that each test reads little.
const BODY: usize = 1 << 20;
const EVENT: usize = 256 << 10;
const STREAM: usize = 2 << 20;

fn capped(url: String) -> HttpConfig {
    let mut config = http(url);
    config.limits = ResponseLimits {
        max_body_bytes: BODY,
        max_event_bytes: EVENT,
        max_stream_bytes: STREAM,
    };
    config
}

/// 64 KiB of `a`.
fn filler() -> String {
    "a".repeat(64 << 10)
}

/// One request, which must end (not hang, not grow until killed) in a
/// `TooLarge` naming `setting` and how to raise it.
async fn too_large(provider: &dyn Provider, stream: bool, setting: &str, limit: usize) {
    let (messages, tools) = (start(), tools());
    let asked = ask(provider, &messages, &tools, ToolChoice::Auto, stream);
    let (answer, _) = tokio::time::timeout(Duration::from_secs(60), asked)
        .await
        .expect("the read stops at the cap");
    let error = answer.expect_err("over the cap");
    let LlmError::TooLarge {
        setting: named,
        limit: cap,
        ..
    } = &error
    else {
        panic!("expected TooLarge {setting}, got {error:?}");
    };
    assert_eq!((*named, *cap), (setting, limit), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(setting)
            && message.contains(&limit.to_string())
            && message.contains(&format!("--{}", setting.replace('_', "-"))),
        "the message names the cap and how to raise it: {message}"
    );
}

fn openai(server: &FakeOpenAi) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(capped(server.url()), "m")).expect("config")
}

fn anthropic(server: &FakeAnthropic) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig::new(capped(server.url()), "m")).expect("config")
}

fn responses(server: &FakeResponses) -> ResponsesProvider {
    ResponsesProvider::new(ResponsesConfig::new(capped(server.url()), "gpt-5-mini"))
        .expect("config")
}

fn gemini(server: &FakeGemini) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig::new(capped(server.url()), "gemini-2.5-flash"))
        .expect("config")
}

#[tokio::test]
async fn a_json_body_without_end_fails_at_the_body_cap_without_a_retry() {
    let chat = FakeOpenAi::start().await;
    chat.push(Reply::endless(
        200,
        "application/json",
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":""#,
        filler(),
    ));
    too_large(&openai(&chat), false, "max_body_bytes", BODY).await;
    assert_eq!(chat.requests().len(), 1, "a cap is not retried");

    let claude = FakeAnthropic::start().await;
    claude.push(Reply::endless(
        200,
        "application/json",
        r#"{"type":"message","content":[{"type":"text","text":""#,
        filler(),
    ));
    too_large(&anthropic(&claude), false, "max_body_bytes", BODY).await;
    assert_eq!(claude.requests().len(), 1);
}

/// The default caps hold too: a 17 MiB body is refused at 16 MiB.
#[tokio::test]
async fn the_default_body_cap_is_16_mib() {
    assert_eq!(
        ResponseLimits::default(),
        ResponseLimits {
            max_body_bytes: 16 << 20,
            max_event_bytes: 4 << 20,
            max_stream_bytes: 64 << 20,
        }
    );
    let server = FakeResponses::start().await;
    server.push(Reply::Raw {
        status: 200,
        content_type: "application/json",
        head: r#"{"object":"response","status":"completed","output":[],"x":""#.into(),
        chunk: filler(),
        times: Some(17 * 16),
    });
    let provider = ResponsesProvider::new(ResponsesConfig::new(http(server.url()), "gpt-5-mini"))
        .expect("config");
    too_large(&provider, false, "max_body_bytes", 16 << 20).await;
}

#[tokio::test]
async fn an_sse_line_without_end_fails_at_the_event_cap() {
    let server = FakeResponses::start().await;
    server.push(Reply::endless(
        200,
        "text/event-stream",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"",
        filler(),
    ));
    too_large(&responses(&server), true, "max_event_bytes", EVENT).await;

    let gemini_server = FakeGemini::start().await;
    gemini_server.push(Reply::endless(
        200,
        "text/event-stream",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"",
        filler(),
    ));
    too_large(&gemini(&gemini_server), true, "max_event_bytes", EVENT).await;

    // A comment line that never ends is held no more than data.
    let chat = FakeOpenAi::start().await;
    chat.push(Reply::endless(200, "text/event-stream", ": ", filler()));
    too_large(&openai(&chat), true, "max_event_bytes", EVENT).await;
}

#[tokio::test]
async fn data_lines_of_one_event_without_a_blank_line_fail_at_the_event_cap() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::endless(
        200,
        "text/event-stream",
        "event: content_block_delta\n",
        format!("data: {}\n", "b".repeat(1000)),
    ));
    too_large(&anthropic(&server), true, "max_event_bytes", EVENT).await;
}

#[tokio::test]
async fn small_events_without_end_fail_at_the_stream_cap() {
    let chat = FakeOpenAi::start().await;
    let delta = json!({"id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]});
    chat.push(Reply::endless(
        200,
        "text/event-stream",
        "",
        format!("data: {delta}\n\n").repeat(64),
    ));
    too_large(&openai(&chat), true, "max_stream_bytes", STREAM).await;

    let server = FakeResponses::start().await;
    let delta = json!({"type": "response.output_text.delta", "output_index": 0,
        "content_index": 0, "delta": "a"});
    server.push(Reply::endless(
        200,
        "text/event-stream",
        "",
        format!("event: response.output_text.delta\ndata: {delta}\n\n").repeat(64),
    ));
    too_large(&responses(&server), true, "max_stream_bytes", STREAM).await;
}

/// An error body is read for its message, up to 64 KiB, and the rest is
/// left unread: a 500 whose body never ends is still a readable HTTP 500,
/// retried as 500s are.
#[tokio::test]
async fn an_error_body_without_end_is_read_for_its_start_only() {
    let server = FakeOpenAi::start().await;
    for _ in 0..3 {
        server.push(Reply::endless(
            500,
            "application/json",
            "upstream failed: ",
            filler(),
        ));
    }
    let (provider, messages, tools) = (openai(&server), start(), tools());
    let asked = ask(&provider, &messages, &tools, ToolChoice::Auto, false);
    let (answer, _) = tokio::time::timeout(Duration::from_secs(60), asked)
        .await
        .expect("the error body is not read to its end");
    match answer {
        Err(LlmError::Status {
            status: 500,
            message,
            ..
        }) => assert!(message.starts_with("upstream failed: aaa"), "{message}"),
        other => panic!("expected HTTP 500, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3, "one try and two retries");
}

/// The loop stops with the provider's error and keeps the conversation up
/// to it, so that the run can be resumed (with a larger cap).
#[tokio::test]
async fn the_loop_keeps_the_conversation_when_an_answer_is_over_a_cap() {
    let server = FakeResponses::start().await;
    server.push(Turn::calls(vec![FakeCall::new(
        "add",
        json!({"a": 1, "b": 2}),
    )]));
    server.push(Reply::endless(
        200,
        "application/json",
        r#"{"object":"response","output":[{"type":"message","content":[{"type":"output_text","text":""#,
        filler(),
    ));
    let provider = ProviderKind::OpenAiResponses
        .build(ProviderOptions {
            base_url: Some(server.url()),
            model: Some("gpt-5-mini".into()),
            api_key: Some("test-key".into()),
            limits: ResponseLimits {
                max_body_bytes: BODY,
                ..ResponseLimits::default()
            },
            ..ProviderOptions::default()
        })
        .expect("provider");
    let registry = ToolRegistry::new();
    registry
        .register(NativeTool::new(
            "add",
            "Adds a and b.",
            json!({"type": "object"}),
            |input: serde_json::Value| async move {
                Ok(json!(
                    input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)
                ))
            },
        ))
        .expect("add");
    let run = ToolRunner::new(
        provider,
        Arc::new(registry),
        RunnerConfig::default(),
        vec![Message::user("add 1 and 2")],
    );
    let error = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the read stops at the cap")
        .expect_err("the second answer is over the cap");
    assert!(
        matches!(
            error.kind,
            RunErrorKind::Provider {
                iteration: 2,
                source: LlmError::TooLarge {
                    setting: "max_body_bytes",
                    ..
                },
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.outcome.stop_reason, StopReason::Error);
    let messages = error.messages();
    assert_eq!(
        messages.len(),
        3,
        "user, the call, its result: {messages:?}"
    );
    assert_eq!(toolhost::llm::check_messages(messages), Ok(()));
    assert!(matches!(messages.last(), Some(Message::Tool(r)) if r.content == "3"));
}
