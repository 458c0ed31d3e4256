//! Resumed transcripts whose call ids a provider's alphabet refuses: each
//! wire format maps them into its alphabet, the same way in a call and its
//! result, and two ids stay two ids.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, AssistantMessage, GeminiConfig, GeminiProvider, Message,
    OpenAiConfig, OpenAiProvider, ToolCall, ToolChoice, ToolResult,
};
use toolhost_tests::providers::{FakeAnthropic, FakeGemini, FakeOpenAi, Turn};

use super::{ask, http, start, tools};

/// Ids from other providers and hand-written transcripts: bad characters,
/// two that differ only in a bad character, one that is fine, one too
/// long for OpenAI.
const IDS: [&str; 6] = [
    "call:1/a",
    "toolu_01.x",
    "a.b",
    "a/b",
    "a_b",
    "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f",
];

/// The transcript: the calls, then their results in reverse order (each
/// result says which id it answers).
fn resumed() -> Vec<Message> {
    let mut history = start();
    history.push(Message::Assistant(AssistantMessage {
        content: String::new(),
        tool_calls: IDS
            .iter()
            .enumerate()
            .map(|(i, id)| ToolCall {
                id: (*id).into(),
                name: "add".into(),
                arguments: json!({"a": i, "b": 0}).to_string(),
                signature: None,
            })
            .collect(),
        reasoning: None,
        provider_blocks: Vec::new(),
    }));
    for id in IDS.iter().rev() {
        history.push(Message::Tool(ToolResult {
            tool_call_id: (*id).into(),
            name: "add".into(),
            content: format!("answer to {id}"),
            is_error: false,
            parts: Vec::new(),
        }));
    }
    history
}

fn is_anthropic_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks the wire ids: one per original, distinct, each result's id that
/// of the call it answers (call `i` has `a = i`), and `ok(id)` for each.
fn check_pairs(calls: &[(i64, String)], results: &[(String, String)], ok: impl Fn(&str) -> bool) {
    assert_eq!(calls.len(), IDS.len(), "{calls:?}");
    assert_eq!(results.len(), IDS.len(), "{results:?}");
    let distinct: BTreeSet<&str> = calls.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(distinct.len(), IDS.len(), "{calls:?}");
    for (a, wire) in calls {
        assert!(ok(wire), "{wire:?} is not acceptable");
        let original = IDS[usize::try_from(*a).unwrap()];
        let answers: Vec<&str> = results
            .iter()
            .filter(|(_, content)| *content == format!("answer to {original}"))
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(answers, [wire.as_str()], "{original} -> {wire}");
    }
    // Ids the format accepts are sent as they are.
    assert!(calls.iter().any(|(_, id)| id == "a_b"), "{calls:?}");
}

async fn anthropic(stream: bool) {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("done"));
    let claude =
        AnthropicProvider::new(AnthropicConfig::new(http(server.url()), "claude-test")).unwrap();
    let history = resumed();
    let (answer, _) = ask(&claude, &history, &tools(), ToolChoice::Auto, stream).await;
    assert_eq!(answer.expect("accepted").message.content, "done");
    let body = &server.requests()[0].body;
    let blocks = |role: &str| -> Vec<Value> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == role)
            .flat_map(|m| m["content"].as_array().unwrap().clone())
            .collect()
    };
    let calls: Vec<(i64, String)> = blocks("assistant")
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            (
                b["input"]["a"].as_i64().unwrap(),
                b["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let results: Vec<(String, String)> = blocks("user")
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_owned(),
                b["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    check_pairs(&calls, &results, |id| is_anthropic_id(id) && id.len() <= 64);
    // The neutral history keeps the ids it had.
    assert_eq!(history, resumed());
}

#[tokio::test]
async fn anthropic_gets_resumed_ids_in_its_alphabet() {
    anthropic(false).await;
}

#[tokio::test]
async fn anthropic_gets_resumed_ids_in_its_alphabet_when_streaming() {
    anthropic(true).await;
}

#[tokio::test]
async fn openai_gets_resumed_ids_of_at_most_40_characters() {
    for stream in [false, true] {
        let server = FakeOpenAi::start().await;
        server.push(Turn::text("done"));
        let gpt = OpenAiProvider::new(OpenAiConfig::new(http(server.url()), "gpt-test")).unwrap();
        let (answer, _) = ask(&gpt, &resumed(), &tools(), ToolChoice::Auto, stream).await;
        assert_eq!(answer.expect("accepted").message.content, "done");
        let body = &server.requests()[0].body;
        let messages = body["messages"].as_array().unwrap();
        let calls: Vec<(i64, String)> = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .map(|c| {
                let args: Value =
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                (
                    args["a"].as_i64().unwrap(),
                    c["id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let results: Vec<(String, String)> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        check_pairs(&calls, &results, |id| id.len() <= 40 && is_anthropic_id(id));
    }
}

#[tokio::test]
async fn gemini_gets_resumed_ids_in_the_function_name_alphabet() {
    let server = FakeGemini::start().await;
    server.push(Turn::text("done"));
    let gemini = GeminiProvider::new(GeminiConfig::new(http(server.url()), "gemini-test")).unwrap();
    let (answer, _) = ask(&gemini, &resumed(), &tools(), ToolChoice::Auto, false).await;
    assert_eq!(answer.expect("accepted").message.content, "done");
    let body = &server.requests()[0].body;
    let parts: Vec<Value> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap().clone())
        .collect();
    let calls: Vec<(i64, String)> = parts
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(|c| {
            (
                c["args"]["a"].as_i64().unwrap(),
                c["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let results: Vec<(String, String)> = parts
        .iter()
        .filter_map(|p| p.get("functionResponse"))
        .map(|r| {
            let content = &r["response"];
            let text = content
                .as_object()
                .and_then(|o| o.values().find_map(Value::as_str))
                .unwrap_or_default()
                .to_owned();
            (r["id"].as_str().unwrap().to_owned(), text)
        })
        .collect();
    check_pairs(&calls, &results, |id| id.len() <= 64 && is_anthropic_id(id));
}
