//! The shared machinery of the fake providers: a real axum server on
//! 127.0.0.1, a queue of scripted replies, a log of every request, and SSE
//! bodies sent one event per chunk.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::Value;

/// One tool call a fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeCall {
    /// The id to send; `None` lets the server choose (OpenAI `call_N`,
    /// llama.cpp 32 alphanumerics, Anthropic `toolu_N`, Gemini: no id).
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments. A JSON string value is sent *as raw argument text*
    /// where the format allows it (OpenAI), to script malformed arguments.
    pub arguments: Value,
    /// Gemini only: a `thoughtSignature` to issue on this call's part. The
    /// server then rejects any later history that omits or changes it.
    pub signature: Option<String>,
    /// Responses only: the `function_call` item's `id` (default a fresh
    /// `fc_N`), to script a server that repeats item ids.
    pub item_id: Option<String>,
}

impl FakeCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments,
            signature: None,
            item_id: None,
        }
    }

    /// The same call with a fixed id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same call with a Responses item id.
    #[must_use]
    pub fn with_item_id(mut self, id: impl Into<String>) -> Self {
        self.item_id = Some(id.into());
        self
    }

    /// The same call with a Gemini `thoughtSignature`.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// The argument text as the OpenAI format carries it.
    pub(crate) fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// One assistant answer, rendered in each server's own format.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// Answer text (streamed a few characters per event).
    pub text: String,
    /// Tool calls, in order.
    pub calls: Vec<FakeCall>,
    /// OpenAI-compatible servers: `reasoning_content` (DeepSeek).
    pub reasoning: Option<String>,
    /// Anthropic: queries the model gives the API's tool search tool
    /// before its calls (the fake searches the request's deferred tools
    /// and answers with `server_tool_use` and `tool_search_tool_result`
    /// blocks).
    pub searches: Vec<String>,
    /// (input, output) tokens reported.
    pub usage: (u64, u64),
}

impl Turn {
    /// A text-only answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            usage: (10, 5),
            ..Self::default()
        }
    }

    /// An answer that calls tools.
    pub fn calls(calls: Vec<FakeCall>) -> Self {
        Self {
            calls,
            usage: (10, 5),
            ..Self::default()
        }
    }

    /// The same answer with text too.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// The same answer with reasoning (DeepSeek).
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// The same answer with a search by the provider's own tool search
    /// first (Anthropic).
    #[must_use]
    pub fn searching(mut self, query: impl Into<String>) -> Self {
        self.searches.push(query.into());
        self
    }

    /// The same answer reporting `input` and `output` tokens.
    #[must_use]
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = (input, output);
        self
    }
}

/// What the server does with the next request that passes its checks.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer, streaming if the request asked for it.
    Turn(Turn),
    /// Send only the first `events` stream events of this answer (or half
    /// the JSON body when not streaming), then drop the connection.
    Cut {
        /// The answer being cut.
        turn: Turn,
        /// How many events get out.
        events: usize,
    },
    /// A body sent as it is, whatever the request asked: `head`, then
    /// `chunk` `times` times (without end when `None`), one chunk at a
    /// time, so that a client that stops reading stops the server too.
    Raw {
        /// The status.
        status: u16,
        /// The `Content-Type`.
        content_type: &'static str,
        /// The first bytes.
        head: String,
        /// The bytes repeated after them.
        chunk: String,
        /// How many times; `None`: for ever.
        times: Option<usize>,
    },
    /// An HTTP error in the provider's error format.
    Error {
        /// The status.
        status: u16,
        /// The provider's `error.message`.
        message: String,
        /// A `Retry-After` header value, if any.
        retry_after: Option<String>,
    },
}

impl From<Turn> for Reply {
    fn from(turn: Turn) -> Self {
        Self::Turn(turn)
    }
}

impl Reply {
    /// An error reply without `Retry-After`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self::Error {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `head`, then `chunk` for ever, with `status`.
    pub fn endless(
        status: u16,
        content_type: &'static str,
        head: impl Into<String>,
        chunk: impl Into<String>,
    ) -> Self {
        Self::Raw {
            status,
            content_type,
            head: head.into(),
            chunk: chunk.into(),
            times: None,
        }
    }

