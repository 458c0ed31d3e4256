//! HTTP plumbing shared by every wire format: one client per provider,
//! retries with backoff, `Retry-After`, timeouts and readable errors.
//!
//! What is retried: HTTP 429, every 5xx, connection errors and timeouts
//! while waiting for the response head. Nothing is retried once the body of
//! a successful response has started (a cut stream is
//! [`LlmError::StreamInterrupted`], and replaying half an answer would
//! duplicate text the user already saw).
//!
//! What is read is capped ([`ResponseLimits`]): a whole body, one SSE
//! event, all of a stream. Past a cap reading stops and the request fails
//! with [`LlmError::TooLarge`], which names the cap; an error body is read
//! up to [`ERROR_BODY_BYTES`] and the rest is left unread.

use std::fmt;
use std::time::{Duration, SystemTime};

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::LlmError;

mod read;

use super::sse::{EventTooLarge, SseEvent, SseParser};
use crate::tools::retry_after::parse_retry_after;
use read::{Body, Cap, read_capped, too_large, with_note};
pub(crate) use read::{error_message, snippet};

/// How to reach a provider's HTTP API.
///
/// Every field is public; [`HttpConfig::new`] fills in the defaults listed
/// on each field.
#[derive(Clone)]
pub struct HttpConfig {
    /// The API root, e.g. `https://api.openai.com/v1`. Each wire format
    /// documents which part of the path it expects here.
    pub base_url: String,
    /// The API key. `None` sends no credentials (local servers). Never
    /// printed: `Debug` shows `<redacted>`.
    pub api_key: Option<String>,
    /// How long to wait for the response head, for a whole non-streaming
    /// body, and between two chunks of a stream. Default 600 s (what the
    /// official SDKs use: long answers are slow).
    pub timeout: Duration,
    /// Retries after the first attempt, on 429, 5xx, connection errors and
    /// timeouts. Default 2.
    pub max_retries: u32,
    /// The first backoff; it doubles on each retry, with jitter.
    /// Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest computed backoff. Default 8 s.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured. A provider asking for a longer
    /// wait gets no retry: the error is returned at once, with the wait in
    /// its message. Default 60 s.
    pub max_retry_after: Duration,
    /// Extra headers sent with every request (name, value), e.g. an
    /// organisation id or a proxy's routing header. Values are redacted in
    /// `Debug` output, since they may hold credentials.
    pub extra_headers: Vec<(String, String)>,
    /// How much of an answer is read at most; defaults on
    /// [`ResponseLimits::default`].
    pub limits: ResponseLimits,
}

/// The most bytes read of a provider's answer. Past a cap the request
/// fails with [`LlmError::TooLarge`] naming it; nothing is retried (the
/// same request would get the same answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    /// A whole (not streamed) body. Default 16 MiB: a long answer is a few
    /// hundred KiB of JSON.
    pub max_body_bytes: usize,
    /// One server-sent event: its data lines together, and any one line
    /// (a comment too). Default 4 MiB: the Responses API's closing event
    /// repeats the whole answer, encrypted reasoning included.
    pub max_event_bytes: usize,
    /// All of one stream, events and everything between them. Default
    /// 64 MiB: streaming spends some JSON on every few characters.
    pub max_stream_bytes: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 << 20,
            max_event_bytes: 4 << 20,
            max_stream_bytes: 64 << 20,
        }
    }
}

/// The most bytes of an error body read for its message; the rest is not
/// read (the status says the request failed; the message needs a line).
pub const ERROR_BODY_BYTES: usize = 64 << 10;

impl HttpConfig {
    /// A config for `base_url` with the documented defaults and no key.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            timeout: Duration::from_secs(600),
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            extra_headers: Vec::new(),
            limits: ResponseLimits::default(),
        }
    }

    /// The same config with `api_key` set.
    #[must_use]
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }
}

