//! LLM providers: one module per wire format, behind one [`Provider`] trait.
//!
//! The loop speaks only the neutral model ([`Message`] and its parts); each wire module
//! keeps private serde types for its provider's JSON and converts at the
//! edge. The HTTP plumbing (posting with retries, SSE, timeouts, errors) and
//! what every answer gets (unique call ids, the finish reason the calls
//! imply) are written once, in [`HttpProvider`]; a wire module only encodes
//! requests and decodes answers (`format::WireFormat`). The tool-call
//! invariant every provider enforces is checked in one place
//! ([`check_messages`]).

mod anthropic;
mod convert;
#[cfg(test)]
pub(crate) mod fixtures;
mod format;
mod gemini;
mod history;
mod http;
mod ids;
mod kind;
pub(crate) mod media;
mod message;
mod openai;
mod params;
mod replay;
mod responses;
pub(crate) mod sse;

use futures::future::BoxFuture;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider};
pub use format::HttpProvider;
pub use gemini::{GeminiConfig, GeminiProvider};
pub use history::{InvariantError, check_messages, dedupe_call_ids};
pub use http::{
    ANTHROPIC_BASE_URL, DEEPSEEK_BASE_URL, ERROR_BODY_BYTES, GEMINI_BASE_URL, HttpConfig,
    OPENAI_BASE_URL, ResponseLimits,
};
pub use kind::{ProviderKind, ProviderOptions, UnknownProvider};
pub use message::{AssistantMessage, FinishReason, Message, ToolCall, ToolResult, Usage};
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use params::{GenerationParams, ParamError, ToolChoice};
pub use replay::ReplayProvider;
pub use responses::{ResponsesConfig, ResponsesProvider};

use crate::tools::ToolSpec;

/// Called with each piece of answer text as it streams in.
pub type TextSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// One request to a model.
#[derive(Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call in this request.
    pub tools: &'a [ToolSpec],
    /// The names of those of [`tools`](Self::tools) that the provider's own
    /// tool search holds back until the model finds them (Anthropic's
    /// `defer_loading`). Empty for most requests; set only for a provider
    /// whose [`Provider::native_tool_search`] is `true`, and ignored by the
    /// others.
    pub deferred: &'a [String],
    /// How to sample, and whether (and which) tools the model may call.
    pub params: &'a GenerationParams,
    /// Stream the answer (SSE) instead of waiting for the whole of it.
    pub stream: bool,
    /// Receives answer text as it arrives, when streaming.
    pub on_text: Option<TextSink<'a>>,
}

impl std::fmt::Debug for ChatRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatRequest")
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.len())
            .field("deferred", &self.deferred.len())
            .field("params", self.params)
            .field("stream", &self.stream)
            .finish()
    }
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant turn, with whole tool calls.
    pub message: AssistantMessage,
    /// Why generation ended.
    pub finish_reason: FinishReason,
    /// Tokens used by this request.
    pub usage: Usage,
}

/// A chat model behind some wire format.
pub trait Provider: Send + Sync {
    /// The provider's name for messages, e.g. `"openai"`.
    fn name(&self) -> &str;

    /// The model its requests ask for, if it has one (for traces).
    fn model(&self) -> Option<&str> {
        None
    }

    /// Whether the provider has a tool search of its own that takes
    /// [`ChatRequest::deferred`] (Anthropic's tool search tool). The loop's
    /// [`ToolSearch`](crate::runner::ToolSearch) uses it in place of its
    /// own where it is there. Default `false`.
    fn native_tool_search(&self) -> bool {
        false
    }

    /// Send one request and return the whole answer.
    ///
    /// # Errors
    ///
    /// An [`LlmError`] naming the provider, after retries are exhausted.
    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
}

impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn model(&self) -> Option<&str> {
        (**self).model()
    }
    fn native_tool_search(&self) -> bool {
        (**self).native_tool_search()
    }
    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        (**self).complete(request)
    }
}

/// A request to a model that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider answered with an error status.
    #[error("{provider} answered HTTP {status}: {message}")]
    Status {
        /// Which provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's own error message.
        message: String,
    },
    /// The provider could not be reached.
    #[error("could not reach {provider} at {url}")]
    Connect {
        /// Which provider.
        provider: String,
        /// The URL tried.
        url: String,
        /// The transport error (connection refused, DNS, TLS, ...), for
        /// its message and source chain; its type is the HTTP client's
        /// and not part of this API.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No answer in time.
    #[error("{provider} did not answer within {timeout:?}")]
    Timeout {
        /// Which provider.
        provider: String,
        /// The request timeout.
        timeout: std::time::Duration,
    },
    /// The answer was not what the wire format documents.
    #[error("{provider} sent an answer that could not be read: {message}")]
    InvalidResponse {
        /// Which provider.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// A stream ended before the answer was complete.
    #[error("{provider} stream ended early: {message}")]
    StreamInterrupted {
        /// Which provider.
        provider: String,
        /// What was missing.
        message: String,
    },
    /// A generation parameter of the request is one the provider cannot
    /// take; the request was not sent.
    #[error("{provider} cannot take the request's generation parameters")]
    InvalidParams {
        /// Which provider.
        provider: String,
        /// Which parameter, and why.
        #[source]
        source: ParamError,
    },
    /// The answer was larger than a cap of
    /// [`ResponseLimits`]; reading stopped at the cap.
    /// Not retried. The conversation is as it was before the request.
    #[error(
        "{provider} sent {what} over the {limit}-byte cap; nothing past it was read. If answers \
         this large are expected, raise {setting} (HttpConfig::limits, or the CLI's --{flag})",
        flag = .setting.replace('_', "-")
    )]
    TooLarge {
        /// Which provider.
        provider: String,
        /// What passed the cap: a response body, a stream event, a stream.
        what: &'static str,
        /// The cap, in bytes.
        limit: usize,
        /// The [`ResponseLimits`] field that sets it, e.g.
        /// `max_body_bytes`.
        setting: &'static str,
    },
    /// The provider is not configured so that it can be called.
    #[error("{provider} is not configured: {message}")]
    Config {
        /// Which provider.
        provider: String,
        /// What is missing and how to set it.
        message: String,
    },
}
