//! Loopback HTTP servers that speak each provider's documented wire format.
//!
//! Each fake is a real axum server on `127.0.0.1:0` that:
//! - answers from a queue of scripted [`Reply`]s ([`Turn`]s rendered in the
//!   provider's own JSON, streamed as SSE one event per chunk when the
//!   request asks for a stream; HTTP errors with `Retry-After`; streams cut
//!   mid-answer by dropping the connection);
//! - records every request ([`RecordedRequest`]) for assertions;
//! - rejects, with the real provider's status and message, what the real
//!   provider rejects — above all a tool call without its result and a
//!   result without its call, and an image in a tool result where the API
//!   takes none or of a media type it does not list — *before* taking a
//!   reply off the queue.
//!
//! ```no_run
//! # async fn demo() {
//! use serde_json::json;
//! use toolhost_tests::providers::{FakeCall, FakeOpenAi, Reply, Turn};
//!
//! let server = FakeOpenAi::start().await;
//! server.push(Reply::rate_limited("1"));
//! server.push(Turn::calls(vec![FakeCall::new("add", json!({"a": 1, "b": 2}))]));
//! server.push(Turn::text("3"));
//! // Build a provider with base URL `server.url()`, run it, then:
//! let bodies = server.bodies();
//! # let _ = bodies;
//! # }
//! ```
//!
//! With no reply left, a fake answers 500 "fake server: no scripted reply
//! left", so an unexpected extra request fails the test loudly.

mod anthropic;
mod gemini;
mod media;
mod openai;
mod params;
mod responses;
mod server;

pub use anthropic::{AnthropicDialect, FakeAnthropic};
pub use gemini::{FakeGemini, GeminiDialect};
pub use openai::{FakeOpenAi, OpenAiDialect, OpenAiFlavor};
pub use responses::{FakeResponses, ResponsesDialect};
pub use server::{
    Dialect, FakeCall, FakeServer, IMAGE_REFUSAL, RecordedRequest, Rejection, Reply, Turn,
};
