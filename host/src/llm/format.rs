//! One HTTP provider for every wire format.
//!
//! What differs between OpenAI Chat Completions, Anthropic Messages and
//! Gemini `generateContent` is the JSON: how a neutral request is encoded,
//! where it is posted, and how a whole answer or a stream of events is read
//! back. That is a [`WireFormat`]. Everything else, posting with retries,
//! reading SSE, timeouts, error mapping, and the normalisation every answer
//! gets ([`normalize_answer`]), is [`HttpProvider`], written once. A new
//! wire format (say OpenAI's Responses API) is one module implementing
//! [`WireFormat`], [`StreamAssembly`] and the conversion of a whole answer
//! into a [`ChatResponse`], and nothing else.

use std::fmt;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::history::{next_turn_index, normalize_answer};
use super::http::{HttpClient, snippet};
use super::params::{ParamError, ParamRules, merge_extra};
use super::sse::SseEvent;
use super::{ChatRequest, ChatResponse, LlmError, Provider, TextSink};

/// A provider's JSON: encoding requests, decoding answers.
pub trait WireFormat: fmt::Debug + Send + Sync + 'static {
    /// A whole (not streamed) answer, as the provider documents it, and
    /// its conversion to the neutral answer (an error says what makes it
    /// unusable, for [`LlmError::InvalidResponse`]).
    type Response: DeserializeOwned + TryInto<ChatResponse, Error: fmt::Display>;
    /// Builds an answer from stream events.
    type Stream: StreamAssembly;

    /// The prefix of the ids given to calls that arrive without one:
    /// `call`, unless the provider's own ids look otherwise.
    const ID_PREFIX: &'static str = "call";

    /// The path, relative to the base URL, to post to.
    fn endpoint(&self, stream: bool) -> String;

    /// The model asked for, for traces (`gen_ai.request.model`).
    fn model(&self) -> Option<&str> {
        None
    }

    /// The body for `request`, without its generation parameters.
    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> impl Serialize + Send + Sync + 'a;

    /// What the API accepts, checked before anything is sent.
    fn rules(&self) -> ParamRules;

    /// Add the request's generation parameters (already checked against
    /// [`rules`](Self::rules)) to the body `encode` wrote.
    fn parameters(&self, request: &ChatRequest<'_>, body: &mut Map<String, Value>);
}

/// The whole body for `request`: what [`WireFormat::encode`] writes, the
/// generation parameters ([`WireFormat::parameters`], after
/// [`GenerationParams::check`](super::GenerationParams) against the
/// format's rules), then `extra` merged in.
pub(super) fn request_body<F: WireFormat>(
    format: &F,
    request: &ChatRequest<'_>,
) -> Result<Value, ParamError> {
    request.params.check(&format.rules(), request.tools)?;
    let mut body = serde_json::to_value(format.encode(request))
        .map_err(|e| ParamError::new("request", format!("cannot be written as JSON: {e}")))?;
    if let Value::Object(fields) = &mut body {
        format.parameters(request, fields);
    }
    merge_extra(&mut body, &request.params.extra)?;
    Ok(body)
}

/// Insert `key: value` when there is a value.
pub(super) fn put(body: &mut Map<String, Value>, key: &str, value: Option<impl Serialize>) {
    if let Some(value) = value.and_then(|v| serde_json::to_value(v).ok()) {
        body.insert(key.to_owned(), value);
    }
}

/// Assembles one streamed answer, event by event.
pub trait StreamAssembly: Default + Send {
    /// Take one event; `Ok(true)` when it ends the answer (later events are
    /// not read).
    ///
    /// # Errors
    ///
    /// The event is not the documented JSON, or reports an error.
    fn apply(&mut self, event: &SseEvent, cx: &StreamContext<'_>) -> Result<bool, LlmError>;

    /// The answer, once the stream ended.
    ///
    /// # Errors
    ///
    /// The stream ended before the answer was complete.
    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError>;
}

/// What a [`StreamAssembly`] reads events with.
pub struct StreamContext<'a> {
    /// The provider's client, for its errors.
    pub(super) http: &'a HttpClient,
    /// Where answer text goes as it arrives.
    pub(super) on_text: Option<TextSink<'a>>,
}

impl fmt::Debug for StreamContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamContext")
            .field("http", self.http)
            .field("on_text", &self.on_text.is_some())
            .finish()
    }
}

impl StreamContext<'_> {
    /// The event's `data`, decoded as JSON.
    pub(super) fn parse<T: DeserializeOwned>(&self, event: &SseEvent) -> Result<T, LlmError> {
        serde_json::from_str(&event.data).map_err(|e| {
            self.http.invalid(format!(
                "stream event is not the documented JSON ({e}): {}",
                snippet(event.data.as_bytes())
            ))
        })
    }
}

/// Pass a piece of answer text to the sink, unless it is empty.
pub(super) fn emit(on_text: Option<TextSink<'_>>, text: &str) {
    if let Some(sink) = on_text
        && !text.is_empty()
    {
        sink(text);
    }
}

/// A chat model behind HTTP, speaking wire format `F`
/// ([`OpenAiProvider`](super::OpenAiProvider),
/// [`AnthropicProvider`](super::AnthropicProvider),
/// [`GeminiProvider`](super::GeminiProvider)).
#[derive(Debug)]
pub struct HttpProvider<F> {
    pub(super) http: HttpClient,
    pub(super) format: F,
}

impl<F: WireFormat> HttpProvider<F> {
    async fn run(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let body =
            request_body(&self.format, &request).map_err(|source| LlmError::InvalidParams {
                provider: self.http.provider().to_owned(),
                source,
            })?;
        let url = self.http.url(&self.format.endpoint(request.stream));
        let response = self.http.post_json(&url, &body).await?;
        let mut answer = if request.stream {
            let cx = StreamContext {
                http: &self.http,
                on_text: request.on_text,
            };
            let mut assembly = F::Stream::default();
            let mut events = std::pin::pin!(self.http.events(response));
            while let Some(event) = events.next().await {
                if assembly.apply(&event?, &cx)? {
                    break;
                }
            }
            assembly.finish(&self.http)?
        } else {
            let response: F::Response = self.http.read_json(response).await?;
            response
                .try_into()
                .map_err(|e| self.http.invalid(e.to_string()))?
        };
        normalize_answer(&mut answer, F::ID_PREFIX, next_turn_index(request.messages));
        Ok(answer)
    }
}

impl<F: WireFormat> Provider for HttpProvider<F> {
    fn name(&self) -> &str {
        self.http.provider()
    }

    fn model(&self) -> Option<&str> {
        self.format.model()
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.run(request))
    }
}