/// OpenAI's API (the path `/chat/completions` is appended).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// DeepSeek's API (OpenAI-compatible).
pub const DEEPSEEK_BASE_URL: &str = "https://api.deepseek.com";
/// Anthropic's API (without `/v1`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// Gemini's API (without the API version).
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A provider's own API host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OfficialHost {
    OpenAi,
    DeepSeek,
    Anthropic,
    Gemini,
}

impl OfficialHost {
    /// Each provider's own base URL: the one place its host is written.
    const ALL: [(Self, &'static str); 4] = [
        (Self::OpenAi, OPENAI_BASE_URL),
        (Self::DeepSeek, DEEPSEEK_BASE_URL),
        (Self::Anthropic, ANTHROPIC_BASE_URL),
        (Self::Gemini, GEMINI_BASE_URL),
    ];
}

/// Whose API `base_url` is: an exact host over HTTPS on port 443 with no
/// user info, or `None` (a look-alike such as `api.openai.com.evil.example`,
/// plain HTTP, another port, or an unparsable URL is nobody's).
pub(crate) fn official_host(base_url: &str) -> Option<OfficialHost> {
    let url = reqwest::Url::parse(base_url).ok()?;
    if url.scheme() != "https"
        || url.port().is_some_and(|p| p != 443)
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.');
    OfficialHost::ALL.iter().find_map(|&(official, base)| {
        let official_host = base.strip_prefix("https://")?.split('/').next()?;
        (official_host == host).then_some(official)
    })
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<String> = self
            .extra_headers
            .iter()
            .map(|(name, _)| format!("{name}: <redacted>"))
            .collect();
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("extra_headers", &headers)
            .field("limits", &self.limits)
            .finish()
    }
}

