//! `tools/call` in an HTTP session, answered without rmcp's session worker.
//!
//! rmcp runs each MCP session as a worker task and passes every request
//! through channels: HTTP handler → session worker → service loop → a task
//! for the request → service loop → session worker → an event stream →
//! HTTP. Each hop is a task wake-up and an allocation or two, and together
//! they cost several times the call itself (a `text_stats` call runs in
//! ~10 µs of CPU). The call every client makes most, `tools/call` in a
//! session that finished its handshake, is answered here instead: the
//! call runs in the HTTP connection's own task, and the answer is one
//! `application/json` body, which streamable HTTP allows for any request
//! (a client must accept both JSON and an event stream, and rmcp checks it
//! does). Everything else, and any request this path is not sure of, goes
//! to rmcp unchanged, so rmcp's checks and errors stay the only ones.
//!
//! A direct call keeps what a call through rmcp has:
//!
//! - `notifications/cancelled` still reaches the session's handler (through
//!   rmcp), which cancels the direct call with that id; a client that goes
//!   away drops the call with its connection;
//! - the end of the session (DELETE, idle expiry, shutdown) drops the
//!   handler, which cancels its direct calls;
//! - the session's idle timer: rmcp's worker counts only what reaches it,
//!   so a session whose requests all went direct sends one through rmcp
//!   every quarter of its idle timeout;
//! - the bearer-token and session-cap checks, which run before this one;
//!   Host and Origin are checked by rmcp, so only a request without an
//!   `Origin` and with a `Host` the server accepts is answered here.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, JsonRpcVersion2_0, ProtocolVersion, RequestId, RequestMetaObject,
    ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

mod headers;

use headers::{accepts_json_and_events, essence_is, host_accepted, json_response};

use super::connections::App;
use super::direct_sessions::{DirectSessions, SESSION_HEADER, Session};
use super::handler::{AnswerOnly, Client, Origin, Reach};
use super::sessions::CappedSessions;
use crate::tools::ToolSet;

/// The header that names the protocol revision of a request.
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The largest call body answered here; larger ones go to rmcp, which
/// holds them to its own limit.
const LARGEST_CALL: usize = 1 << 20;

impl DirectSessions {
    /// Whether a POST with these headers is one rmcp would take as they
    /// are: no `Origin`, an accepted `Host`, a JSON body, a client that
    /// accepts both answers, a revision with a handshake.
    fn plain(&self, headers: &HeaderMap) -> bool {
        !headers.contains_key(header::ORIGIN)
            && headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .is_some_and(|h| host_accepted(h, self.hosts()))
            && headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| essence_is(v, "application/json"))
            && accepts_json_and_events(headers)
            && headers.get(&VERSION_HEADER).is_none_or(|v| {
                v.to_str().is_ok_and(|v| {
                    v < ProtocolVersion::V_2026_07_28.as_str()
                        && ProtocolVersion::KNOWN_VERSIONS
                            .iter()
                            .any(|known| known.as_str() == v)
                })
            })
    }
}

/// A JSON-RPC `tools/call` request.
#[derive(Deserialize)]
struct CallRequest<'a> {
    /// Checked by deserializing: it must be "2.0".
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    params: CallToolRequestParams,
}

/// A `tools/call` the direct path may answer, as it came.
pub(super) struct PlainCall {
    pub(super) id: RequestId,
    pub(super) params: CallToolRequestParams,
    /// The request's `_meta` (taken out of `params`).
    pub(super) meta: RequestMetaObject,
}

impl PlainCall {
    /// `message` as a plain `tools/call`: `None` for anything else,
    /// including a call whose `_meta` names a protocol revision (rmcp's to
    /// check).
    pub(super) fn parse(message: &[u8]) -> Option<Self> {
        let CallRequest {
            id,
            method,
            mut params,
            ..
        } = serde_json::from_slice(message).ok()?;
        if method != "tools/call"
            || params
                .meta
                .as_ref()
                .is_some_and(|meta| meta.protocol_version().is_some())
        {
            return None;
        }
        let meta = params.meta.take().unwrap_or_default();
        Some(Self { id, params, meta })
    }

    /// The proof that it needs nothing of the client but its answer;
    /// `None` when it must go through rmcp after all (see
    /// [`Client::answer_only`]).
    pub(super) fn answer_only(&self, conn: &Client, tools: &ToolSet) -> Option<AnswerOnly> {
        conn.answer_only(tools, &self.params, &self.meta)
    }

    /// Run the call in `conn` on `tools` until it ends, the connection
    /// stops or `cancel` is cancelled (`notifications/cancelled` for its
    /// id), and answer it as rmcp answers a session of a revision with a
    /// handshake.
    pub(super) async fn answer(
        self,
        conn: &Client,
        tools: &ToolSet,
        proof: AnswerOnly,
        origin: Origin,
        cancel: CancellationToken,
    ) -> ServerJsonRpcMessage {
        let Self { id, params, meta } = self;
        let _in_flight = conn.direct_call(id.clone(), cancel.clone());
        let stopped = conn.stopped();
        let cancelled = async {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = stopped.cancelled() => {}
            }
        };
        match conn
            .call_tool(
                tools,
                params,
                &meta,
                Reach::AnswerOnly(proof),
                origin,
                cancelled,
            )
            .await
        {
            Ok(response) => {
                let mut result = ServerResult::from(response);
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                ServerJsonRpcMessage::response(result, id)
            }
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        }
    }
}

