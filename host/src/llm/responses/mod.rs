//! OpenAI Responses (`POST {base_url}/responses`), the API OpenAI's own
//! agent SDKs default to, beside Chat Completions.
//!
//! Wire facts this module relies on:
//! - the history is `input` items: `{type:"message", role, content}`,
//!   `{type:"function_call", id?, call_id, name, arguments}` (a JSON
//!   *string*, sent back as the model wrote it) and
//!   `{type:"function_call_output", call_id, output}`; the API answers 400
//!   to a call without its output and to an output without its call, so
//!   the loop's invariant holds over these items as over chat messages;
//! - tools go as `{type:"function", name, description, parameters,
//!   strict}`; `strict` defaults to `true` on this API, which refuses most
//!   schemas, so it is sent `false` unless [`ResponsesConfig::strict`];
//!   `tool_choice` and `parallel_tool_calls` are sent only with tools;
//! - nothing is stored by the provider (`store: false`, the whole history
//!   is sent each time) unless [`ResponsesConfig::store`]. Without storage
//!   a reasoning model's request asks `include:
//!   ["reasoning.encrypted_content"]`: the reasoning items come back with
//!   their content encrypted, and can only be sent back with it. Other
//!   models answer that `include` with 400 "Encrypted content is not
//!   supported with this model" ([`ResponsesConfig::encrypted_reasoning`]);
//! - a reasoning model's `reasoning` item must come back right before the
//!   item that followed it (400 "Item 'fc_…' of type 'function_call' was
//!   provided without its required 'reasoning' item", and the reverse). The
//!   neutral [`ToolCall::signature`] keeps, per call, its item id and the
//!   output items since the previous call when a reasoning item is among
//!   them, verbatim; a transcript keeps them, and every request puts them
//!   back in order before the call. Another provider's signature (Gemini's)
//!   is not this format's and is ignored;
//! - the output cap is `max_output_tokens`; the API has no `stop` and no
//!   `seed`, so both are refused before sending.

mod stream;
mod wire;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::format::{HttpProvider, WireFormat, put};
use super::http::{HttpClient, HttpConfig};
use super::params::{ParamRules, SeedRange};
use super::{ChatRequest, ChatResponse, FinishReason, LlmError, ToolChoice, Usage};

/// How to reach a server that speaks the Responses API.
#[derive(Debug, Clone)]
pub struct ResponsesConfig {
    /// Base URL (up to and including `/v1` for OpenAI; the path
    /// `/responses` is appended), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `gpt-5-mini`.
    pub model: String,
    /// Let the provider keep the responses (`store: true`). Off by
    /// default: the whole history goes with every request and reasoning
    /// comes back encrypted, so nothing of the conversation stays with the
    /// provider.
    pub store: bool,
    /// Declare tools with `strict: true` (OpenAI's structured outputs for
    /// arguments), which needs every schema closed
    /// (`additionalProperties: false`, every property required). Off by
    /// default.
    pub strict: bool,
    /// Ask for reasoning items' encrypted content (`include:
    /// ["reasoning.encrypted_content"]`) when nothing is stored. Only
    /// reasoning models take it; [`ResponsesConfig::new`] turns it on for
    /// the names OpenAI gives them (`o1`, `o3`, `o4-mini`, `gpt-5*` but not
    /// `gpt-5-chat*`, `codex*`). Set it for another reasoning model (the
    /// CLI: `--param 'include=["reasoning.encrypted_content"]'`).
    pub encrypted_reasoning: bool,
    /// The output cap of each answer unless the request sets
    /// [`GenerationParams::max_output_tokens`](super::GenerationParams);
    /// `None` (the default) leaves it to the server.
    pub max_output_tokens: Option<u32>,
    /// The name used in errors and [`Provider::name`](super::Provider::name).
    pub name: String,
}

impl ResponsesConfig {
    /// A config for `model` behind `http`: nothing stored, tools not
    /// strict, encrypted reasoning asked for by reasoning models' names, no
    /// output cap, named `openai-responses`.
    pub fn new(http: HttpConfig, model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            http,
            encrypted_reasoning: reasoning_model(&model),
            model,
            store: false,
            strict: false,
            max_output_tokens: None,
            name: "openai-responses".to_owned(),
        }
    }
}

