//! 2025-11-25's tasks over HTTP (see [`super::legacy_tasks`]): a task
//! request of a registered session answered in front of rmcp, and rmcp's
//! answers to `initialize` and `tools/list` patched on their way out (as
//! JSON, or in their event stream).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use rmcp::model::RequestId;
use serde_json::Value;

use super::auth::Principal;
use super::direct_sessions::DirectSessions;
use super::handler::Client;
use super::legacy_tasks::{Patch, REVISION, TaskRequest};
use crate::telemetry::TraceParent;

/// The largest request body read here to see what it asks.
const LARGEST_REQUEST: usize = 1 << 20;

/// The largest JSON answer patched here; a larger one passes as it is.
const LARGEST_ANSWER: usize = 64 << 20;

/// Who a request is from and what it is under: the principal the server
/// verified, the access policy, where decisions are counted.
pub(super) type Under<'a> = (
    Option<&'a Principal>,
    Option<&'a Arc<super::auth::Policy>>,
    Option<&'a crate::telemetry::Metrics>,
);

/// The answer to 2025-11-25 task request `request` (with HTTP `headers`)
/// of `conn`, under the access policy of its principal (a task's call is
/// admitted as a plain call is; the answer is JSON-RPC either way).
pub(super) async fn answer(
    request: TaskRequest,
    conn: &Arc<Client>,
    (principal, policy, metrics): Under<'_>,
    headers: &HeaderMap,
) -> Value {
    let trace_parent: Option<TraceParent> =
        super::metrics::trace_parent_in(request.meta(), Some(headers));
    // A task's call holds its permit while it runs, and is charged to its
    // principal's quota, as a plain call is.
    let permit = match (policy, principal, request.tool()) {
        (Some(policy), Some(principal), Some(tool)) => {
            match super::auth::policy::decide(policy, principal, tool, metrics) {
                Ok(permit) => Some(permit),
                Err(denied) => {
                    let error = super::auth::refusal(&denied, principal);
                    return serde_json::json!({"jsonrpc": "2.0", "id": request.id, "error": error});
                }
            }
        }
        _ => None,
    };
    request.answer(conn, principal, trace_parent, permit).await
}

/// Keep session `headers` names alive in rmcp, whose idle timer counts
/// only what reaches it: a `ping` through `router`, its answer dropped.
pub(super) fn keep_alive(mut router: Router, headers: &HeaderMap) {
    let mut ping = Request::new(Body::from(
        r#"{"jsonrpc":"2.0","id":"toolhost-keep-alive","method":"ping"}"#,
    ));
    *ping.method_mut() = Method::POST;
    *ping.uri_mut() = "/mcp".parse().unwrap_or_default();
    for (name, value) in headers {
        if name != header::CONTENT_LENGTH {
            ping.headers_mut().append(name.clone(), value.clone());
        }
    }
    tokio::spawn(async move {
        let _ = tower_service::Service::call(&mut router, ping).await;
    });
}

/// `request` answered by `router` (rmcp), and patched when it is one whose
/// answer a 2025-11-25 client of a server with tasks needs patched; `conn`
/// finds a session's connection by the request's headers.
pub(super) async fn routed_patched(
    router: &mut Router,
    request: Request,
    direct: &DirectSessions,
) -> Response {
    let (request, read) = if may_need_patch(&request) {
        let conn = direct.conn(request.headers());
        let (request, read) = read_patch(request).await;
        (request, read.map(|read| (read, conn)))
    } else {
        (request, None)
    };
    // The handshake's end: its 202 waits until the lane knows the session
    // (it learns of it as rmcp handles the notification, after rmcp's
    // 202), so that the task the client asks for next is one.
    let initialized =
        matches!(read, Some((Read::Initialized, _))).then(|| request.headers().clone());
    let response = match tower_service::Service::call(router, request).await {
        Ok(response) => response,
        Err(infallible) => match infallible {},
    };
    if let Some(headers) = initialized
        && response.status() == StatusCode::ACCEPTED
        && !direct.registered(&headers, REGISTERED_WITHIN).await
    {
        tracing::debug!("a 2025-11-25 session was not registered with the fast lane in time");
    }
    match read {
        Some((Read::Patch(id, patch), conn)) => patched(response, id, patch, conn).await,
        _ => response,
    }
}

