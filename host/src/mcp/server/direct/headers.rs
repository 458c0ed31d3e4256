//! What the fast lane reads of an HTTP request's headers, and how it
//! writes its answer.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `host` (a `Host` header: name or name:port) is one of `accepted`, or its
/// name is one of those without a port.
pub(super) fn host_accepted(host: &str, accepted: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    accepted
        .iter()
        .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
}

/// The media type of `value`, parameters aside, is `expected`.
pub(super) fn essence_is(value: &HeaderValue, expected: &str) -> bool {
    value.to_str().is_ok_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|e| e.trim().eq_ignore_ascii_case(expected))
    })
}

/// `Accept` names both `application/json` and `text/event-stream`, without
/// parameters (a weight of 0 would refuse one: rmcp reads those).
pub(super) fn accepts_json_and_events(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for media in value.split(',') {
            let media = media.trim();
            if media.contains(';') {
                return false;
            }
            json |= media.eq_ignore_ascii_case("application/json");
            events |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// `message` as a JSON response, or `500` should it not serialize.
pub(super) fn json_response(message: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::warn!("cannot serialize an MCP answer: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the answer could not be serialized; this is a bug, please report it\n",
            )
                .into_response()
        }
    }
}