/// Whether `model` is named like one of OpenAI's reasoning models.
fn reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series = name
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    let gpt5 = name.starts_with("gpt-5") && !name.contains("-chat");
    o_series || gpt5 || name.starts_with("codex")
}

/// An OpenAI Responses client.
pub type ResponsesProvider = HttpProvider<Responses>;

impl ResponsesProvider {
    /// A client for `config`. The key, when set, goes as
    /// `Authorization: Bearer …`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when the key or a header is not valid in HTTP.
    pub fn new(config: ResponsesConfig) -> Result<Self, LlmError> {
        Ok(Self {
            http: HttpClient::new(config.name, config.http, "authorization", "Bearer ", &[])?,
            format: Responses {
                model: config.model,
                store: config.store,
                strict: config.strict,
                encrypted_reasoning: config.encrypted_reasoning,
                max_output_tokens: config.max_output_tokens,
            },
            images: Default::default(),
        })
    }
}

/// The Responses wire format.
#[derive(Debug)]
pub struct Responses {
    model: String,
    store: bool,
    strict: bool,
    encrypted_reasoning: bool,
    max_output_tokens: Option<u32>,
}

impl WireFormat for Responses {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    type Response = wire::Response;
    type Stream = stream::Assembly;

    fn endpoint(&self, _stream: bool) -> String {
        "responses".to_owned()
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::ResponsesRequest::new(self, request)
    }

    fn rules(&self) -> ParamRules {
        ParamRules {
            api: "OpenAI Responses",
            max_temperature: 2.0,
            max_stop: Some(0),
            seed: SeedRange::Unsupported,
            serial_tool_calls: true,
        }
    }

    fn parameters(&self, request: &ChatRequest<'_>, body: &mut Map<String, Value>) {
        let params = request.params;
        put(body, "temperature", params.temperature);
        put(body, "top_p", params.top_p);
        put(
            body,
            "max_output_tokens",
            params.max_output_tokens.or(self.max_output_tokens),
        );
        if request.tools.is_empty() {
            return;
        }
        let choice = match &params.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool(name) => Some(json!({"type": "function", "name": name})),
        };
        put(body, "tool_choice", choice);
        put(body, "parallel_tool_calls", params.parallel_tool_calls);
    }
}

/// The neutral answer for a whole response (or the last event's).
fn answer(response: wire::Response) -> Result<ChatResponse, String> {
    if response.status.as_deref() == Some("failed") || response.error.is_some() {
        let error = response.error.unwrap_or(Value::Null);
        let message = error["message"].as_str().unwrap_or("no message");
        return Err(format!("the response failed: {message}"));
    }
    let finish_reason = match response.status.as_deref() {
        Some("incomplete") => match response
            .incomplete_details
            .and_then(|d| d.reason)
            .as_deref()
        {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            _ => FinishReason::Other,
        },
        Some("completed") | None => FinishReason::Stop,
        Some(_) => FinishReason::Other,
    };
    Ok(ChatResponse {
        message: wire::assistant_message(response.output),
        finish_reason,
        usage: response.usage.map(Usage::from).unwrap_or_default(),
    })
}

impl TryFrom<wire::Response> for ChatResponse {
    type Error = String;

