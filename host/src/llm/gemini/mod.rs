//! Google Gemini `generateContent`
//! (`POST {base_url}/v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` when streaming; key in
//! `x-goog-api-key`).
//!
//! Wire facts this module relies on:
//! - system messages go to `systemInstruction`; the model's role is
//!   `model`;
//! - tools are `[{functionDeclarations:[{name, description, parameters}]}]`
//!   with `parameters` cut down to Gemini's schema subset (see
//!   [`schema`](self::schema) for exactly what is kept);
//!   [`ToolChoice::None`] sends `toolConfig.functionCallingConfig.mode:
//!   "NONE"` with the tools still declared;
//! - calls are `functionCall{name, args, id?}` parts. Most models give no
//!   id, so a call without one gets `gemini_call_{turn}_{position}`: `turn`
//!   is the number of assistant turns before it, so the same conversation
//!   always gets the same ids and no id repeats in it. Synthetic ids are
//!   never sent back;
//! - a part's `thoughtSignature` is kept in [`ToolCall::signature`] and sent
//!   back on the same part (Gemini 3 rejects a history without it).
//!   Signatures on text parts are not kept: Gemini does not require them;
//! - results are `functionResponse{name, response, id?}` parts, all in one
//!   user turn; see `wire::response_object` for how output becomes the
//!   required object.
//!
//! A streamed answer is a series of whole `GenerateContentResponse` objects;
//! it is complete once one carries a `finishReason`.

mod schema;
mod wire;

use futures::StreamExt;
use futures::future::BoxFuture;

use super::history::{next_turn_index, normalize_answer};
use super::http::{HttpClient, HttpConfig, parse_event, snippet};
use super::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, LlmError, Provider, TextSink,
    ToolCall, Usage,
};

/// The default base URL (without the API version).
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// How to reach Gemini.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    /// Base URL (without `/v1beta`), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `gemini-2.5-flash` (a `models/` prefix is
    /// accepted).
    pub model: String,
    /// `generationConfig.maxOutputTokens`; `None` (the default) leaves it
    /// to the model.
    pub max_tokens: Option<u32>,
}

impl GeminiConfig {
    /// A config for `model` behind `http`.
    pub fn new(http: HttpConfig, model: impl Into<String>) -> Self {
        Self {
            http,
            model: model.into(),
            max_tokens: None,
        }
    }
}

/// A Gemini `generateContent` client.
#[derive(Debug)]
pub struct GeminiProvider {
    http: HttpClient,
    model: String,
    max_tokens: Option<u32>,
}

#[derive(Debug, Default)]
struct Assembly {
    text: String,
    calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    usage: Usage,
    candidates_seen: bool,
}

impl Assembly {
    fn apply(&mut self, response: wire::GenerateResponse, on_text: Option<TextSink<'_>>) {
        if let Some(usage) = response.usage_metadata {
            self.usage = usage.into();
        }
        let Some(candidate) = response.candidates.into_iter().next() else {
            return;
        };
        self.candidates_seen = true;
        for part in candidate.content.parts {
            if let Some(call) = part.function_call {
                self.calls.push(ToolCall {
                    id: call.id.unwrap_or_default(),
                    name: call.name,
                    arguments: if call.args.is_null() {
                        "{}".to_owned()
                    } else {
                        call.args.to_string()
                    },
                    signature: part.thought_signature,
                });
            } else if let Some(text) = part.text.filter(|t| !t.is_empty() && !part.thought) {
                if let Some(sink) = on_text {
                    sink(&text);
                }
                self.text.push_str(&text);
            }
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
    }
}

impl GeminiProvider {
    /// A client for `config`. The key, when set, goes as `x-goog-api-key`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when the key or a header is not valid in HTTP.
    pub fn new(config: GeminiConfig) -> Result<Self, LlmError> {
        let model = config
            .model
            .strip_prefix("models/")
            .unwrap_or(&config.model)
            .to_owned();
        Ok(Self {
            http: HttpClient::new("gemini", config.http, "x-goog-api-key", "", &[])?,
            model,
            max_tokens: config.max_tokens,
        })
    }

