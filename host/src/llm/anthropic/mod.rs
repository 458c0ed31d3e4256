//! Anthropic Messages (`POST {base_url}/v1/messages`, headers `x-api-key`
//! and `anthropic-version: 2023-06-01`).
//!
//! Wire facts this module relies on:
//! - system messages go to the top-level `system` field;
//! - tools are `{name, description, input_schema}`; [`ToolChoice::None`]
//!   sends `tool_choice: {type: "none"}` with the tools still declared;
//! - an assistant turn is text plus `tool_use` blocks whose `input` is a
//!   JSON object (see [`arguments_object`](super::convert::arguments_object)
//!   for arguments that are not one);
//! - all results of a turn are `tool_result` blocks (with `is_error`)
//!   *first* in the very next user message, so consecutive tool results and
//!   a following user message become one wire message;
//! - `max_tokens` is required ([`AnthropicConfig::max_tokens`]).
//!
//! Streaming reads `message_start`, `content_block_start` / `_delta` /
//! `_stop`, `message_delta`, `message_stop`, `ping` and `error`; the answer
//! is complete only at `message_stop`.

mod stream;
mod wire;

use serde::Serialize;

use super::format::{HttpProvider, WireFormat};
use super::http::{HttpClient, HttpConfig};
use super::{AssistantMessage, ChatRequest, ChatResponse, LlmError, ToolCall};

/// The `anthropic-version` header this module speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach Anthropic.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Base URL (without `/v1`), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// `max_tokens` for each answer (the API requires one). Default 4096.
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
    type Response = wire::MessagesResponse;
    type Stream = stream::Assembly;

    const ID_PREFIX: &'static str = "toolu";

    fn endpoint(&self, _stream: bool) -> String {
        "v1/messages".to_owned()
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::MessagesRequest::new(self, request)
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
    use crate::llm::format::WireFormat;
    use crate::llm::{AssistantMessage, ChatRequest, Message, ToolCall, ToolChoice, ToolResult};

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
            })
        };
        let messages = vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: "calling".into(),
                tool_calls: vec![call("a", r#"{"x":1}"#), call("b", "{bad")],
                reasoning: None,
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
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            tool_choice: ToolChoice::None,
            stream: false,
            on_text: None,
        };
        let value = serde_json::to_value(format.encode(&request)).expect("serializes");
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
}
