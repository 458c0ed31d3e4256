//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), and every
//! server that speaks it: DeepSeek, vLLM, Ollama, llama.cpp, LiteLLM.
//!
//! Wire facts this module relies on:
//! - tools go as `{type:"function", function:{name, description, parameters}}`;
//!   [`ToolChoice::None`] sends `tool_choice:"none"` with the tools still
//!   declared (a history with tool calls needs them);
//! - an assistant turn's `tool_calls[].function.arguments` is a JSON
//!   *string*, sent back exactly as the model wrote it;
//! - each result is its own `{role:"tool", tool_call_id, content}` message.
//!   The wire has no error flag, so an error result goes as its text;
//! - DeepSeek's thinking mode needs `reasoning_content` sent back on
//!   assistant turns ([`OpenAiConfig::send_reasoning`]).
//!
//! Local servers differ from OpenAI, and the reader tolerates it: `content`
//! `""` next to tool calls, ids without `call_` prefix or reused on every
//! turn (`call_0`), extra fields such as llama.cpp's `timings`, a usage
//! chunk with `choices: []`, arguments sent as an object, missing ids (given
//! `call_{turn}_{position}`).

mod stream;
mod wire;

use serde::Serialize;

use super::format::{HttpProvider, WireFormat};
use super::http::{HttpClient, HttpConfig, OfficialHost, official_host};
use super::{AssistantMessage, ChatRequest, ChatResponse, FinishReason, LlmError, ToolCall, Usage};

/// How to reach an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL (up to and including `/v1` for OpenAI; the path
    /// `/chat/completions` is appended), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `gpt-4.1-mini` or `deepseek-chat`.
    pub model: String,
    /// Send each assistant turn's reasoning back as `reasoning_content`.
    /// DeepSeek's thinking mode requires it; OpenAI rejects unknown fields
    /// on some models. [`OpenAiConfig::new`] turns it on for DeepSeek's own
    /// host (`https://api.deepseek.com`); set it for a server in front of it.
    pub send_reasoning: bool,
    /// `max_tokens` for each answer; `None` (the default) leaves it to the
    /// server.
    pub max_tokens: Option<u32>,
    /// The name used in errors and [`Provider::name`](super::Provider::name): `deepseek` for
    /// DeepSeek's own host, else `openai`.
    pub name: String,
}

impl OpenAiConfig {
    /// A config for `model` behind `http`, with the defaults above.
    pub fn new(http: HttpConfig, model: impl Into<String>) -> Self {
        let deepseek = official_host(&http.base_url) == Some(OfficialHost::DeepSeek);
        Self {
            http,
            model: model.into(),
            send_reasoning: deepseek,
            max_tokens: None,
            name: if deepseek { "deepseek" } else { "openai" }.to_owned(),
        }
    }
}

/// An OpenAI Chat Completions client.
pub type OpenAiProvider = HttpProvider<ChatCompletions>;

impl OpenAiProvider {
    /// A client for `config`. The key, when set, goes as
    /// `Authorization: Bearer …`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when the key or a header is not valid in HTTP.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Ok(Self {
            http: HttpClient::new(config.name, config.http, "authorization", "Bearer ", &[])?,
            format: ChatCompletions {
                model: config.model,
                send_reasoning: config.send_reasoning,
                max_tokens: config.max_tokens,
            },
        })
    }
}

/// The Chat Completions wire format.
#[derive(Debug)]
pub struct ChatCompletions {
    model: String,
    send_reasoning: bool,
    max_tokens: Option<u32>,
}

impl WireFormat for ChatCompletions {
    type Response = wire::ChatCompletion;
    type Stream = stream::Assembly;

    fn endpoint(&self, _stream: bool) -> String {
        "chat/completions".to_owned()
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::ChatCompletionRequest::new(self, request)
    }
}

impl TryFrom<wire::ChatCompletion> for ChatResponse {
    type Error = String;

    fn try_from(response: wire::ChatCompletion) -> Result<Self, String> {
        let usage = response.usage.map(Usage::from).unwrap_or_default();
        let choice = response
            .choices
            .into_iter()
            .next()
            .ok_or("the answer has no choices")?;
        let message = AssistantMessage {
            content: choice.message.content.unwrap_or_default(),
            tool_calls: choice
                .message
                .tool_calls
                .into_iter()
                .map(|call| ToolCall {
                    id: call.id.unwrap_or_default(),
                    name: call.function.name,
                    arguments: wire::arguments_text(&call.function.arguments),
                    signature: None,
                })
                .collect(),
            reasoning: choice.message.reasoning_content.filter(|r| !r.is_empty()),
        };
        Ok(ChatResponse {
            message,
            finish_reason: choice
                .finish_reason
                .as_deref()
                .map_or(FinishReason::Other, wire::finish_reason),
            usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::DEEPSEEK_BASE_URL;
    use super::*;

    #[test]
    fn deepseek_is_detected_from_the_host() {
        let config = OpenAiConfig::new(HttpConfig::new(DEEPSEEK_BASE_URL), "deepseek-chat");
        assert!(config.send_reasoning);
        assert_eq!(config.name, "deepseek");
        let config = OpenAiConfig::new(HttpConfig::new("http://127.0.0.1:8080/v1"), "local");
        assert!(!config.send_reasoning);
        assert_eq!(config.name, "openai");
    }
}
