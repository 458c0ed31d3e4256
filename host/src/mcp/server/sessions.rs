//! A cap on the MCP sessions the HTTP server holds at once.
//!
//! Each session costs a handler, a plugin session and rmcp's worker with
//! its channels and caches (tens of KiB before any call), and lives until
//! it is deleted or sits idle for the session idle timeout. Without a cap,
//! one client opening sessions in a loop grows the process without bound.
//! With one, memory stays under the cap times a session's size, and the
//! client over it gets a `503` whose body is a JSON-RPC error naming the
//! cap (from [`refuse_over_cap`]), so an MCP client shows the reason.
//! A stateless server holds no sessions and is not capped.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The largest initialize request read to see whether it is one: far
/// above a real one (a few hundred bytes).
const LARGEST_INITIALIZE: usize = 1 << 20;

/// The MCP sessions an HTTP server holds (not used when it is
/// stateless: it has none).
///
/// Each session costs a handler, a plugin session and rmcp's worker (tens
/// of KiB before any call): without a cap, one client opening sessions in
/// a loop grows the process without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionBudgets {
    /// Sessions alive at once; an `initialize` over the cap is answered
    /// `503` with a JSON-RPC error naming it. Default 1000
    /// (`toolhost serve --max-sessions`).
    pub max_sessions: usize,
    /// A session (and its plugin session) with no request for this long
    /// is closed. Default 5 minutes (`--session-idle-timeout`).
    pub idle_timeout: Duration,
}

impl Default for SessionBudgets {
    fn default() -> Self {
        Self {
            max_sessions: 1000,
            idle_timeout: Duration::from_secs(5 * 60),
        }
    }
}

/// Why a session was not created.
#[derive(Debug, thiserror::Error)]
pub(super) enum CappedSessionsError {
    #[error(
        "too many MCP sessions: this server holds at most {max} at once \
         (`SessionBudgets::max_sessions`, --max-sessions); \
         end one (DELETE /mcp with its Mcp-Session-Id), or retry once an idle one expires"
    )]
    Full { max: usize },
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's in-memory sessions, at most `max` of them.
#[derive(Debug)]
pub(super) struct CappedSessions {
    local: LocalSessionManager,
    max: usize,
    /// Makes counting and creating one step.
    creating: tokio::sync::Mutex<()>,
    /// Where a session's calls are stopped and answered before it closes.
    direct: Option<Arc<super::direct::DirectSessions>>,
}

impl CappedSessions {
    pub(super) fn new(
        budgets: SessionBudgets,
        direct: Option<Arc<super::direct::DirectSessions>>,
    ) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(budgets.idle_timeout);
        Self {
            local,
            max: budgets.max_sessions,
            creating: tokio::sync::Mutex::new(()),
            direct,
        }
    }

    pub(super) async fn live(&self) -> usize {
        self.local.sessions.read().await.len()
    }

    /// Whether session `id` is open (not closed by a DELETE or its idle
    /// timer).
    pub(super) async fn is_open(&self, id: &str) -> bool {
        self.local.sessions.read().await.contains_key(id)
    }

    async fn full(&self) -> bool {
        self.live().await >= self.max
    }
}

impl SessionManager for CappedSessions {
    type Error = CappedSessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        if self.full().await {
            return Err(CappedSessionsError::Full { max: self.max });
        }
        Ok(self.local.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // A DELETE: the calls still running are answered first.
        if let Some(direct) = &self.direct {
            direct.end(id).await;
        }
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        if self.full().await {
            return Ok(RestoreOutcome::NotSupported);
        }
        Ok(self.local.restore_session(id).await?)
    }
}

/// Middleware: an `initialize` (a POST without a session) that finds the
/// sessions at the cap gets `503` and a JSON-RPC error naming the cap. rmcp
/// would answer `500` with plain text; this one a client can show. Checked
/// before (the common case) and after (an initialize that raced another
/// past the check, refused by [`CappedSessions::create_session`]).
/// Requests in a session, and the stateless revision's requests (no
/// `initialize`), pass untouched.
pub(super) async fn refuse_over_cap(
    State(sessions): State<Arc<CappedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let new_session =
        request.method() == Method::POST && !request.headers().contains_key(SESSION_HEADER);
    // A body larger than any initialize is not one: not read here.
    let large = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|n| n > LARGEST_INITIALIZE);
    if !new_session || large {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, LARGEST_INITIALIZE).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large (or ended early)\n",
        )
            .into_response();
    };
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        id: serde_json::Value,
        #[serde(default)]
        method: String,
    }
    let request = Request::from_parts(parts, Body::from(bytes.clone()));
    let id = match serde_json::from_slice::<Head>(&bytes) {
        Ok(head) if head.method == "initialize" => head.id,
        _ => return next.run(request).await,
    };
    if sessions.full().await {
        return refusal(&sessions, id);
    }
    let response = next.run(request).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let full = CappedSessionsError::Full { max: sessions.max }.to_string();
    if String::from_utf8_lossy(&text).contains(&full) {
        return refusal(&sessions, id);
    }
    Response::from_parts(parts, Body::from(text))
}

/// The `503` for an initialize over the cap.
fn refusal(sessions: &CappedSessions, id: serde_json::Value) -> Response {
    let error = CappedSessionsError::Full { max: sessions.max };
    tracing::debug!("refused an MCP session: {error}");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32000, "message": error.to_string()},
    });
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}