/// What serves each HTTP request: a plain `tools/call` POST of a
/// registered session here, everything else through the router (rmcp and
/// its checks).
#[derive(Debug, Clone)]
pub(super) struct Front {
    router: Router,
    /// `None` when serving stateless: no sessions.
    direct: Option<Arc<DirectSessions>>,
    /// rmcp's sessions: a call is answered here only while its session is
    /// open there (a DELETE or the idle timer closes it there first).
    open: Arc<CappedSessions>,
    /// The bearer token the router's layer requires, checked here too for
    /// what never reaches it.
    token: Option<Arc<str>>,
    /// The resource server the router's layer checks, checked here too.
    auth: Option<Arc<super::auth::ResourceServer>>,
    /// The access policy over the principals `auth` verifies, applied
    /// here as in rmcp's path (which refuses what it denies).
    policy: Option<Arc<super::auth::Policy>>,
    /// Counts the HTTP status of direct answers (the router's layer counts
    /// the rest).
    metrics: Option<crate::telemetry::Metrics>,
    /// The server offers tasks: 2025-11-25's are answered here
    /// (`direct_tasks`).
    tasks: bool,
    /// Which browser pages may call the server (preflights answered here,
    /// before any token is asked for).
    cors: super::cors::Cors,
}

impl Front {
    pub(super) fn new(
        router: Router,
        direct: Option<Arc<DirectSessions>>,
        open: Arc<CappedSessions>,
        token: Option<Arc<str>>,
        auth: Option<Arc<super::auth::ResourceServer>>,
        policy: Option<Arc<super::auth::Policy>>,
        metrics: Option<crate::telemetry::Metrics>,
    ) -> Self {
        Self {
            router,
            direct,
            open,
            token,
            auth,
            policy,
            metrics,
            tasks: false,
            cors: super::cors::Cors::default(),
        }
    }

    /// Let pages of `origins` call the server (CORS).
    pub(super) fn with_cors(mut self, cors: super::cors::Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Answer 2025-11-25's task requests (the server offers tasks).
    pub(super) fn with_tasks(mut self, tasks: bool) -> Self {
        self.tasks = tasks;
        self
    }

    /// The answer to `request`, readable by the page of an accepted
    /// origin (a preflight answered here).
    async fn respond(self, request: Request) -> Response {
        if let Some(preflight) = self.cors.preflight(&request) {
            return preflight;
        }
        let cors = self.cors.clone();
        let origin = request.headers().get(header::ORIGIN).cloned();
        let mut response = self.answer_request(request).await;
        cors.allow_reading(origin, &mut response);
        response
    }

    /// The answer to `request`.
    async fn answer_request(mut self, request: Request) -> Response {
        let authorized = self
            .token
            .as_deref()
            .is_none_or(|token| super::token::authorized(request.headers(), token));
        // Checked only where the lane may answer; a refusal is the
        // router's to give (its layer checks again).
        let mut principal = None;
        let authorized = authorized
            && match (&self.direct, &self.auth) {
                (Some(_), Some(auth)) => {
                    let header = request
                        .headers()
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok());
                    principal = auth.authorize(header).await.ok();
                    principal.is_some()
                }
                _ => true,
            };
        let under = Under {
            policy: self.policy.as_ref().zip(principal.as_ref()),
            principal: principal.as_ref(),
            metrics: self.metrics.as_ref(),
            tasks: self.tasks.then_some(&self.router),
        };
        let request = match &self.direct {
            Some(direct) if authorized => {
                match answer_directly(direct, &self.open, request, under).await {
                    Ok(response) => {
                        if let Some(metrics) = &self.metrics {
                            metrics.record_http(response.status().as_u16());
                        }
                        return response;
                    }
                    Err(request) => request,
                }
            }
            _ => request,
        };
        match &self.direct {
            // 2025-11-25 with tasks: rmcp's answers to `initialize` and
            // `tools/list` get what that revision's server with tasks says.
            Some(direct) if self.tasks => {
                super::direct_tasks::routed_patched(&mut self.router, request, direct).await
            }
            _ => match tower_service::Service::call(&mut self.router, request).await {
                Ok(response) => response,
                Err(infallible) => match infallible {},
            },
        }
    }
}

impl App for Front {
    fn answer(self, request: Request) -> impl Future<Output = Response> + Send + 'static {
        self.respond(request)
    }
}

/// The access policy a direct call is under, with the principal it was
/// verified as, and where its decisions are counted.
#[derive(Clone, Copy)]
struct Under<'a> {
    policy: Option<(&'a Arc<super::auth::Policy>, &'a super::auth::Principal)>,
    /// The principal the server verified, if it verifies any.
    principal: Option<&'a super::auth::Principal>,
    metrics: Option<&'a crate::telemetry::Metrics>,
    /// With tasks: the router, which keeps a session alive in rmcp.
    tasks: Option<&'a Router>,
}

