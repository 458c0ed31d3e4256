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
//!
//! The cap is shared fairly: one client (one peer address; an IPv6 client
//! by its /64) holds at most [`SessionBudgets::max_sessions_per_client`],
//! so a client that opens sessions and never ends them cannot refuse
//! everyone else; and at the cap, the oldest session that never made a
//! request after its handshake is ended to make room before anyone is
//! refused. A session in use is never ended for a newcomer.
//!
//! A request's event stream that closes before its answer (the client went
//! away) cancels the request, as `notifications/cancelled` would: a call
//! stops and frees its instance, a pending question or approval ends.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use super::auth::Principal;
use crate::telemetry::Metrics;

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
    /// Sessions one client (one peer address; an IPv6 one by its /64) may
    /// hold at once; its next `initialize` is answered `503` naming this
    /// cap, while other clients are still served. `None` (the default):
    /// half of [`max_sessions`](Self::max_sessions), rounded up
    /// (`--max-sessions-per-client`). Behind a reverse proxy every client
    /// has the proxy's address: set it to `max_sessions` there.
    pub max_sessions_per_client: Option<usize>,
}

impl Default for SessionBudgets {
    fn default() -> Self {
        Self {
            max_sessions: 1000,
            idle_timeout: Duration::from_secs(5 * 60),
            max_sessions_per_client: None,
        }
    }
}

impl SessionBudgets {
    /// The sessions one client may hold: [`max_sessions_per_client`], or
    /// half of [`max_sessions`] (at least one, at most `max_sessions`).
    ///
    /// [`max_sessions_per_client`]: Self::max_sessions_per_client
    /// [`max_sessions`]: Self::max_sessions
    pub fn per_client(&self) -> usize {
        self.max_sessions_per_client
            .unwrap_or_else(|| self.max_sessions.div_ceil(2))
            .clamp(1, self.max_sessions.max(1))
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
    #[error(
        "too many MCP sessions from this client: it holds {max}, the most one client may hold \
         at once (`SessionBudgets::max_sessions_per_client`, --max-sessions-per-client); \
         end one (DELETE /mcp with its Mcp-Session-Id) before opening another"
    )]
    ClientFull { max: usize },
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// What the cap knows of a live session.
#[derive(Debug)]
struct Booked {
    client: Option<ClientKey>,
    opened: Instant,
    /// Its `initialize` was answered: before that it is never ended (its
    /// client would get an error for its `initialize`).
    initialized: bool,
    /// It made a request after its handshake: never ended for a newcomer.
    used: bool,
    /// It is being ended to make room: its requests are refused.
    ending: bool,
    /// The principal that opened it (its subject and client), when the
    /// server verifies tokens: only its requests are served in it.
    owner: Option<Principal>,
}

mod client;
mod until_answered;

use client::ClientKey;
use until_answered::UntilAnswered;

tokio::task_local! {
    /// The `initialize` being answered: who sent it, and why it was
    /// refused, if it was (set by [`CappedSessions::create_session`], read
    /// by [`refuse_over_cap`]).
    static ADMISSION: Admission;
}

#[derive(Debug, Clone, Default)]
struct Admission {
    client: Option<ClientKey>,
    owner: Option<Principal>,
    refused: Arc<Mutex<Option<Refused>>>,
}

#[derive(Debug, Clone, Copy)]
enum Refused {
    Full,
    ClientFull,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// rmcp's in-memory sessions, at most `max` of them, at most `per_client`
/// of them per client.
#[derive(Debug)]
pub(super) struct CappedSessions {
    local: LocalSessionManager,
    max: usize,
    per_client: usize,
    /// The sessions this cap opened, by id (pruned to rmcp's live ones
    /// whenever one opens).
    book: Mutex<HashMap<SessionId, Booked>>,
    /// Makes counting and creating one step.
    creating: tokio::sync::Mutex<()>,
    /// Where a session's calls are stopped and answered before it closes.
    on_end: Option<Arc<dyn SessionEnd>>,
    /// The registry's live-session gauge, and how many sessions this
    /// server has added to it: each server adds its own (several may share
    /// one registry), whichever address its metrics are served on.
    gauge: Option<(Metrics, tokio::sync::Mutex<i64>)>,
}

/// Told when a session is about to close (a DELETE, the idle timer, the
/// cap making room), before rmcp closes it: what runs a session's calls
/// outside rmcp (the fast lane) stops and answers them first.
pub(super) trait SessionEnd: Send + Sync + std::fmt::Debug {
    /// Session `id` is ending.
    fn ending<'a>(&'a self, id: &'a str) -> futures::future::BoxFuture<'a, ()>;
}

impl CappedSessions {
    pub(super) fn new(
        budgets: SessionBudgets,
        on_end: Option<Arc<dyn SessionEnd>>,
        metrics: Option<Metrics>,
    ) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(budgets.idle_timeout);
        Self {
            local,
            max: budgets.max_sessions,
            per_client: budgets.per_client(),
            book: Mutex::default(),
            creating: tokio::sync::Mutex::new(()),
            on_end,
            gauge: metrics.map(|m| (m, tokio::sync::Mutex::new(0))),
        }
    }