    fn try_from(response: wire::Response) -> Result<Self, String> {
        answer(response)
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::request_body;
    use super::super::{
        AssistantMessage, GenerationParams, Message, ParamError, ToolCall, ToolResult,
    };
    use super::*;
    use crate::tools::ToolSpec;

    /// A call's item id, kept in its signature.
    fn item_id(call: &ToolCall) -> Option<String> {
        wire::CallState::read(call.signature.as_deref()).item_id
    }

    fn format() -> Responses {
        Responses {
            model: "m".into(),
            store: false,
            strict: false,
            encrypted_reasoning: true,
            max_output_tokens: Some(64),
        }
    }

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "add".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    fn body(
        messages: &[Message],
        params: &GenerationParams,
        with_tools: bool,
    ) -> Result<Value, ParamError> {
        let tools = [spec()];
        let request = ChatRequest {
            messages,
            tools: if with_tools { &tools } else { &[] },
            deferred: &[],
            params,
            stream: false,
            on_text: None,
        };
        request_body(&format(), &request)
    }

    #[test]
    fn generation_params_reach_the_responses_body_and_unsupported_ones_are_refused() {
        let messages = [Message::user("hi")];
        let params = GenerationParams {
            temperature: Some(0.0),
            top_p: Some(1.0),
            max_output_tokens: Some(100),
            tool_choice: ToolChoice::Tool("add".into()),
            parallel_tool_calls: Some(false),
            ..GenerationParams::default()
        };
        let sent = body(&messages, &params, true).expect("valid");
        assert_eq!(sent["temperature"], 0.0);
        assert_eq!(sent["max_output_tokens"], 100);
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "function", "name": "add"})
        );
        assert_eq!(sent["parallel_tool_calls"], false);
        assert_eq!(sent["store"], false);
        assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            sent["tools"],
            json!([{"type": "function", "name": "add", "description": "adds",
                    "parameters": {"type": "object"}, "strict": false}])
        );
        let plain = body(&messages, &GenerationParams::default(), false).expect("valid");
        assert_eq!(plain["max_output_tokens"], 64);
        assert!(plain.get("tool_choice").is_none() && plain.get("tools").is_none());
        for (params, name) in [
            (
                GenerationParams {
                    seed: Some(1),
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
            let error = body(&messages, &params, true).expect_err("refused");
            assert_eq!(error.parameter, name);
            assert!(error.message.contains("OpenAI Responses"), "{error}");
        }
    }

    fn output() -> Vec<Value> {
        vec![
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc1"}),
            json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "Let me add.", "annotations": []}]}),
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add",
                   "arguments": "{\"a\":1}", "status": "completed"}),
            json!({"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "add",
                   "arguments": "{}", "status": "completed"}),
            json!({"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "enc2"}),
            json!({"type": "function_call", "id": "fc_3", "call_id": "call_3", "name": "add",
                   "arguments": "{}", "status": "completed"}),
        ]
    }

    #[test]
    fn reasoning_items_go_back_adjacent_to_their_calls_through_a_transcript() {
        let message = wire::assistant_message(output());
        assert_eq!(message.content, "Let me add.");
        let ids: Vec<_> = message.tool_calls.iter().map(item_id).collect();
        assert_eq!(
            ids,
            [
                Some("fc_1".into()),
                Some("fc_2".into()),
                Some("fc_3".into())
            ]
        );
        // What a transcript does to the history.
        let mut history = vec![Message::user("add"), Message::Assistant(message)];
        for id in ["call_1", "call_2", "call_3"] {
            history.push(Message::Tool(ToolResult {
                tool_call_id: id.into(),
                name: "add".into(),
                content: "1".into(),
                is_error: false,
                parts: Vec::new(),
            }));
        }
        let text = serde_json::to_string(&history).expect("json");
        let history: Vec<Message> = serde_json::from_str(&text).expect("json");
        let body = body(&history, &GenerationParams::default(), true).expect("valid");
        let items: Vec<(String, String)> = body["input"]
            .as_array()
            .expect("input")
            .iter()
            .map(|i| {
                let name = i["id"]
                    .as_str()
                    .or(i["call_id"].as_str())
                    .or(i["role"].as_str());
                (
                    i["type"].as_str().unwrap_or("").to_owned(),
                    name.unwrap_or("").to_owned(),
                )
            })
            .collect();
        let expected = [
            ("message", "user"),
            ("reasoning", "rs_1"),
            ("message", "msg_1"),
            ("function_call", "fc_1"),
            ("function_call", "fc_2"),
            ("reasoning", "rs_2"),
            ("function_call", "fc_3"),
            ("function_call_output", "call_1"),
            ("function_call_output", "call_2"),
            ("function_call_output", "call_3"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        assert_eq!(items, expected);
        assert_eq!(body["input"][1]["encrypted_content"], "enc1");
        assert_eq!(body["input"][3]["call_id"], "call_1");
    }

    /// Regression (issue 36, class 10): two calls that shared a call id
    /// and an item id were renamed apart, but both went back with one item
    /// id; and a server that numbers calls afresh each turn repeated call
    /// ids across turns.
    #[test]
    fn every_item_id_and_call_id_of_a_request_is_unique_and_outputs_follow_their_call() {
        let turn = |output: Vec<Value>| {
            let mut answer = ChatResponse {
                message: wire::assistant_message(output),
                finish_reason: FinishReason::ToolCalls,
                usage: Usage::default(),
            };
            super::super::history::normalize_answer(&mut answer, "call", 0);
            answer.message
        };
        let call = |id: &str, call_id: &str| {
            json!({"type": "function_call", "id": id, "call_id": call_id, "name": "add",
                   "arguments": "{}", "status": "completed"})
        };
        let first = turn(vec![
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}),
            call("fc_1", "call_1"),
            call("fc_1", "call_1"),
            call("fc_1_2", "call_1_2"),
        ]);
        let second = turn(vec![call("fc_1", "call_1"), call("fc_9", "call_9")]);
        let mut history = vec![Message::user("add")];
        for message in [first, second] {
            let ids: Vec<String> = message.tool_calls.iter().map(|c| c.id.clone()).collect();
            history.push(Message::Assistant(message));
            for id in ids {
                history.push(Message::Tool(ToolResult {
                    tool_call_id: id,
                    name: "add".into(),
                    content: "1".into(),
                    is_error: false,
                    parts: Vec::new(),
                }));
            }
        }
        let sent = body(&history, &GenerationParams::default(), true).expect("valid");
        let items = sent["input"].as_array().expect("input");
        let item_ids: Vec<&str> = items.iter().filter_map(|i| i["id"].as_str()).collect();
        let distinct: std::collections::BTreeSet<&str> = item_ids.iter().copied().collect();
        assert_eq!(distinct.len(), item_ids.len(), "{item_ids:?}");
        assert_eq!(
            item_ids,
            ["rs_1", "fc_1", "fc_1_3", "fc_1_2", "fc_1_4", "fc_9"]
        );
        let calls: Vec<&str> = items
            .iter()
            .filter(|i| i["type"] == "function_call")
            .filter_map(|i| i["call_id"].as_str())
            .collect();
        let distinct: std::collections::BTreeSet<&str> = calls.iter().copied().collect();
        assert_eq!(distinct.len(), calls.len(), "{calls:?}");
        // Each output names the call right before its turn's outputs.
        let outputs: Vec<&str> = items
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .filter_map(|i| i["call_id"].as_str())
            .collect();
        assert_eq!(outputs, calls);
        // The same history, the same ids.
        let again = body(&history, &GenerationParams::default(), true).expect("valid");
        assert_eq!(again, sent);
    }

    #[test]
    fn other_providers_signatures_and_plain_turns_encode_without_items() {
        let message = AssistantMessage {
            content: "ok".into(),
            tool_calls: vec![ToolCall {
                id: "toolu_1".into(),
                name: "add".into(),
                arguments: "{}".into(),
                signature: Some("Z2VtaW5p".into()),
            }],
            reasoning: None,
            provider_blocks: Vec::new(),
        };
        let history = [
            Message::system("s"),
            Message::Assistant(message),
            Message::Tool(ToolResult {
                tool_call_id: "toolu_1".into(),
                name: "add".into(),
                content: "2".into(),
                is_error: false,
                parts: Vec::new(),
            }),
        ];
        let body = body(&history, &GenerationParams::default(), true).expect("valid");
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "system", "content": "s"},
                {"type": "message", "role": "assistant", "content": "ok"},
                {"type": "function_call", "call_id": "toolu_1", "name": "add", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "toolu_1", "output": "2"}
            ])
        );
    }

    #[test]
    fn only_reasoning_models_ask_for_encrypted_reasoning() {
        for (model, reasoning) in [
            ("o3", true),
            ("o4-mini", true),
            ("gpt-5-mini", true),
            ("openai/gpt-5", true),
            ("codex-mini-latest", true),
            ("gpt-5-chat-latest", false),
            ("gpt-4.1-mini", false),
            ("gpt-4o", false),
            ("omni-moderation-latest", false),
        ] {
            let config = ResponsesConfig::new(HttpConfig::new("http://127.0.0.1:1/v1"), model);
            assert_eq!(config.encrypted_reasoning, reasoning, "{model}");
        }
    }

    #[test]
    fn incomplete_and_failed_responses() {
        let length = answer(wire::Response {
            status: Some("incomplete".into()),
            incomplete_details: Some(wire::IncompleteDetails {
                reason: Some("max_output_tokens".into()),
            }),
            ..Default::default()
        })
        .expect("an answer");
        assert_eq!(length.finish_reason, FinishReason::Length);
        let failed = answer(wire::Response {
            status: Some("failed".into()),
            error: Some(json!({"code": "server_error", "message": "boom"})),
            ..Default::default()
        });
        assert_eq!(failed.err().as_deref(), Some("the response failed: boom"));
    }
}
