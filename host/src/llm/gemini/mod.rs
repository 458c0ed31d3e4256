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
//!   "NONE"` with the tools still declared, `Required` mode `ANY`, a named
//!   tool `ANY` with `allowedFunctionNames: [name]`; there is no switch for
//!   one call per answer;
//! - sampling goes in `generationConfig` (`temperature` 0 to 2, `topP`,
//!   `maxOutputTokens`, at most 5 `stopSequences`, a 32-bit `seed`);
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
//!   required object. Gemini 3 models take images in a function response:
//!   `functionResponse.parts: [{inlineData: {mimeType, data}}]` (PNG, JPEG,
//!   WebP); for older models, and for audio and other types, a text
//!   stand-in goes in the response object under `"attachments"`.
//!
//! A streamed answer is a series of whole `GenerateContentResponse` objects;
//! it is complete once one carries a `finishReason`.

mod schema;
mod wire;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::format::{HttpProvider, StreamAssembly, StreamContext, WireFormat, emit, put};
use super::http::{HttpClient, HttpConfig, snippet};
use super::media::MediaRules;
use super::params::{ParamRules, SeedRange};
use super::sse::SseEvent;
use super::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, LlmError, TextSink, ToolCall,
    ToolChoice, Usage,
};

/// How to reach Gemini.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    /// Base URL (without `/v1beta`), key, timeouts and retries.
    pub http: HttpConfig,
    /// The model name, e.g. `gemini-2.5-flash` (a `models/` prefix is
    /// accepted).
    pub model: String,
    /// `generationConfig.maxOutputTokens` unless the request sets
    /// [`GenerationParams::max_output_tokens`](super::GenerationParams);
    /// `None` (the default) leaves it to the model.
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
pub type GeminiProvider = HttpProvider<GenerateContent>;

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
            format: GenerateContent {
                model,
                max_tokens: config.max_tokens,
            },
            images: Default::default(),
        })
    }
}

/// The `generateContent` wire format.
#[derive(Debug)]
pub struct GenerateContent {
    model: String,
    max_tokens: Option<u32>,
}

impl GenerateContent {
    /// What the model takes in a function response: images as parts for
    /// Gemini 3 models ("multimodal function responses"), JSON only before.
    fn media(&self) -> MediaRules {
        if self.model.starts_with("gemini-3") {
            MediaRules::GEMINI_MULTIMODAL
        } else {
            MediaRules::GEMINI_JSON_ONLY
        }
    }
}

impl WireFormat for GenerateContent {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    type Response = wire::GenerateContentResponse;
    type Stream = Assembly;

    const ID_PREFIX: &'static str = wire::SYNTHETIC_ID_PREFIX;

    fn endpoint(&self, stream: bool) -> String {
        if stream {
            format!("v1beta/models/{}:streamGenerateContent?alt=sse", self.model)
        } else {
            format!("v1beta/models/{}:generateContent", self.model)
        }
    }

    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a {
        wire::GenerateContentRequest::new(request, self.media())
    }

    fn rules(&self) -> ParamRules {
        ParamRules {
            api: "Gemini generateContent",
            max_temperature: 2.0,
            max_stop: Some(5),
            seed: SeedRange::I32,
            serial_tool_calls: false,
        }
    }

    fn parameters(&self, request: &ChatRequest<'_>, body: &mut Map<String, Value>) {
        let params = request.params;
        let mut config = Map::new();
        put(&mut config, "temperature", params.temperature);
        put(&mut config, "topP", params.top_p);
        put(
            &mut config,
            "maxOutputTokens",
            params.max_output_tokens.or(self.max_tokens),
        );
        put(
            &mut config,
            "stopSequences",
            (!params.stop.is_empty()).then_some(&params.stop),
        );
        put(&mut config, "seed", params.seed);
        if !config.is_empty() {
            body.insert("generationConfig".into(), Value::Object(config));
        }
        if request.tools.is_empty() {
            return;
        }
        let calling = match &params.tool_choice {
            ToolChoice::Auto => return,
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({ "functionCallingConfig": calling }),
        );
    }
}

impl TryFrom<wire::GenerateContentResponse> for ChatResponse {
    type Error = String;

    fn try_from(response: wire::GenerateContentResponse) -> Result<Self, String> {
        let feedback = response.prompt_feedback.clone();
        let mut assembly = Assembly::default();
        assembly.take(response, None);
        if !assembly.candidates_seen {
            let why = feedback.map_or_else(|| "no reason given".to_owned(), |f| f.to_string());
            return Err(format!("the answer has no candidates ({why})"));
        }
        Ok(assembly.into_answer())
    }
}

/// A Gemini answer being read: a series of whole responses, complete once
/// one carries a `finishReason`.
#[derive(Debug, Default)]
pub struct Assembly {
    text: String,
    calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    usage: Usage,
    candidates_seen: bool,
}

