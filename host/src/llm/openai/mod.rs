//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), and every
//! server that speaks it: DeepSeek, vLLM, Ollama, llama.cpp, LiteLLM.
//!
//! Wire facts this module relies on:
//! - tools go as `{type:"function", function:{name, description, parameters}}`;
//!   [`ToolChoice::None`] sends `tool_choice:"none"` with the tools still
//!   declared (a history with tool calls needs them); `tool_choice` and
//!   `parallel_tool_calls` are sent only with tools (OpenAI rejects them
//!   otherwise);
//! - the output cap is `max_completion_tokens` on OpenAI's own host (its
//!   reasoning models reject `max_tokens`) and `max_tokens` everywhere else:
//!   DeepSeek, vLLM, Ollama and llama.cpp all read it, while older Ollama
//!   and llama.cpp servers silently ignore `max_completion_tokens`;
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
use serde_json::{Map, Value, json};

use super::format::{HttpProvider, WireFormat, put};
use super::http::{HttpClient, HttpConfig, OfficialHost, official_host};
use super::params::{ParamRules, SeedRange};
use super::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, LlmError, ToolCall, ToolChoice,
    Usage,
};

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
    /// The output cap of each answer unless the request sets
    /// [`GenerationParams::max_output_tokens`](super::GenerationParams);
    /// `None` (the default) leaves it to the server. Sent as
    /// `max_completion_tokens` to OpenAI's own host, `max_tokens` elsewhere.
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
        let official_openai = official_host(&config.http.base_url) == Some(OfficialHost::OpenAi);
        Ok(Self {
            http: HttpClient::new(config.name, config.http, "authorization", "Bearer ", &[])?,
            format: ChatCompletions {
                model: config.model,
                send_reasoning: config.send_reasoning,
                max_tokens: config.max_tokens,
                official_openai,
            },
            images: Default::default(),
        })
    }
}

/// The Chat Completions wire format.
#[derive(Debug)]
pub struct ChatCompletions {
    model: String,
    send_reasoning: bool,
    max_tokens: Option<u32>,
    /// `api.openai.com` itself, whose rules are stricter than a local
    /// server's.
    official_openai: bool,
}

impl WireFormat for ChatCompletions {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    type Response = wire::ChatCompletion;
    type Stream = stream::Assembly;

    fn endpoint(&self, _stream: bool) -> String {
        "chat/completions".to_owned()
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::ChatCompletionRequest::new(self, request)
    }

    fn rules(&self) -> ParamRules {
        ParamRules {
            api: "OpenAI Chat Completions",
            max_temperature: 2.0,
            // OpenAI documents 4; other servers take more.
            max_stop: self.official_openai.then_some(4),
            seed: SeedRange::I64,
            serial_tool_calls: true,
        }
    }

    fn parameters(&self, request: &ChatRequest<'_>, body: &mut Map<String, Value>) {
        let params = request.params;
        put(body, "temperature", params.temperature);
        put(body, "top_p", params.top_p);
        let cap = if self.official_openai {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        put(body, cap, params.max_output_tokens.or(self.max_tokens));
        put(
            body,
            "stop",
            (!params.stop.is_empty()).then_some(&params.stop),
        );
        put(body, "seed", params.seed);
        if request.tools.is_empty() {
            return;
        }
        let choice = match &params.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool(name) => Some(json!({"type": "function", "function": {"name": name}})),
        };
        put(body, "tool_choice", choice);
        put(body, "parallel_tool_calls", params.parallel_tool_calls);
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
            provider_blocks: Vec::new(),
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
    use super::super::format::request_body;
    use super::super::{DEEPSEEK_BASE_URL, GenerationParams, Message, OPENAI_BASE_URL};
    use super::*;
    use crate::tools::ToolSpec;

    fn body(base_url: &str, params: &GenerationParams, with_tools: bool) -> Value {
        let mut config = OpenAiConfig::new(HttpConfig::new(base_url), "m");
        config.max_tokens = Some(64);
        let provider = OpenAiProvider::new(config).expect("provider");
        let tools = [ToolSpec {
            name: "add".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object"}),
        }];
        let messages = [Message::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools: if with_tools { &tools } else { &[] },
            deferred: &[],
            params,
            stream: false,
            on_text: None,
        };
        let mut body = request_body(&provider.format, &request).expect("valid");
        let fields = body.as_object_mut().expect("object");
        for structural in ["model", "messages", "tools", "stream"] {
            fields.remove(structural);
        }
        body
    }

    #[test]
    fn generation_params_reach_the_chat_body() {
        let local = "http://127.0.0.1:8080/v1";
        assert_eq!(
            body(local, &GenerationParams::default(), true),
            json!({"max_tokens": 64})
        );
        assert_eq!(
            body(OPENAI_BASE_URL, &GenerationParams::default(), true),
            json!({"max_completion_tokens": 64})
        );
        let params = GenerationParams {
            temperature: Some(0.0),
            top_p: Some(1.0),
            max_output_tokens: Some(10),
            stop: vec!["END".into()],
            seed: Some(42),
            tool_choice: ToolChoice::Tool("add".into()),
            parallel_tool_calls: Some(false),
            extra: json!({"min_p": 0.05})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        assert_eq!(
            body(local, &params, true),
            json!({
                "temperature": 0.0, "top_p": 1.0, "max_tokens": 10, "stop": ["END"], "seed": 42,
                "tool_choice": {"type": "function", "function": {"name": "add"}},
                "parallel_tool_calls": false, "min_p": 0.05
            })
        );
        let required = GenerationParams {
            tool_choice: ToolChoice::Required,
            parallel_tool_calls: Some(true),
            ..GenerationParams::default()
        };
        assert_eq!(
            body(local, &required, true)["tool_choice"],
            json!("required")
        );
        // OpenAI rejects tool_choice and parallel_tool_calls without tools.
        let none = GenerationParams {
            tool_choice: ToolChoice::None,
            parallel_tool_calls: Some(true),
            ..GenerationParams::default()
        };
        assert_eq!(body(local, &none, false), json!({"max_tokens": 64}));
        assert_eq!(body(local, &none, true)["tool_choice"], json!("none"));
    }

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