    async fn run(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let body = wire::GenerateRequest::new(
            request.messages,
            request.tools,
            request.tool_choice,
            self.max_tokens,
        );
        let mut assembly = Assembly::default();
        if request.stream {
            let url = self.http.url(&format!(
                "v1beta/models/{}:streamGenerateContent?alt=sse",
                self.model
            ));
            let response = self.http.post_json(&url, &body).await?;
            let mut events = std::pin::pin!(self.http.events(response));
            while let Some(event) = events.next().await {
                let chunk: serde_json::Value = parse_event(&self.http, &event?)?;
                if chunk.get("error").is_some() {
                    return Err(self.http.interrupted(format!(
                        "the provider sent an error mid-stream: {}",
                        snippet(chunk.to_string().as_bytes())
                    )));
                }
                let chunk: wire::GenerateResponse = serde_json::from_value(chunk).map_err(|e| {
                    self.http
                        .invalid(format!("stream chunk is not the documented JSON: {e}"))
                })?;
                assembly.apply(chunk, request.on_text);
            }
            if assembly.finish_reason.is_none() {
                return Err(self.http.interrupted(format!(
                    "no finishReason arrived ({} tool call(s) so far)",
                    assembly.calls.len()
                )));
            }
        } else {
            let url = self
                .http
                .url(&format!("v1beta/models/{}:generateContent", self.model));
            let response = self.http.post_json(&url, &body).await?;
            let response: wire::GenerateResponse = self.http.read_json(response).await?;
            let feedback = response.prompt_feedback.clone();
            assembly.apply(response, None);
            if !assembly.candidates_seen {
                let why = feedback.map_or_else(|| "no reason given".to_owned(), |f| f.to_string());
                return Err(self
                    .http
                    .invalid(format!("the answer has no candidates ({why})")));
            }
        }
        let mut answer = ChatResponse {
            message: AssistantMessage {
                content: assembly.text,
                tool_calls: assembly.calls,
                reasoning: None,
            },
            finish_reason: assembly
                .finish_reason
                .as_deref()
                .map_or(FinishReason::Other, wire::finish_reason),
            usage: assembly.usage,
        };
        normalize_answer(
            &mut answer,
            wire::SYNTHETIC_ID_PREFIX,
            next_turn_index(request.messages),
        );
        Ok(answer)
    }
}

impl Provider for GeminiProvider {
    fn name(&self) -> &str {
        self.http.provider()
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.run(request))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::wire::{GenerateRequest, response_object};
    use crate::llm::{AssistantMessage, Message, ToolCall, ToolChoice, ToolResult};

    fn result(content: &str, is_error: bool) -> ToolResult {
        ToolResult {
            tool_call_id: "gemini_call_0_0".into(),
            name: "t".into(),
            content: content.into(),
            is_error,
        }
    }

    #[test]
    fn responses_are_always_objects() {
        assert_eq!(
            response_object(&result(r#"{"a":1}"#, false)),
            json!({"a": 1})
        );
        assert_eq!(
            response_object(&result("[1,2]", false)),
            json!({"result": [1, 2]})
        );
        assert_eq!(
            response_object(&result("plain text", false)),
            json!({"result": "plain text"})
        );
        assert_eq!(
            response_object(&result("boom", true)),
            json!({"error": "boom"})
        );
    }

    #[test]
    fn synthetic_ids_stay_home_and_signatures_go_back() {
        let messages = vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "gemini_call_0_0".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                    signature: Some("sig".into()),
                }],
                reasoning: None,
            }),
            Message::Tool(result("1", false)),
        ];
        let body =
            serde_json::to_value(GenerateRequest::new(&messages, &[], ToolChoice::Auto, None))
                .expect("json");
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "t", "args": {}}, "thoughtSignature": "sig"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "t", "response": {"result": 1}}}]}
            ])
        );
    }
}