    /// A 429 with `Retry-After: retry_after`.
    pub fn rate_limited(retry_after: impl Into<String>) -> Self {
        Self::Error {
            status: 429,
            message: "Rate limit reached for requests".into(),
            retry_after: Some(retry_after.into()),
        }
    }
}

/// One request the server received (whether accepted or rejected).
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`Value::Null` if it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// A rejection: status and the provider's message.
pub type Rejection = (u16, String);

/// What makes one fake provider different from another (implemented by
/// the three dialects of this crate).
pub trait Dialect: Send + Sync + 'static {
    /// The path prefix the provider's base URL includes (e.g. `/v1`).
    fn base_path(&self) -> &'static str;
    /// Whether `path` is an endpoint of this provider.
    fn accepts_path(&self, path: &str) -> bool;
    /// What the real provider would reject in this request.
    fn check(&self, request: &RecordedRequest) -> Result<(), Rejection>;
    /// Whether the request asks for a stream.
    fn is_stream(&self, request: &RecordedRequest) -> bool;
    /// The non-streaming body for `turn`.
    fn render_json(&self, turn: &Turn, request: &RecordedRequest) -> Value;
    /// The stream for `turn`, as whole SSE events (`...\n\n` included).
    fn render_events(&self, turn: &Turn, request: &RecordedRequest) -> Vec<String>;
    /// The provider's error body.
    fn error_body(&self, status: u16, message: &str) -> Value;
}

struct Inner<D> {
    dialect: D,
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Answer this status, "image input is not supported", to any request
    /// that carries an image.
    refuse_images: Mutex<Option<u16>>,
}

/// A running fake provider; shut down when dropped. See the aliases
/// [`FakeOpenAi`](super::FakeOpenAi), [`FakeAnthropic`](super::FakeAnthropic)
/// and [`FakeGemini`](super::FakeGemini).
pub struct FakeServer<D: Dialect> {
    inner: Arc<Inner<D>>,
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl<D: Dialect> std::fmt::Debug for FakeServer<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<D: Dialect> FakeServer<D> {
    pub(crate) async fn start_with(dialect: D) -> Self {
        let inner = Arc::new(Inner {
            dialect,
            replies: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            refuse_images: Mutex::new(None),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let app = axum::Router::new()
            .fallback(handle::<D>)
            .with_state(inner.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("the fake provider serves");
        });
        Self { inner, addr, task }
    }

    /// The base URL to give the provider client.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.inner.dialect.base_path())
    }

    /// Queue a reply for the next accepted request.
    pub fn push(&self, reply: impl Into<Reply>) -> &Self {
        lock(&self.inner.replies).push_back(reply.into());
        self
    }

    /// Every request received so far, rejected ones included.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.inner.requests).clone()
    }

    /// The JSON bodies of every request so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    /// Serve a model that cannot see: from now on, answer `status` with
    /// llama.cpp's message, "image input is not supported", to every
    /// request that carries an image (before any scripted reply is used).
    pub fn refuse_images(&self, status: u16) -> &Self {
        *lock(&self.inner.refuse_images) = Some(status);
        self
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        lock(&self.inner.replies).len()
    }

    pub(crate) fn dialect(&self) -> &D {
        &self.inner.dialect
    }
}

