//! Anthropic Messages (`POST {base_url}/v1/messages`, headers `x-api-key`
//! and `anthropic-version: 2023-06-01`).
//!
//! Wire facts this module relies on:
//! - system messages go to the top-level `system` field;
//! - tools are `{name, description, input_schema}`; [`ToolChoice::None`]
//!   sends `tool_choice: {type: "none"}` with the tools still declared,
//!   `Required` is `{type: "any"}`, a named tool `{type: "tool", name}`;
//!   `parallel_tool_calls: false` is `disable_parallel_tool_use: true`
//!   inside `tool_choice` (not allowed with `none`, where no call comes);
//! - an assistant turn is text plus `tool_use` blocks whose `input` is a
//!   JSON object (see [`arguments_object`](super::convert::arguments_object)
//!   for arguments that are not one);
//! - all results of a turn are `tool_result` blocks (with `is_error`)
//!   *first* in the very next user message, so consecutive tool results and
//!   a following user message become one wire message;
//! - with [`ChatRequest::deferred`] tools, `tools` starts with the tool
//!   search tool (`tool_search_tool_bm25_20251119`), the deferred tools
//!   carry `defer_loading: true`, and the request names the beta
//!   `advanced-tool-use-2025-11-20`; the `server_tool_use` and
//!   `tool_search_tool_result` blocks of an answer are kept in
//!   [`AssistantMessage::provider_blocks`] and sent back after the turn's
//!   text, before its `tool_use` blocks, less references to tools the
//!   request no longer defines;
//! - `max_tokens` is required: the request's
//!   [`GenerationParams::max_output_tokens`](super::GenerationParams), else
//!   [`AnthropicConfig::max_tokens`]; there is no `seed`, and `temperature`
//!   goes from 0 to 1.
//!
//! Streaming reads `message_start`, `content_block_start` / `_delta` /
//! `_stop`, `message_delta`, `message_stop`, `ping` and `error`; the answer
//! is complete only at `message_stop`.

mod stream;
mod wire;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::format::{HttpProvider, WireFormat, put};
use super::http::{HttpClient, HttpConfig};
use super::params::{ParamRules, SeedRange};
use super::{AssistantMessage, ChatRequest, ChatResponse, LlmError, ToolCall, ToolChoice};

/// The `anthropic-version` header this module speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach Anthropic.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Base URL (without `/v1`), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// `max_tokens` for each answer whose request does not set
    /// [`GenerationParams::max_output_tokens`](super::GenerationParams)
    /// (the API requires one). Default 4096.
    pub max_tokens: u32,
}

impl AnthropicConfig {
    /// A config for `model` behind `http`, with `max_tokens` 4096.
    pub fn new(http: HttpConfig, model: impl Into<String>) -> Self {
        Self {
            http,
            model: model.into(),
            max_tokens: 4096,
        }
    }
}

/// An Anthropic Messages client.
pub type AnthropicProvider = HttpProvider<Messages>;

impl AnthropicProvider {
    /// A client for `config`. The key, when set, goes as `x-api-key`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when the key or a header is not valid in HTTP.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let http = HttpClient::new(
            "anthropic",
            config.http,
            "x-api-key",
            "",
            &[("anthropic-version", ANTHROPIC_VERSION)],
        )?;
        Ok(Self {
            http,
            format: Messages {
                model: config.model,
                max_tokens: config.max_tokens,
            },
            images: Default::default(),
        })
    }
}

/// The Messages wire format.
#[derive(Debug)]
pub struct Messages {
    model: String,
    max_tokens: u32,
}

impl WireFormat for Messages {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    type Response = wire::MessagesResponse;
    type Stream = stream::Assembly;

    const ID_PREFIX: &'static str = "toolu";

    const NATIVE_TOOL_SEARCH: bool = true;

    fn headers(&self, request: &ChatRequest<'_>) -> Vec<(&'static str, &'static str)> {
        if request.deferred.is_empty() {
            Vec::new()
        } else {
            vec![("anthropic-beta", wire::SEARCH_BETA)]
        }
    }

    fn endpoint(&self, _stream: bool) -> String {
        "v1/messages".to_owned()
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::MessagesRequest::new(self, request)
    }

    fn rules(&self) -> ParamRules {
        ParamRules {
            api: "Anthropic Messages",
            max_temperature: 1.0,
            max_stop: None,
            seed: SeedRange::Unsupported,
            serial_tool_calls: true,
        }
    }

    fn parameters(&self, request: &ChatRequest<'_>, body: &mut Map<String, Value>) {
        let params = request.params;
        put(
            body,
            "max_tokens",
            Some(params.max_output_tokens.unwrap_or(self.max_tokens)),
        );
        put(body, "temperature", params.temperature);
        put(body, "top_p", params.top_p);
        put(
            body,
            "stop_sequences",
            (!params.stop.is_empty()).then_some(&params.stop),
        );
        if request.tools.is_empty() {
            return;
        }
        let serial = params.parallel_tool_calls == Some(false);
        let mut choice = match &params.tool_choice {
            ToolChoice::Auto if !serial => return,
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => {
                body.insert("tool_choice".into(), json!({"type": "none"}));
                return;
            }
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        if serial {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), choice);
    }
}