/// One provider's HTTP client.
pub struct HttpClient {
    provider: String,
    config: HttpConfig,
    client: reqwest::Client,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("provider", &self.provider)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What one attempt ended with, for the retry decision.
enum Attempt {
    Done(reqwest::Response),
    Retry {
        error: LlmError,
        wait: Option<Duration>,
    },
    Fail(LlmError),
}

impl HttpClient {
    /// A client for `provider` that sends the key as `auth_header`
    /// (with `auth_prefix` before it, e.g. `"Bearer "`), plus
    /// `fixed_headers` and the config's extra headers on every request.
    pub(crate) fn new(
        provider: impl Into<String>,
        config: HttpConfig,
        auth_header: &'static str,
        auth_prefix: &str,
        fixed_headers: &[(&'static str, &str)],
    ) -> Result<Self, LlmError> {
        let provider = provider.into();
        let config_error = |message: String| LlmError::Config {
            provider: provider.clone(),
            message,
        };
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("{auth_prefix}{key}")).map_err(|_| {
                config_error("the API key contains characters not allowed in an HTTP header; check it for stray newlines".into())
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(auth_header), value);
        }
        for (name, value) in fixed_headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| config_error(format!("header {name} has an invalid value")))?;
            headers.insert(HeaderName::from_static(name), value);
        }
        for (name, value) in &config.extra_headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                config_error(format!(
                    "extra header name {name:?} is not a valid HTTP header name"
                ))
            })?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                config_error(format!(
                    "extra header {name} has a value that is not valid in HTTP"
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = crate::tls::http_client()
            .default_headers(headers)
            .connect_timeout(config.timeout)
            // Never follow a redirect: reqwest would carry the key headers
            // (`x-api-key`, `x-goog-api-key`) to wherever it points. A
            // provider that answers 3xx is an error to report, not follow.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| config_error(format!("could not build the HTTP client: {e}")))?;
        Ok(Self {
            provider,
            config,
            client,
        })
    }

    /// The provider's name.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// `path` appended to the base URL (one `/` between them).
    pub(crate) fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.config.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// POST `body` as JSON to `url` with `headers` besides the client's own,
    /// retrying as documented on [`HttpConfig`], and return the first
    /// successful response.
    pub(crate) async fn post_json<B: Serialize + ?Sized>(
        &self,
        url: &str,
        body: &B,
        headers: &[(&'static str, &'static str)],
    ) -> Result<reqwest::Response, LlmError> {
        let body = serde_json::to_vec(body).map_err(|e| LlmError::InvalidResponse {
            provider: self.provider.clone(),
            message: format!("could not encode the request: {e}"),
        })?;
        let mut retry = 0;
        loop {
            let error = match self.attempt(url, &body, headers).await {
                Attempt::Done(response) => return Ok(response),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry { error, wait } => {
                    if retry >= self.config.max_retries {
                        return Err(error);
                    }
                    match wait {
                        Some(wait) if wait > self.config.max_retry_after => {
                            return Err(with_note(
                                error,
                                &format!(
                                    "the provider asked to retry after {wait:?}, longer than max_retry_after"
                                ),
                            ));
                        }
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => tokio::time::sleep(self.backoff(retry)).await,
                    }
                    error
                }
            };
            retry += 1;
            tracing::debug!(provider = %self.provider, retry, error = %error, "retrying request");
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: &[u8],
        headers: &[(&'static str, &'static str)],
    ) -> Attempt {
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(body.to_vec()).send();
        let response = match tokio::time::timeout(self.config.timeout, request).await {
            Err(_) => {
                return Attempt::Retry {
                    error: self.timeout_error(),
                    wait: None,
                };
            }
            Ok(Err(e)) if e.is_timeout() => {
                return Attempt::Retry {
                    error: self.timeout_error(),
                    wait: None,
                };
            }
            Ok(Err(e)) => {
                let retryable = e.is_connect() || e.is_request();
                let error = LlmError::Connect {
                    provider: self.provider.clone(),
                    url: url.to_owned(),
                    source: Box::new(e),
                };
                return if retryable {
                    Attempt::Retry { error, wait: None }
                } else {
                    Attempt::Fail(error)
                };
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Attempt::Done(response);
        }
        let wait = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let limit = ERROR_BODY_BYTES.min(self.config.limits.max_body_bytes);
        let text =
            match tokio::time::timeout(self.config.timeout, read_capped(response, limit)).await {
                Ok(Ok(Body::Whole(bytes) | Body::Cut(bytes))) => {
                    String::from_utf8_lossy(&bytes).into_owned()
                }
                Ok(Err(_)) | Err(_) => String::new(),
            };
        let error = LlmError::Status {
            provider: self.provider.clone(),
            status: status.as_u16(),
            message: error_message(&text),
        };
        // A server that says the model takes no images says it again.
        let retryable = status.as_u16() == 429 || status.is_server_error();
        if retryable && !super::media::refuses_images(&error) {
            Attempt::Retry { error, wait }
        } else {
            Attempt::Fail(error)
        }
    }

    /// The backoff before retry number `retry` (0-based): the initial
    /// backoff doubled `retry` times, capped, then between half and all of
    /// it at random so that many clients do not retry in step.
    fn backoff(&self, retry: u32) -> Duration {
        let base = self
            .config
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.config.max_backoff);
        let half = base / 2;
        half + half.mul_f64(rand::random::<f64>())
    }

    fn timeout_error(&self) -> LlmError {
        LlmError::Timeout {
            provider: self.provider.clone(),
            timeout: self.config.timeout,
        }
    }

    /// Read a whole JSON body, within the timeout and
    /// [`ResponseLimits::max_body_bytes`].
    pub(crate) async fn read_json<T: DeserializeOwned>(
        &self,
        response: reqwest::Response,
    ) -> Result<T, LlmError> {
        let limit = self.config.limits.max_body_bytes;
        let read = tokio::time::timeout(self.config.timeout, read_capped(response, limit));
        let bytes = match read.await {
            Err(_) => return Err(self.timeout_error()),
            Ok(Err(e)) => {
                return Err(LlmError::StreamInterrupted {
                    provider: self.provider.clone(),
                    message: format!("the response body could not be read: {e}"),
                });
            }
            Ok(Ok(Body::Cut(_))) => return Err(self.too_large(Cap::Body, limit)),
            Ok(Ok(Body::Whole(bytes))) => bytes,
        };
        serde_json::from_slice(&bytes)
            .map_err(|e| self.invalid(format!("{e} in {}", snippet(&bytes))))
    }

    /// The server-sent events of a streaming response. A body error or a
    /// gap longer than the timeout ends the stream with
    /// [`LlmError::StreamInterrupted`] / [`LlmError::Timeout`]; an event
    /// past [`ResponseLimits::max_event_bytes`] or a stream past
    /// [`ResponseLimits::max_stream_bytes`] ends it with
    /// [`LlmError::TooLarge`], and nothing more is read.
    pub(crate) fn events(
        &self,
        response: reqwest::Response,
    ) -> impl Stream<Item = Result<SseEvent, LlmError>> + Send + 'static {
        let provider = self.provider.clone();
        let timeout = self.config.timeout;
        let limits = self.config.limits;
        let body = response.bytes_stream().boxed();
        let state = EventsState {
            body,
            parser: SseParser::new(limits.max_event_bytes),
            queue: std::collections::VecDeque::new(),
            ended: false,
            read: 0,
        };
        futures::stream::unfold(state, move |mut state| {
            let provider = provider.clone();
            async move {
                let error = loop {
                    if let Some(event) = state.queue.pop_front() {
                        return Some((Ok(event), state));
                    }
                    if state.ended {
                        return None;
                    }
                    match tokio::time::timeout(timeout, state.body.next()).await {
                        Err(_) => break LlmError::Timeout { provider, timeout },
                        Ok(Some(Err(e))) => {
                            break LlmError::StreamInterrupted {
                                provider,
                                message: format!("the connection failed mid-stream: {e}"),
                            };
                        }
                        Ok(Some(Ok(chunk))) => {
                            state.read = state.read.saturating_add(chunk.len());
                            if state.read > limits.max_stream_bytes {
                                break too_large(provider, Cap::Stream, limits.max_stream_bytes);
                            }
                            match state.parser.push(&chunk) {
                                Ok(events) => state.queue.extend(events),
                                Err(EventTooLarge) => {
                                    break too_large(provider, Cap::Event, limits.max_event_bytes);
                                }
                            }
                        }
                        Ok(None) => {
                            state.ended = true;
                            state.queue.extend(state.parser.finish());
                        }
                    }
                };
                // Stop reading: drop what is queued and end after the error.
                state.ended = true;
                state.queue.clear();
                Some((Err(error), state))
            }
        })
    }

    /// An [`LlmError::TooLarge`] from this provider.
    fn too_large(&self, cap: Cap, limit: usize) -> LlmError {
        too_large(self.provider.clone(), cap, limit)
    }

    /// An [`LlmError::InvalidResponse`] from this provider.
    pub(crate) fn invalid(&self, message: impl Into<String>) -> LlmError {
        LlmError::InvalidResponse {
            provider: self.provider.clone(),
            message: message.into(),
        }
    }

    /// An [`LlmError::StreamInterrupted`] from this provider.
    pub(crate) fn interrupted(&self, message: impl Into<String>) -> LlmError {
        LlmError::StreamInterrupted {
            provider: self.provider.clone(),
            message: message.into(),
        }
    }
}

/// What [`HttpClient::events`] carries from one event to the next.
struct EventsState {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: SseParser,
    queue: std::collections::VecDeque<SseEvent>,
    ended: bool,
    /// Bytes of the body read so far.
    read: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_provider_json() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Rate limit","type":"requests"}}"#),
            "requests: Rate limit"
        );
        assert_eq!(
            error_message(
                r#"[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}]"#
            ),
            "INVALID_ARGUMENT: bad"
        );
        assert_eq!(error_message("upstream down"), "upstream down");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn debug_redacts_keys_and_header_values() {
        let mut config =
            HttpConfig::new("https://api.example.com/v1").with_api_key("sk-secret-123");
        config
            .extra_headers
            .push(("x-org".into(), "org-secret".into()));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(!shown.contains("org-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