impl<D: Dialect> Drop for FakeServer<D> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle<D: Dialect>(State(inner): State<Arc<Inner<D>>>, request: Request) -> Response {
    let path = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_owned(),
        |p| p.as_str().to_owned(),
    );
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = axum::body::to_bytes(request.into_body(), 16 << 20)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        path: path.clone(),
        headers,
        body,
        at: Instant::now(),
    };
    lock(&inner.requests).push(recorded.clone());
    let dialect = &inner.dialect;
    if !dialect.accepts_path(path.split('?').next().unwrap_or("")) {
        return error(dialect, 404, &format!("no such endpoint: {path}"), None);
    }
    if recorded.body.is_null() {
        return error(dialect, 400, "the request body is not valid JSON", None);
    }
    if let Err((status, message)) = dialect.check(&recorded) {
        return error(dialect, status, &message, None);
    }
    let refuse_images = *lock(&inner.refuse_images);
    if let Some(status) = refuse_images
        && has_image(&recorded.body)
    {
        return error(dialect, status, IMAGE_REFUSAL, None);
    }
    let Some(reply) = lock(&inner.replies).pop_front() else {
        return error(dialect, 500, "fake server: no scripted reply left", None);
    };
    match reply {
        Reply::Error {
            status,
            message,
            retry_after,
        } => error(dialect, status, &message, retry_after),
        Reply::Raw {
            status,
            content_type,
            head,
            chunk,
            times,
        } => raw(status, content_type, head, chunk, times),
        Reply::Turn(turn) if dialect.is_stream(&recorded) => {
            sse(dialect.render_events(&turn, &recorded), None)
        }
        Reply::Turn(turn) => json(&dialect.render_json(&turn, &recorded)),
        Reply::Cut { turn, events } if dialect.is_stream(&recorded) => {
            sse(dialect.render_events(&turn, &recorded), Some(events))
        }
        Reply::Cut { turn, .. } => {
            let text = dialect.render_json(&turn, &recorded).to_string();
            let half = text.len() / 2;
            cut_body(
                vec![Bytes::from(text.as_bytes()[..half].to_vec())],
                "application/json",
            )
        }
    }
}

/// What llama.cpp's server answers to an image when it has no vision
/// projector.
pub const IMAGE_REFUSAL: &str = "image input is not supported - hint: if this is unexpected, \
                                 you may need to provide the mmproj";

/// Whether a request body carries an image, in any provider's shape: an
/// item or block of type `input_image`, `image` or `image_url`, or
/// Gemini's `inlineData` with an image type.
fn has_image(value: &Value) -> bool {
    match value {
        Value::Object(fields) => {
            let typed = fields
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| matches!(t, "input_image" | "image" | "image_url"));
            let inline = ["inlineData", "inline_data"].iter().any(|key| {
                fields
                    .get(*key)
                    .and_then(|d| d.get("mimeType").or_else(|| d.get("mime_type")))
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.starts_with("image/"))
            });
            typed || inline || fields.values().any(has_image)
        }
        Value::Array(items) => items.iter().any(has_image),
        _ => false,
    }
}

fn raw(
    status: u16,
    content_type: &'static str,
    head: String,
    chunk: String,
    times: Option<usize>,
) -> Response {
    let chunk = Bytes::from(chunk);
    let body = futures::stream::repeat(chunk).take(times.unwrap_or(usize::MAX));
    let stream = futures::stream::once(async move { Bytes::from(head) })
        .chain(body)
        .map(Ok::<_, std::io::Error>);
    let mut response = (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response();
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response
}

fn json(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn error<D: Dialect>(
    dialect: &D,
    status: u16,
    message: &str,
    retry_after: Option<String>,
) -> Response {
    let mut response = json(&dialect.error_body(status, message));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(value) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A `text/event-stream` body, one event per chunk; with `cut`, only that
/// many events and then a dropped connection.
fn sse(events: Vec<String>, cut: Option<usize>) -> Response {
    let chunks: Vec<Bytes> = events.into_iter().map(Bytes::from).collect();
    match cut {
        None => {
            let stream = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>))
                .then(|chunk| async {
                    // Yield between events so they leave as separate chunks.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    chunk
                });
            (
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                Body::from_stream(stream),
            )
                .into_response()
        }
        Some(n) => cut_body(chunks.into_iter().take(n).collect(), "text/event-stream"),
    }
}

/// Send `chunks`, then fail the body so the connection closes mid-response.
fn cut_body(chunks: Vec<Bytes>, content_type: &'static str) -> Response {
    let stream =
        futures::stream::iter(chunks.into_iter().map(Ok)).chain(futures::stream::once(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "scripted cut",
            ))
        }));
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}

/// `data: {json}\n\n`.
pub(crate) fn data_event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// Split `text` into pieces of at most `size` characters.
pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}
