//! REST endpoints that quote back the secret headers they were sent, in an
//! error body or a success body, raw, percent-encoded (as in a query
//! string), JSON-escaped or decoded from `Basic`: the model sees
//! `[redacted]` wherever the secret was.

use std::net::SocketAddr;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::tools::rest::{RestDecl, RestPolicy, RestTool};
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};

const TOKEN: &str = "rest-s3cret/token+value";
/// `alice:pa55-s3cret!` in base64, as a `Basic` header carries it.
const BASIC: &str = "YWxpY2U6cGE1NS1zM2NyZXQh";

/// Every header the request had, as a JSON object.
fn headers_json(headers: &HeaderMap) -> Value {
    headers
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or_default())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The Authorization header, decoded when it is `Basic` (as a debugging
/// page would show it).
fn decoded_auth(headers: &HeaderMap) -> String {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match auth.strip_prefix("Basic ") {
        Some(encoded) if encoded == BASIC => "alice:pa55-s3cret!".to_owned(),
        _ => auth.to_owned(),
    }
}

/// 400 with a body that echoes the request's headers (like many APIs'
/// "bad request" pages).
async fn echo_400(headers: HeaderMap) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": "bad request", "headers": headers_json(&headers)})),
    )
        .into_response()
}

/// 200 with the headers, the decoded credentials, and a "next page" link
/// with the token in its query string.
async fn echo_200(headers: HeaderMap) -> Response {
    let token = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let encoded: String = token
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    axum::Json(json!({
        "headers": headers_json(&headers),
        "user": decoded_auth(&headers),
        "next": format!("/page/2?api_key={encoded}"),
    }))
    .into_response()
}

/// 401 in plain text that names the credentials it got.
async fn echo_401(headers: HeaderMap) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        format!("bad credentials: {}", decoded_auth(&headers)),
    )
        .into_response()
}

async fn start() -> SocketAddr {
    let app = axum::Router::new()
        .route("/echo-400", get(echo_400))
        .route("/echo-200", get(echo_200))
        .route("/echo-401", get(echo_401));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn registry(addr: SocketAddr) -> ToolRegistry {
    let config = HostConfig::default()
        .allow_http(format!("http://{addr}").parse().unwrap())
        .allow_http_private()
        .env("API_TOKEN", TOKEN)
        .env("API_BASIC", BASIC);
    let policy = RestPolicy::new(config.rest_rules()).unwrap();
    let registry = ToolRegistry::new();
    for (name, path, headers) in [
        (
            "bearer_400",
            "/echo-400",
            json!({"Authorization": {"env": "API_TOKEN", "prefix": "Bearer "}}),
        ),
        (
            "key_200",
            "/echo-200",
            json!({"X-Api-Key": {"env": "API_TOKEN"}, "Accept": {"value": "application/json"}}),
        ),
        (
            "basic_200",
            "/echo-200",
            json!({"Authorization": {"env": "API_BASIC", "prefix": "Basic "}}),
        ),
        (
            "basic_401",
            "/echo-401",
            json!({"Authorization": {"env": "API_BASIC", "prefix": "Basic "}}),
        ),
    ] {
        let decl: RestDecl = serde_json::from_value(json!({
            "name": name,
            "description": "echo",
            "url": format!("http://{addr}{path}"),
            "headers": headers,
            "retries": 0,
        }))
        .unwrap();
        RestTool::new(decl, &policy)
            .unwrap()
            .register(&registry)
            .unwrap();
    }
    registry
}

#[track_caller]
fn assert_clean(text: &str) {
    for leak in ["s3cret", "s3cret%2F", BASIC, "pa55"] {
        assert!(!text.contains(leak), "`{leak}` came back: {text}");
    }
    assert!(text.contains("[redacted]"), "{text}");
}

async fn call(registry: &ToolRegistry, tool: &str) -> Result<Value, toolhost::tools::ToolError> {
    registry
        .call(tool, json!({}), &CallContext::default())
        .await
        .output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_body_quoting_the_headers_is_redacted() {
    let registry = registry(start().await);
    let e = call(&registry, "bearer_400").await.expect_err("400");
    assert_eq!(e.kind, ToolErrorKind::ToolFailed);
    assert!(e.message.contains("400 Bad Request"), "{e}");
    assert!(e.message.contains("Bearer [redacted]"), "{e}");
    assert_clean(&e.message);
    let e = call(&registry, "basic_401").await.expect_err("401");
    assert_eq!(e.message.matches("[redacted]").count(), 1, "{e}");
    assert_clean(&e.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2xx_body_quoting_the_headers_is_redacted() {
    let registry = registry(start().await);
    let out = call(&registry, "key_200").await.expect("200");
    assert_eq!(out["headers"]["x-api-key"], "[redacted]");
    assert_eq!(out["next"], "/page/2?api_key=[redacted]");
    // A constant header is no secret.
    assert_eq!(out["headers"]["accept"], "application/json");
    assert_clean(&out.to_string());
    let out = call(&registry, "basic_200").await.expect("200");
    assert_eq!(out["headers"]["authorization"], "Basic [redacted]");
    assert_eq!(out["user"], "[redacted]");
    assert_clean(&out.to_string());
}
