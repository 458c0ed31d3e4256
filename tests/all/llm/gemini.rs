//! Gemini generateContent.

use serde_json::json;
use toolhost::llm::{FinishReason, GeminiConfig, GeminiProvider, LlmError, Message, ToolChoice};
use toolhost_tests::providers::{FakeCall, FakeGemini, Reply, Turn};

use super::{answered, args, ask, http, run_tool, start, status_of, tools};

fn provider(server: &FakeGemini) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig::new(http(server.url()), "gemini-test")).expect("valid config")
}

fn two_calls() -> Turn {
    Turn::calls(vec![
        FakeCall::new("add", json!({"a": 1, "b": 2})).with_signature("sig-first"),
        FakeCall::new("lookup", json!({"word": "cat"})),
    ])
    .with_usage(22, 8)
}

async fn round_trip(stream: bool) {
    let server = FakeGemini::start().await;
    server
        .push(two_calls())
        .push(two_calls())
        .push(
            Turn::calls(vec![FakeCall::new("add", json!({"a": 3, "b": 3}))]).with_text("One more."),
        )
        .push(Turn::text("Done: 3 and 6."));
    let gemini = provider(&server);
    let (first, _) = ask(&gemini, &start(), &tools(), ToolChoice::Auto, stream).await;
    let first = first.expect("first answer");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (22, 8)
    );
    let ids: Vec<&str> = first
        .message
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["gemini_call_0_0", "gemini_call_0_1"]);
    assert_eq!(
        first.message.tool_calls[0].signature.as_deref(),
        Some("sig-first")
    );
    assert_eq!(first.message.tool_calls[1].signature, None);
    assert_eq!(args(&first.message.tool_calls[1]), json!({"word": "cat"}));

    // The same history gets the same ids: they are stable.
    let (again, _) = ask(&gemini, &start(), &tools(), ToolChoice::Auto, stream).await;
    assert_eq!(
        again.expect("same answer").message.tool_calls,
        first.message.tool_calls
    );

    let history = answered(start(), &first.message, run_tool);
    let (second, pieces) = ask(&gemini, &history, &tools(), ToolChoice::Auto, stream).await;
    let second = second.expect("accepted: signature and both responses sent back");
    assert_eq!(
        second.message.tool_calls[0].id, "gemini_call_1_0",
        "ids never repeat in a conversation"
    );
    assert_eq!(second.message.content, "One more.");
    assert_eq!(pieces.concat(), if stream { "One more." } else { "" });
    let history = answered(history, &second.message, run_tool);
    let (third, _) = ask(&gemini, &history, &tools(), ToolChoice::None, stream).await;
    assert_eq!(third.expect("final").message.content, "Done: 3 and 6.");

    let requests = server.requests();
    let suffix = if stream {
        ":streamGenerateContent?alt=sse"
    } else {
        ":generateContent"
    };
    assert_eq!(
        requests[0].path,
        format!("/v1beta/models/gemini-test{suffix}")
    );
    assert_eq!(
        requests[0].header("x-goog-api-key"),
        Some("test-key-do-not-log")
    );
    let body = &requests[2].body;
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][1]["parameters"],
        json!({"type": "object", "required": ["word"], "properties": {
            "word": {"type": "string"}, "lang": {"type": "string", "enum": ["en", "fr"]}}})
    );
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}, "thoughtSignature": "sig-first"},
            {"functionCall": {"name": "lookup", "args": {"word": "cat"}}}
        ]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "add", "response": {"result": 3}}},
            {"functionResponse": {"name": "lookup", "response": {"echo": {"word": "cat"}}}}
        ]})
    );
    assert_eq!(
        requests[3].body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "NONE"}})
    );
}

#[tokio::test]
async fn non_streaming_synthetic_ids_and_signatures() {
    round_trip(false).await;
}

#[tokio::test]
async fn streaming_synthetic_ids_and_signatures() {
    round_trip(true).await;
}

#[tokio::test]
async fn a_dropped_signature_or_response_is_rejected_like_gemini() {
    let server = FakeGemini::start().await;
    server.push(two_calls());
    let gemini = provider(&server);
    let (first, _) = ask(&gemini, &start(), &tools(), ToolChoice::Auto, false).await;
    let mut message = first.expect("first").message;
    message.tool_calls[0].signature = None;
    let history = answered(start(), &message, run_tool);
    let (result, _) = ask(&gemini, &history, &tools(), ToolChoice::Auto, false).await;
    let (name, status, text) = status_of(&result.expect_err("400")).expect("status");
    assert_eq!((name.as_str(), status), ("gemini", 400));
    assert!(
        text.contains("Function call is missing a thought_signature"),
        "{text}"
    );

    let mut short = answered(start(), &message, run_tool);
    short.pop();
    let (result, _) = ask(&gemini, &short, &tools(), ToolChoice::Auto, false).await;
    let (_, _, text) = status_of(&result.expect_err("400")).expect("status");
    assert!(
        text.contains("number of function response parts is equal"),
        "{text}"
    );
}

#[tokio::test]
async fn ids_gemini_gives_are_kept_and_sent_back() {
    let server = FakeGemini::start().await;
    server
        .push(Turn::calls(vec![
            FakeCall::new("add", json!({"a": 1, "b": 1})).with_id("fc-77"),
        ]))
        .push(Turn::text("2"));
    let gemini = provider(&server);
    let (first, _) = ask(&gemini, &start(), &tools(), ToolChoice::Auto, true).await;
    let first = first.expect("first");
    assert_eq!(first.message.tool_calls[0].id, "fc-77");
    let history = answered(start(), &first.message, run_tool);
    let (second, _) = ask(&gemini, &history, &tools(), ToolChoice::Auto, true).await;
    second.expect("accepted");
    let body = &server.bodies()[1];
    assert_eq!(
        body["contents"][1]["parts"][0]["functionCall"]["id"],
        "fc-77"
    );
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"]["id"],
        "fc-77"
    );
}

#[tokio::test]
async fn a_stream_without_finish_reason_is_interrupted() {
    let server = FakeGemini::start().await;
    server.push(Reply::Cut {
        turn: Turn::calls(vec![FakeCall::new("add", json!({"a": 1, "b": 1}))])
            .with_text("Adding now"),
        events: 2,
    });
    let (result, pieces) = ask(
        &provider(&server),
        &[Message::user("add")],
        &tools(),
        ToolChoice::Auto,
        true,
    )
    .await;
    assert!(
        matches!(&result, Err(LlmError::StreamInterrupted { provider, .. }) if provider == "gemini"),
        "{result:?}"
    );
    assert_eq!(
        pieces.concat(),
        "Adding n",
        "what arrived was shown, then the error"
    );
}