impl From<wire::MessagesResponse> for ChatResponse {
    fn from(response: wire::MessagesResponse) -> Self {
        let mut message = AssistantMessage::default();
        for block in response.content {
            match block {
                wire::ResponseBlock::Text { text } => message.content.push_str(&text),
                wire::ResponseBlock::ToolUse { id, name, input } => {
                    message.tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments: input.to_string(),
                        signature: None,
                    })
                }
                wire::ResponseBlock::ServerToolUse { id, name, input } => message
                    .provider_blocks
                    .push(wire::server_tool_use(id, name, input)),
                wire::ResponseBlock::ToolSearchToolResult {
                    tool_use_id,
                    content,
                } => message
                    .provider_blocks
                    .push(wire::tool_search_result(tool_use_id, content)),
                wire::ResponseBlock::Other => {}
            }
        }
        ChatResponse {
            message,
            finish_reason: wire::finish_reason(response.stop_reason.as_deref()),
            usage: response.usage.to_usage(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Messages;
    use crate::llm::format::request_body;
    use crate::llm::{
        AssistantMessage, ChatRequest, GenerationParams, Message, ToolCall, ToolChoice, ToolResult,
    };
    use crate::tools::ToolSpec;

    #[test]
    fn results_merge_first_into_the_next_user_message() {
        let call = |id: &str, args: &str| ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: args.into(),
            signature: None,
        };
        let result = |id: &str, is_error| {
            Message::Tool(ToolResult {
                tool_call_id: id.into(),
                name: "t".into(),
                content: "out".into(),
                is_error,
                parts: Vec::new(),
            })
        };
        let messages = vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: "calling".into(),
                tool_calls: vec![call("a", r#"{"x":1}"#), call("b", "{bad")],
                reasoning: None,
                provider_blocks: Vec::new(),
            }),
            result("a", false),
            Message::user("also this"),
            result("b", true),
            Message::system("and polite"),
        ];
        let format = Messages {
            model: "m".into(),
            max_tokens: 10,
        };
        let params = GenerationParams {
            tool_choice: ToolChoice::None,
            ..GenerationParams::default()
        };
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            deferred: &[],
            params: &params,
            stream: false,
            on_text: None,
        };
        let value = request_body(&format, &request).expect("serializes");
        assert_eq!(
            value,
            json!({
                "model": "m", "max_tokens": 10, "system": "be brief\n\nand polite",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "calling"},
                        {"type": "tool_use", "id": "a", "name": "t", "input": {"x": 1}},
                        {"type": "tool_use", "id": "b", "name": "t", "input": {"_unparsed_arguments": "{bad"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "out"},
                        {"type": "tool_result", "tool_use_id": "b", "content": "out", "is_error": true},
                        {"type": "text", "text": "also this"}
                    ]}
                ]
            })
        );
    }

    fn body(params: &GenerationParams, tools: &[ToolSpec]) -> serde_json::Value {
        let format = Messages {
            model: "m".into(),
            max_tokens: 4096,
        };
        let messages = [Message::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools,
            deferred: &[],
            params,
            stream: false,
            on_text: None,
        };
        let mut body = request_body(&format, &request).expect("valid");
        let fields = body.as_object_mut().expect("object");
        for structural in ["model", "messages", "tools"] {
            fields.remove(structural);
        }
        body
    }

    fn add() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "add".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object"}),
        }]
    }

    #[test]
    fn generation_params_reach_the_messages_body() {
        assert_eq!(
            body(&GenerationParams::default(), &add()),
            json!({"max_tokens": 4096})
        );
        let params = GenerationParams {
            temperature: Some(0.0),
            top_p: Some(0.5),
            max_output_tokens: Some(100),
            stop: vec!["END".into()],
            tool_choice: ToolChoice::Tool("add".into()),
            parallel_tool_calls: Some(false),
            extra: json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..GenerationParams::default()
        };
        assert_eq!(
            body(&params, &add()),
            json!({
                "max_tokens": 100, "temperature": 0.0, "top_p": 0.5, "stop_sequences": ["END"],
                "tool_choice": {"type": "tool", "name": "add", "disable_parallel_tool_use": true},
                "thinking": {"type": "enabled", "budget_tokens": 1024}
            })
        );
        let choices = [
            (ToolChoice::Required, None, json!({"type": "any"})),
            (
                ToolChoice::Auto,
                Some(false),
                json!({"type": "auto", "disable_parallel_tool_use": true}),
            ),
            (ToolChoice::None, Some(false), json!({"type": "none"})),
        ];
        let none = GenerationParams {
            tool_choice: ToolChoice::None,
            ..GenerationParams::default()
        };
        assert!(body(&none, &[]).get("tool_choice").is_none());
        for (tool_choice, parallel_tool_calls, expected) in choices {
            let params = GenerationParams {
                tool_choice,
                parallel_tool_calls,
                ..GenerationParams::default()
            };
            assert_eq!(body(&params, &add())["tool_choice"], expected);
        }
    }
}