impl Assembly {
    fn take(&mut self, response: wire::GenerateContentResponse, on_text: Option<TextSink<'_>>) {
        if let Some(usage) = response.usage_metadata {
            self.usage = Usage {
                input_tokens: usage.prompt_token_count,
                output_tokens: usage.candidates_token_count + usage.thoughts_token_count,
            };
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
            } else if let Some(text) = part.text.filter(|_| !part.thought) {
                emit(on_text, &text);
                self.text.push_str(&text);
            }
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
    }

    fn into_answer(self) -> ChatResponse {
        ChatResponse {
            message: AssistantMessage {
                content: self.text,
                tool_calls: self.calls,
                reasoning: None,
                provider_blocks: Vec::new(),
            },
            finish_reason: self
                .finish_reason
                .as_deref()
                .map_or(FinishReason::Other, wire::finish_reason),
            usage: self.usage,
        }
    }
}

impl StreamAssembly for Assembly {
    fn apply(&mut self, event: &SseEvent, cx: &StreamContext<'_>) -> Result<bool, LlmError> {
        let chunk: serde_json::Value = cx.parse(event)?;
        if chunk.get("error").is_some() {
            return Err(cx.http.interrupted(format!(
                "the provider sent an error mid-stream: {}",
                snippet(chunk.to_string().as_bytes())
            )));
        }
        let chunk: wire::GenerateContentResponse = serde_json::from_value(chunk).map_err(|e| {
            cx.http
                .invalid(format!("stream chunk is not the documented JSON: {e}"))
        })?;
        self.take(chunk, cx.on_text);
        Ok(false)
    }

    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError> {
        if self.finish_reason.is_none() {
            return Err(http.interrupted(format!(
                "no finishReason arrived ({} tool call(s) so far)",
                self.calls.len()
            )));
        }
        Ok(self.into_answer())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::GenerateContent;
    use super::wire::response_object;
    use crate::llm::format::request_body;
    use crate::llm::{
        AssistantMessage, ChatRequest, GenerationParams, Message, ToolCall, ToolChoice, ToolResult,
    };
    use crate::tools::ToolSpec;

    fn result(content: &str, is_error: bool) -> ToolResult {
        ToolResult {
            tool_call_id: "gemini_call_0_0".into(),
            name: "t".into(),
            content: content.into(),
            is_error,
            parts: Vec::new(),
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
        let body = signed_history("sig");
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "t", "args": {}}, "thoughtSignature": "sig"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "t", "response": {"result": 1}}}]}
            ])
        );
    }

    #[test]
    fn another_format_s_call_state_is_not_sent_as_a_thought_signature() {
        let body = signed_history(r#"{"responses_item_id":"fc_1","responses_before":[]}"#);
        assert!(
            body["contents"][1]["parts"][0]
                .get("thoughtSignature")
                .is_none(),
            "{body}"
        );
    }

    fn signed_history(signature: &str) -> serde_json::Value {
        let messages = vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "gemini_call_0_0".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                    signature: Some(signature.into()),
                }],
                reasoning: None,
                provider_blocks: Vec::new(),
            }),
            Message::Tool(result("1", false)),
        ];
        let format = GenerateContent {
            model: "m".into(),
            max_tokens: None,
        };
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            deferred: &[],
            params: &GenerationParams::default(),
            stream: false,
            on_text: None,
        };
        request_body(&format, &request).expect("json")
    }

    fn body(params: &GenerationParams, max_tokens: Option<u32>) -> serde_json::Value {
        let format = GenerateContent {
            model: "m".into(),
            max_tokens,
        };
        let tools = [ToolSpec {
            name: "add".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object"}),
        }];
        let messages = [Message::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools: &tools,
            deferred: &[],
            params,
            stream: false,
            on_text: None,
        };
        let mut body = request_body(&format, &request).expect("valid");
        let fields = body.as_object_mut().expect("object");
        for structural in ["contents", "tools"] {
            fields.remove(structural);
        }
        body
    }

    #[test]
    fn generation_params_reach_generation_and_tool_config() {
        assert_eq!(body(&GenerationParams::default(), None), json!({}));
        assert_eq!(
            body(&GenerationParams::default(), Some(64)),
            json!({"generationConfig": {"maxOutputTokens": 64}})
        );
        let params = GenerationParams {
            temperature: Some(0.2),
            top_p: Some(0.9),
            max_output_tokens: Some(100),
            stop: vec!["END".into(), "STOP".into()],
            seed: Some(7),
            tool_choice: ToolChoice::Tool("add".into()),
            parallel_tool_calls: Some(true),
            extra: json!({"generationConfig": {"topK": 40}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        assert_eq!(
            body(&params, Some(64)),
            json!({
                "generationConfig": {
                    "temperature": 0.2, "topP": 0.9, "maxOutputTokens": 100,
                    "stopSequences": ["END", "STOP"], "seed": 7, "topK": 40
                },
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}}
            })
        );
        for (choice, mode) in [(ToolChoice::Required, "ANY"), (ToolChoice::None, "NONE")] {
            let params = GenerationParams {
                tool_choice: choice,
                ..GenerationParams::default()
            };
            assert_eq!(
                body(&params, None)["toolConfig"],
                json!({"functionCallingConfig": {"mode": mode}})
            );
        }
    }
}
