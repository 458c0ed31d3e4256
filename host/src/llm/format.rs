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
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::history::{next_turn_index, normalize_answer};
use super::http::{HttpClient, snippet};
use super::media;
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

    /// Whether the API has a tool search of its own
    /// ([`Provider::native_tool_search`]).
    const NATIVE_TOOL_SEARCH: bool = false;

    /// Headers `request` needs besides the provider's own (a beta flag for
    /// a feature it uses, say).
    fn headers(&self, _request: &ChatRequest<'_>) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

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
///
/// Images in tool results go as the wire format takes them, unless the
/// model takes none: declared with
/// [`with_image_input(false)`](Self::with_image_input), or learnt when the
/// server answers a request that carried images with an error saying it
/// takes no image input. Then that request is sent once more with text
/// stand-ins for the images, and so is every later one of this provider.
#[derive(Debug)]
pub struct HttpProvider<F> {
    pub(super) http: HttpClient,
    pub(super) format: F,
    pub(super) images: ImageInput,
}

/// Whether tool images go to the model as images.
#[derive(Debug)]
pub(super) struct ImageInput {
    /// The operator's word: `false` when the model takes no images.
    declared: bool,
    /// The server answered that the model takes no image input.
    refused: AtomicBool,
}

impl Default for ImageInput {
    fn default() -> Self {
        Self {
            declared: true,
            refused: AtomicBool::new(false),
        }
    }
}

/// The stand-in's reason when the operator said the model takes no images.
const DECLARED_TEXT_ONLY: &str = "this model is set up to take no images";
/// The stand-in's reason once the server refused an image.
const REFUSED_IMAGES: &str = "the provider answered that this model takes no image input";

impl ImageInput {
    /// Why images go as text stand-ins, or `None` when they go as images.
    fn text_only(&self) -> Option<&'static str> {
        if !self.declared {
            Some(DECLARED_TEXT_ONLY)
        } else if self.refused.load(Ordering::Relaxed) {
            Some(REFUSED_IMAGES)
        } else {
            None
        }
    }
}

impl<F> HttpProvider<F> {
    /// Whether the model takes images in tool results and user messages (default `true`:
    /// as many as the wire format takes). With `false`, every image goes
    /// as a text stand-in that names its type and size, as for a
    /// text-only API; for a model that cannot see (a local server without
    /// a vision projector answers 500 "image input is not supported").
    #[must_use]
    pub fn with_image_input(mut self, accepted: bool) -> Self {
        self.images.declared = accepted;
        self
    }
}

impl<F: WireFormat> HttpProvider<F> {
    async fn run(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        if !media::has_images(request.messages) {
            return self.send(request).await;
        }
        if let Some(why) = self.images.text_only() {
            let messages = media::without_images(request.messages, why);
            return self
                .send(ChatRequest {
                    messages: &messages,
                    ..request
                })
                .await;
        }
        match self.send(request).await {
            Err(error) if media::refuses_images(&error) => {
                tracing::warn!(
                    provider = %self.http.provider(),
                    error = %error,
                    "the model takes no image input; tool images go as text from now on"
                );
                self.images.refused.store(true, Ordering::Relaxed);
                let messages = media::without_images(request.messages, REFUSED_IMAGES);
                self.send(ChatRequest {
                    messages: &messages,
                    ..request
                })
                .await
            }
            other => other,
        }
    }

    async fn send(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let body =
            request_body(&self.format, &request).map_err(|source| LlmError::InvalidParams {
                provider: self.http.provider().to_owned(),
                source,
            })?;
        let url = self.http.url(&self.format.endpoint(request.stream));
        let headers = self.format.headers(&request);
        let response = self.http.post_json(&url, &body, &headers).await?;
        self.answer(response, &request).await
    }

    /// The answer `response` (a success) carries to `request`: its body
    /// read within the response limits and decoded.
    async fn answer(
        &self,
        response: reqwest::Response,
        request: &ChatRequest<'_>,
    ) -> Result<ChatResponse, LlmError> {
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

    /// Decode `chunks`, as they would arrive, as the body of a successful
    /// answer (a stream of server-sent events when `stream`) to a first
    /// request, the way [`Provider::complete`] does once the provider
    /// answered. For the fuzz targets (`host/fuzz`); not a stable API.
    ///
    /// # Errors
    ///
    /// What [`Provider::complete`] answers for such a body.
    #[doc(hidden)]
    pub async fn decode_answer(
        &self,
        chunks: Vec<Vec<u8>>,
        stream: bool,
    ) -> Result<ChatResponse, LlmError> {
        let chunks = chunks.into_iter().map(Ok::<_, std::io::Error>);
        let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
        let response = reqwest::Response::from(http::Response::new(body));
        let params = super::GenerationParams::default();
        let request = ChatRequest {
            messages: &[],
            tools: &[],
            params: &params,
            stream,
            on_text: None,
            deferred: &[],
        };
        self.answer(response, &request).await
    }
}

impl<F: WireFormat> Provider for HttpProvider<F> {
    fn name(&self) -> &str {
        self.http.provider()
    }

    fn model(&self) -> Option<&str> {
        self.format.model()
    }

    fn native_tool_search(&self) -> bool {
        F::NATIVE_TOOL_SEARCH
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.run(request))
    }
}
