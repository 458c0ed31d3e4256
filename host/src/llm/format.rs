//! One HTTP provider for every wire format.
//!
//! What differs between OpenAI Chat Completions, Anthropic Messages and
//! Gemini `generateContent` is the JSON: how a neutral request is encoded,
//! where it is posted, and how a whole answer or a stream of events is read
//! back. That is a [`WireFormat`]. Everything else, posting with retries,
//! reading SSE, timeouts, error mapping, and the normalisation every answer
//! gets ([`normalize_answer`]), is [`HttpProvider`], written once. A new
//! wire format (say OpenAI's Responses API) is one module implementing
//! [`WireFormat`] and [`StreamAssembly`], and nothing else.

use std::fmt;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::history::{next_turn_index, normalize_answer};
use super::http::HttpClient;
use super::sse::SseEvent;
use super::{ChatRequest, ChatResponse, LlmError, Provider, TextSink};

/// A provider's JSON: encoding requests, decoding answers.
pub trait WireFormat: fmt::Debug + Send + Sync + 'static {
    /// The request body.
    type Body<'a>: Serialize + Send + Sync
    where
        Self: 'a;
    /// A whole (not streamed) answer, as the provider documents it.
    type Response: DeserializeOwned;
    /// Builds an answer from stream events.
    type Stream: StreamAssembly;

    /// The prefix of the ids given to calls that arrive without one.
    const ID_PREFIX: &'static str;

    /// The path, relative to the base URL, to post to.
    fn endpoint(&self, stream: bool) -> String;

    /// The body for `request`.
    fn encode<'a>(&'a self, request: &ChatRequest<'a>) -> Self::Body<'a>;

    /// The neutral answer for a whole response.
    ///
    /// # Errors
    ///
    /// What makes the response unusable, for [`LlmError::InvalidResponse`].
    fn decode(&self, response: Self::Response) -> Result<ChatResponse, String>;
}

/// Assembles one streamed answer, event by event.
pub trait StreamAssembly: Default + Send {
    /// Take one event; `Ok(true)` when it ends the answer (later events are
    /// not read).
    ///
    /// # Errors
    ///
    /// The event is not the documented JSON, or reports an error.
    fn apply(
        &mut self,
        http: &HttpClient,
        event: &SseEvent,
        on_text: Option<TextSink<'_>>,
    ) -> Result<bool, LlmError>;

    /// The answer, once the stream ended.
    ///
    /// # Errors
    ///
    /// The stream ended before the answer was complete.
    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError>;
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
        let body = self.format.encode(&request);
        let url = self.http.url(&self.format.endpoint(request.stream));
        let response = self.http.post_json(&url, &body).await?;
        let mut answer = if request.stream {
            let mut assembly = F::Stream::default();
            let mut events = std::pin::pin!(self.http.events(response));
            while let Some(event) = events.next().await {
                if assembly.apply(&self.http, &event?, request.on_text)? {
                    break;
                }
            }
            assembly.finish(&self.http)?
        } else {
            let response: F::Response = self.http.read_json(response).await?;
            self.format
                .decode(response)
                .map_err(|message| self.http.invalid(message))?
        };
        normalize_answer(&mut answer, F::ID_PREFIX, next_turn_index(request.messages));
        Ok(answer)
    }
}

impl<F: WireFormat> Provider for HttpProvider<F> {
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