/// The answer to a plain `tools/call` POST of a registered session, or
/// the request back to go through the router.
async fn answer_directly(
    direct: &DirectSessions,
    open: &CappedSessions,
    request: Request,
    under: Under<'_>,
) -> Result<Response, Request> {
    let Some((id, session)) = direct.session(request.headers()) else {
        return Err(request);
    };
    // The handler (and so this entry) outlives the session's close by a
    // moment, and a session can be registered after its DELETE: rmcp
    // answers those (404).
    // A session serves only the principal that opened it: another's
    // request is refused by the router's layer.
    if !open.is_open(id).await || !open.serves(id, under.principal) {
        return Err(request);
    }
    let now = direct.now();
    let fresh = Duration::from_millis(now.saturating_sub(session.rmcp_saw.load(Ordering::Relaxed)))
        < direct.refresh();
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .filter(|n| *n <= LARGEST_CALL);
    let conn = session.conn.upgrade();
    // With tasks, a request that is not fresh is read too: 2025-11-25's
    // task requests are answered here whatever rmcp last saw.
    let (Some(conn), Some(length), true, true, true) = (
        conn,
        length,
        fresh || under.tasks.is_some(),
        request.method() == Method::POST && request.uri().path() == "/mcp",
        direct.plain(request.headers()),
    ) else {
        session.rmcp_saw.store(now, Ordering::Relaxed);
        return Err(request);
    };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, length).await else {
        let ended = (StatusCode::BAD_REQUEST, "the request body ended early\n");
        return Ok(ended.into_response());
    };
    if let Some(router) = under.tasks
        && let Some(task) = super::legacy_tasks::TaskRequest::parse(&bytes)
    {
        if !fresh {
            session.rmcp_saw.store(now, Ordering::Relaxed);
            super::direct_tasks::keep_alive(router.clone(), &parts.headers);
        }
        let policy = under.policy.map(|(policy, _)| policy);
        let message = super::direct_tasks::answer(
            task,
            &conn,
            (under.principal, policy, under.metrics),
            &parts.headers,
        )
        .await;
        return Ok(json_response(&message));
    }
    if !fresh {
        session.rmcp_saw.store(now, Ordering::Relaxed);
        return Err(Request::from_parts(parts, Body::from(bytes)));
    }
    let Some(call) = PlainCall::parse(&bytes) else {
        session.rmcp_saw.store(now, Ordering::Relaxed);
        return Err(Request::from_parts(parts, Body::from(bytes)));
    };
    // A call that asks the user (approval) or reports progress needs
    // rmcp's event stream.
    let tools = conn.snapshot();
    let Some(proof) = call.answer_only(&conn, &tools) else {
        session.rmcp_saw.store(now, Ordering::Relaxed);
        return Err(Request::from_parts(parts, Body::from(bytes)));
    };
    // A session's first call keeps it from being ended to make room; one
    // being ended already goes to rmcp, which answers that it is gone.
    if !session.used.load(Ordering::Relaxed) && !first_use(&session, open, &parts.headers) {
        return Err(Request::from_parts(parts, Body::from(bytes)));
    }
    // Under a policy: a call it admits runs here, charged to its
    // principal; one it refuses, and a principal's `tool_search` (whose
    // answer the policy filters), go through rmcp, which answers them.
    let permit = match under.policy {
        None => None,
        Some((policy, principal)) => {
            let name = call.params.name.as_ref();
            match policy.admit(principal, name) {
                Ok(permit) if name != crate::tools::search::TOOL_SEARCH_NAME => {
                    if let Some(metrics) = under.metrics {
                        permit.count(policy, principal, metrics);
                    }
                    Some(permit)
                }
                _ => {
                    session.rmcp_saw.store(now, Ordering::Relaxed);
                    return Err(Request::from_parts(parts, Body::from(bytes)));
                }
            }
        }
    };
    let trace_parent = super::metrics::trace_parent_in(&call.meta, Some(&parts.headers));
    let origin = Origin::new(trace_parent, under.principal);
    let answer = call.answer(&conn, &tools, proof, origin, CancellationToken::new());
    let message = match permit {
        Some(permit) => permit.charging(answer).await,
        None => answer.await,
    };
    Ok(json_response(&message))
}

/// Tell the session cap `open` that `session` (named in `headers`) made
/// its first call, so that it is not ended to make room; `false` when it
/// is being ended already.
fn first_use(session: &Session, open: &CappedSessions, headers: &HeaderMap) -> bool {
    let id = headers.get(&SESSION_HEADER).and_then(|v| v.to_str().ok());
    if id.is_some_and(|id| !open.mark_used(id)) {
        return false;
    }
    session.used.store(true, Ordering::Relaxed);
    true
}

#[cfg(test)]
#[path = "direct_tests.rs"]
mod tests;