/// The longest the end of a handshake waits for the lane to know its
/// session (it takes well under a millisecond).
const REGISTERED_WITHIN: Duration = Duration::from_secs(2);

/// What a request read in front of rmcp is, for its answer.
enum Read {
    /// A request whose answer needs `Patch`.
    Patch(RequestId, Patch),
    /// `notifications/initialized`.
    Initialized,
}

/// Whether `request` may be one whose answer a 2025-11-25 client of a
/// server with tasks needs patched: a JSON POST that opens a session
/// (`initialize`), or one of a 2025-11-25 session.
fn may_need_patch(request: &Request) -> bool {
    let headers = request.headers();
    request.method() == Method::POST
        && headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"))
        && (!headers.contains_key("mcp-session-id")
            || headers
                .get("mcp-protocol-version")
                .is_some_and(|v| v.as_bytes() == REVISION.as_bytes()))
}

/// Read `request`'s body (when small enough) to see whether its answer
/// needs a patch; the request back, whole, and the patch.
async fn read_patch(request: Request) -> (Request, Option<Read>) {
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .filter(|n| *n <= LARGEST_REQUEST);
    let Some(length) = length else {
        return (request, None);
    };
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, length).await {
        Ok(bytes) => {
            let read = match Patch::of(&bytes) {
                Some((id, patch)) => Some(Read::Patch(id, patch)),
                None => is_initialized(&bytes).then_some(Read::Initialized),
            };
            (Request::from_parts(parts, Body::from(bytes)), read)
        }
        // The body ended early: rmcp says so.
        Err(_) => (Request::from_parts(parts, Body::empty()), None),
    }
}

/// Whether `message` is the notification that ends a handshake.
fn is_initialized(message: &[u8]) -> bool {
    const INITIALIZED: &[u8] = b"notifications/initialized";
    #[derive(serde::Deserialize)]
    struct Notification<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
    }
    message.windows(INITIALIZED.len()).any(|w| w == INITIALIZED)
        && serde_json::from_slice::<Notification<'_>>(message)
            .is_ok_and(|n| n.method == "notifications/initialized")
}

/// `response` (rmcp's answer to request `id`) with `patch` applied, for
/// `conn` (a session's connection, for `tools/list`).
async fn patched(
    response: Response,
    id: RequestId,
    patch: Patch,
    conn: Option<Arc<Client>>,
) -> Response {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let (mut parts, body) = response.into_parts();
    if content_type.starts_with("application/json") {
        let Ok(bytes) = axum::body::to_bytes(body, LARGEST_ANSWER).await else {
            return Response::from_parts(parts, Body::empty());
        };
        let bytes = patch_message(&bytes, &id, patch, conn.as_deref()).unwrap_or(bytes);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(bytes));
    }
    if !content_type.starts_with("text/event-stream") {
        return Response::from_parts(parts, body);
    }
    // An event stream: patch the event that answers `id`, pass the rest.
    let mut pending = Vec::new();
    let mut done = false;
    let events = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        if done {
            return Ok::<_, axum::Error>(chunk);
        }
        pending.extend_from_slice(&chunk);
        let Some(end) = pending
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .map(|at| at + 2)
        else {
            return Ok(Bytes::new());
        };
        let rest = pending.split_off(end);
        let whole = std::mem::replace(&mut pending, rest);
        let mut out = Vec::with_capacity(whole.len());
        let mut rest = &whole[..];
        while let Some(at) = rest.windows(2).position(|w| w == b"\n\n") {
            let (patched, ended) = patch_event(&rest[..=at], &id, patch, conn.as_deref(), done);
            done |= ended;
            out.extend_from_slice(&patched);
            out.push(b'\n');
            rest = &rest[at + 2..];
        }
        Ok(Bytes::from(out))
    });
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Response::from_parts(parts, Body::from_stream(events))
}

