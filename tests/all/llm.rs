//! Integration tests: llm. The provider layer against the loopback fakes
//! in `toolhost_tests::providers`, through the public `Provider` API.

mod anthropic;
mod errors;
mod gemini;
mod ids;
mod images;
mod limits;
mod openai;
mod params;
mod replay;
mod responses;
mod responses_loop;

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::llm::{
    AssistantMessage, ChatRequest, ChatResponse, GenerationParams, HttpConfig, LlmError, Message,
    Provider, ToolCall, ToolChoice, ToolResult,
};
use toolhost::tools::ToolSpec;

const KEY: &str = "test-key-do-not-log";

/// Fast retries so that the error tests finish quickly.
fn http(url: String) -> HttpConfig {
    let mut config = HttpConfig::new(url).with_api_key(KEY);
    config.timeout = Duration::from_secs(10);
    config.initial_backoff = Duration::from_millis(10);
    config.max_backoff = Duration::from_millis(40);
    config
}

/// Two tools with schemars-style schemas (keywords Gemini rejects).
fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "add".into(),
            description: "Add two integers.".into(),
            input_schema: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "AddInput", "type": "object", "additionalProperties": false,
                "properties": {"a": {"type": "integer", "format": "int64"}, "b": {"type": "integer", "format": "int64"}},
                "required": ["a", "b"]
            }),
        },
        ToolSpec {
            name: "lookup".into(),
            description: "Look a word up.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"word": {"type": "string"}, "lang": {"$ref": "#/$defs/Lang"}},
                "required": ["word"],
                "$defs": {"Lang": {"type": "string", "enum": ["en", "fr"]}}
            }),
        },
    ]
}

/// One request; returns the answer and the text pieces streamed.
async fn ask(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &[ToolSpec],
    choice: ToolChoice,
    stream: bool,
) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let pieces = Mutex::new(Vec::new());
    let sink = |text: &str| {
        pieces
            .lock()
            .expect("no panics while locked")
            .push(text.to_owned())
    };
    let params = GenerationParams {
        tool_choice: choice,
        ..GenerationParams::default()
    };
    let result = provider
        .complete(ChatRequest {
            messages,
            tools,
            params: &params,
            stream,
            on_text: Some(&sink),
            deferred: &[],
        })
        .await;
    (result, pieces.into_inner().expect("no panics while locked"))
}

/// The conversation after `answer`, with every call answered by `result(call)`.
fn answered(
    mut history: Vec<Message>,
    answer: &AssistantMessage,
    result: impl Fn(&ToolCall) -> (String, bool),
) -> Vec<Message> {
    history.push(Message::Assistant(answer.clone()));
    for call in &answer.tool_calls {
        let (content, is_error) = result(call);
        history.push(Message::Tool(ToolResult {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
            parts: Vec::new(),
        }));
    }
    history
}

/// Sums `add` calls, echoes the rest.
fn run_tool(call: &ToolCall) -> (String, bool) {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    match call.name.as_str() {
        "add" => match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => ((a + b).to_string(), false),
            _ => ("arguments must be integers a and b".into(), true),
        },
        _ => (json!({"echo": args}).to_string(), false),
    }
}

fn start() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("What is 1+2? Also look up 'cat'."),
    ]
}

fn args(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).expect("the fake sends JSON arguments")
}

fn status_of(error: &LlmError) -> Option<(String, u16, String)> {
    match error {
        LlmError::Status {
            provider,
            status,
            message,
        } => Some((provider.clone(), *status, message.clone())),
        _ => None,
    }
}