    pub(super) async fn live(&self) -> usize {
        self.local.sessions.read().await.len()
    }

    /// Bring the live-session gauge to this server's count, after a
    /// session opened or closed. One at a time, each counting after the
    /// change it follows: the last leaves the gauge right.
    async fn count_live(&self) {
        let Some((metrics, added)) = &self.gauge else {
            return;
        };
        let mut added = added.lock().await;
        let live = i64::try_from(self.live().await).unwrap_or(i64::MAX);
        metrics.add_sessions(live - *added);
        *added = live;
    }

    /// Whether session `id` is open (not closed by a DELETE or its idle
    /// timer).
    pub(super) async fn is_open(&self, id: &str) -> bool {
        self.local.sessions.read().await.contains_key(id)
    }

    /// Whether session `id` has ended or is being ended.
    async fn is_gone(&self, id: &str) -> bool {
        let ending = lock(&self.book).get(id).is_some_and(|b| b.ending);
        ending || !self.is_open(id).await
    }

    /// Whether a request of `principal` (none: the server verifies no
    /// tokens) may be served in session `id`: a session opened by a
    /// principal serves that principal alone, so a session id that leaked
    /// (a log, a proxy) is no way into another's calls, their approvals
    /// or their questions' answers. An unknown session is left to rmcp.
    pub(super) fn serves(&self, id: &str, principal: Option<&Principal>) -> bool {
        // Compared in place: this runs for every request in a session.
        match lock(&self.book).get(id).and_then(|b| b.owner.as_ref()) {
            Some(owner) => principal.is_some_and(|p| {
                p.subject() == owner.subject() && p.client_id() == owner.client_id()
            }),
            None => true,
        }
    }

    /// Note that session `id` made a request after its handshake: it is
    /// never ended to make room. False when it is being ended to make
    /// room already: the request must not be served (as if it came just
    /// after the end).
    pub(super) fn mark_used(&self, id: &str) -> bool {
        match lock(&self.book).get_mut(id) {
            Some(booked) if booked.ending => false,
            Some(booked) => {
                booked.used = true;
                true
            }
            None => true,
        }
    }

    /// Whether a new session for `client` would be refused, and why; with
    /// the session to end first to make room, if one must be (marked as
    /// ending when `end` is set: from then on its requests are refused, so
    /// a session that is served a request is never the one ended).
    async fn admit(
        &self,
        client: Option<ClientKey>,
        end: bool,
    ) -> Result<Option<SessionId>, Refused> {
        let live = self.local.sessions.read().await;
        let mut book = lock(&self.book);
        book.retain(|id, _| live.contains_key(id));
        // A share as large as the cap is no share: the cap says it all.
        if let Some(client) = client.filter(|_| self.per_client < self.max) {
            let held = book.values().filter(|b| b.client == Some(client)).count();
            if held >= self.per_client {
                return Err(Refused::ClientFull);
            }
        }
        if live.len() < self.max {
            return Ok(None);
        }
        // The oldest session that never made a request ends first.
        let (id, booked) = book
            .iter_mut()
            .filter(|(_, b)| b.initialized && !b.used && !b.ending)
            .min_by_key(|(_, b)| b.opened)
            .ok_or(Refused::Full)?;
        booked.ending = end;
        Ok(Some(id.clone()))
    }

    fn error(&self, refused: Refused) -> CappedSessionsError {
        match refused {
            Refused::Full => CappedSessionsError::Full { max: self.max },
            Refused::ClientFull => CappedSessionsError::ClientFull {
                max: self.per_client,
            },
        }
    }
}