/// One event (its lines, each with its newline, without the blank line
/// that ends it): patched if its data answers `id` (unless `done`);
/// whether it was.
fn patch_event(
    event: &[u8],
    id: &RequestId,
    patch: Patch,
    conn: Option<&Client>,
    done: bool,
) -> (Vec<u8>, bool) {
    let whole = || event.to_vec();
    if done {
        return (whole(), false);
    }
    let lines: Vec<&[u8]> = event.split_inclusive(|b| *b == b'\n').collect();
    let data: Vec<u8> = lines
        .iter()
        .filter_map(|line| line.strip_prefix(b"data:"))
        .flat_map(|d| d.strip_prefix(b" ").unwrap_or(d).iter().copied())
        .collect();
    let Some(patched) = patch_message(&data, id, patch, conn) else {
        return (whole(), false);
    };
    let mut out: Vec<u8> = lines
        .iter()
        .filter(|line| !line.starts_with(b"data:"))
        .flat_map(|line| line.to_vec())
        .collect();
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&patched);
    out.push(b'\n');
    (out, true)
}

/// `message` patched, if it is the answer to `id` and the patch applies.
fn patch_message(
    message: &[u8],
    id: &RequestId,
    patch: Patch,
    conn: Option<&Client>,
) -> Option<Bytes> {
    let mut answer: Value = serde_json::from_slice(message).ok()?;
    let answered: RequestId = serde_json::from_value(answer.get("id")?.clone()).ok()?;
    if answered != *id || !patch.apply(&mut answer, conn) {
        return None;
    }
    serde_json::to_vec(&answer).ok().map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's answer to `initialize` as an event stream cut mid-event.
    fn stream(chunks: &[&'static str]) -> Response {
        let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|c| Ok(Bytes::from_static(c.as_bytes())))
            .collect();
        let mut response = Response::new(Body::from_stream(futures::stream::iter(chunks)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn the_answer_in_an_event_stream_gets_the_capability_and_the_rest_passes() {
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}}"#;
        let first = format!("event: message\nid: 7\ndata: {}", &answer[..40]);
        let second = format!(
            "{}\n\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n\n",
            &answer[40..]
        );
        let first: &'static str = Box::leak(first.into_boxed_str());
        let second: &'static str = Box::leak(second.into_boxed_str());
        let id = RequestId::Number(1);
        let out = text(patched(stream(&[first, second]), id, Patch::Initialize, None).await).await;
        let events: Vec<&str> = out.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 2, "{out}");
        assert!(
            events[0].starts_with("event: message\nid: 7\ndata: "),
            "{out}"
        );
        let data: Value = serde_json::from_str(events[0].rsplit("data: ").next().unwrap()).unwrap();
        assert_eq!(
            data["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            serde_json::json!({}),
            "{out}"
        );
        assert_eq!(
            events[1], r#"data: {"jsonrpc":"2.0","method":"x"}"#,
            "{out}"
        );
    }

    #[tokio::test]
    async fn another_revision_or_another_id_is_left_as_it_came() {
        let answer = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}\n\n";
        let out = text(
            patched(
                stream(&[answer]),
                RequestId::Number(1),
                Patch::Initialize,
                None,
            )
            .await,
        )
        .await;
        assert_eq!(out, answer);
        let newer = "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n\n";
        let out = text(
            patched(
                stream(&[newer]),
                RequestId::Number(1),
                Patch::Initialize,
                None,
            )
            .await,
        )
        .await;
        assert_eq!(out, newer);
    }
}