impl SessionManager for CappedSessions {
    type Error = CappedSessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        let admission = ADMISSION.try_with(Clone::clone).unwrap_or_default();
        match self.admit(admission.client, true).await {
            Ok(None) => {}
            Ok(Some(unused)) => {
                tracing::info!(
                    session = %unused,
                    "{} MCP sessions are open (the cap): ending the oldest that never made a request to make room",
                    self.max
                );
                self.close_session(&unused).await?;
            }
            Err(refused) => {
                *lock(&admission.refused) = Some(refused);
                return Err(self.error(refused));
            }
        }
        let (id, transport) = self.local.create_session().await?;
        lock(&self.book).insert(
            id.clone(),
            Booked {
                client: admission.client,
                opened: Instant::now(),
                initialized: false,
                used: false,
                ending: false,
                owner: admission.owner,
            },
        );
        self.count_live().await;
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.local.initialize_session(id, message).await?;
        if let Some(booked) = lock(&self.book).get_mut(id) {
            booked.initialized = true;
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Ending from now on (its requests are refused); forgotten once
        // closed.
        if let Some(booked) = lock(&self.book).get_mut(id) {
            booked.ending = true;
        }
        // A DELETE: the calls still running are answered first.
        if let Some(on_end) = &self.on_end {
            on_end.ending(id).await;
        }
        let closed = self.local.close_session(id).await;
        if lock(&self.book).remove(id).is_some() {
            tracing::debug!(session = %id, "MCP session closed");
        }
        self.count_live().await;
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = match &message {
            ClientJsonRpcMessage::Request(request) => {
                if !matches!(
                    request.request,
                    ClientRequest::PingRequest(_) | ClientRequest::InitializeRequest(_)
                ) && !self.mark_used(id)
                {
                    return Err(LocalSessionManagerError::SessionNotFound(id.clone()).into());
                }
                Some(request.id.clone())
            }
            _ => None,
        };
        let session = self.local.sessions.read().await.get(id).cloned();
        let stream = self.local.create_stream(id, message).await?;
        Ok(UntilAnswered {
            stream: Box::pin(stream),
            pending: request.zip(session),
        })
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
        if self.live().await >= self.max {
            return Ok(RestoreOutcome::NotSupported);
        }
        Ok(self.local.restore_session(id).await?)
    }
}

/// Middleware: an `initialize` (a POST without a session) over the cap
/// (all sessions, or its client's share) gets `503` and a JSON-RPC error
/// naming the cap. rmcp would answer `500` with plain text; this one a
/// client can show. Checked before (the common case) and by
/// [`CappedSessions::create_session`] (an initialize that raced another
/// past the check), which also ends an unused session to make room.
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
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && !sessions.serves(id, request.extensions().get::<Principal>())
        {
            tracing::info!(
                session = %id,
                "refused a request in an MCP session another principal opened"
            );
            return (
                StatusCode::NOT_FOUND,
                "Not Found: Session not found (no session of this access token's principal has \
                 this id; initialize a new one)\n",
            )
                .into_response();
        }
        let response = next.run(request).await;
        // rmcp answers `500` when the session ends between its check that
        // the session is open and taking the message (ended to make room,
        // by a DELETE, or by its idle timer): the spec's answer for an
        // ended session is `404`, which tells the client to initialize
        // again.
        return match session {
            Some(id)
                if response.status() == StatusCode::INTERNAL_SERVER_ERROR
                    && sessions.is_gone(&id).await =>
            {
                (
                    StatusCode::NOT_FOUND,
                    "Not Found: Session not found (it has ended; initialize a new one)\n",
                )
                    .into_response()
            }
            _ => response,
        };
    }
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|peer| ClientKey::of(peer.0));
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
    if let Err(refused) = sessions.admit(client, false).await {
        return refusal(&sessions, refused, id);
    }
    let admission = Admission {
        client,
        owner: request.extensions().get::<Principal>().cloned(),
        refused: Arc::default(),
    };
    let refused = Arc::clone(&admission.refused);
    let response = ADMISSION.scope(admission, next.run(request)).await;
    let refused = *lock(&refused);
    match refused {
        Some(refused) => refusal(&sessions, refused, id),
        None => response,
    }
}

/// The `503` for an initialize over the cap.
fn refusal(sessions: &CappedSessions, refused: Refused, id: serde_json::Value) -> Response {
    let error = sessions.error(refused);
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

impl Drop for CappedSessions {
    /// A server that stops takes its sessions out of the gauge.
    fn drop(&mut self) {
        if let Some((metrics, added)) = &mut self.gauge {
            metrics.add_sessions(-*added.get_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_share_is_half_the_cap() {
        let mut budgets = SessionBudgets::default();
        assert_eq!(budgets.per_client(), 500);
        budgets.max_sessions = 3;
        assert_eq!(budgets.per_client(), 2);
        budgets.max_sessions = 1;
        assert_eq!(budgets.per_client(), 1);
        budgets.max_sessions_per_client = Some(7);
        assert_eq!(budgets.per_client(), 1, "never over the cap");
        budgets.max_sessions = 10;
        assert_eq!(budgets.per_client(), 7);
    }
}
