//! REST tools, as a user meets them: declarations checked at load, calls
//! against a loopback server that checks what real APIs check (a token, a
//! JSON body), rate limits with `Retry-After`, failures by kind, redirects
//! and addresses refused before anything reaches them, and the CLI.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt as _;
use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::tools::rest::{self, RestDecl, RestError, RestPolicy, RestTool};
use toolhost::tools::{CallContext, NativeTool, ToolError, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{toolhost_bin, workspace_root};

const TOKEN: &str = "s3cret-token-value";

/// A loopback API that counts the requests to each path.
#[derive(Clone, Default)]
struct Hits(Arc<Mutex<HashMap<String, usize>>>);

impl Hits {
    fn add(&self, path: &str) {
        *self.0.lock().unwrap().entry(path.to_owned()).or_default() += 1;
    }
    fn get(&self, path: &str) -> usize {
        self.0.lock().unwrap().get(path).copied().unwrap_or(0)
    }
    fn total(&self) -> usize {
        self.0.lock().unwrap().values().sum()
    }
}

struct Server {
    addr: SocketAddr,
    hits: Hits,
}

impl Server {
    async fn start() -> Self {
        let hits = Hits::default();
        let app = axum::Router::new()
            .route("/repos/{owner}/{repo}/issues", get(issues))
            .route("/items", post(create_item))
            .route("/data", get(data))
            .route("/files/{name}", get(file))
            .route("/limited", get(limited))
            .route("/down", get(down))
            .route("/missing", get(missing))
            .route("/redirect", get(redirect))
            .route("/endless", get(endless))
            .route("/text", get(text))
            .route("/slow", get(slow))
            .fallback(fallback)
            .with_state(hits.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
        Self { addr, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"message": "Bad credentials"})),
    )
        .into_response()
}

/// Like a real API: no token, no data.
async fn issues(
    State(hits): State<Hits>,
    UrlPath((owner, repo)): UrlPath<(String, String)>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    hits.add("/issues");
    let expected = format!("Bearer {TOKEN}");
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(&expected)
    {
        return unauthorized();
    }
    axum::Json(json!({
        "owner": owner,
        "repo": repo,
        "query": query,
        "accept": headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
    }))
    .into_response()
}

/// Like a real API: a JSON body, or 415/400.
async fn create_item(State(hits): State<Hits>, headers: HeaderMap, body: String) -> Response {
    hits.add("/items");
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json_type {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    match serde_json::from_str::<Value>(&body) {
        Ok(item) => (
            StatusCode::CREATED,
            axum::Json(json!({"id": 7, "item": item})),
        )
            .into_response(),
        Err(_) => StatusCode::BAD_REQUEST.into_response(),
    }
}

async fn data(State(hits): State<Hits>) -> impl IntoResponse {
    hits.add("/data");
    axum::Json(json!({"data": {"items": [1, 2, 3], "total": 3}}))
}

async fn file(State(hits): State<Hits>, UrlPath(name): UrlPath<String>, uri: Uri) -> Response {
    hits.add("/files");
    axum::Json(json!({"name": name, "path": uri.path()})).into_response()
}

async fn fallback(State(hits): State<Hits>, uri: Uri) -> Response {
    hits.add(&format!("other:{}", uri.path()));
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"message": "no such route"})),
    )
        .into_response()
}

/// 429 with `Retry-After: 1` the first time, then the data.
async fn limited(State(hits): State<Hits>) -> Response {
    hits.add("/limited");
    if hits.get("/limited") == 1 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "slow down",
        )
            .into_response();
    }
    axum::Json(json!({"ok": true})).into_response()
}

async fn down(State(hits): State<Hits>) -> Response {
    hits.add("/down");
    (StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response()
}

async fn missing(State(hits): State<Hits>) -> Response {
    hits.add("/missing");
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"message": "Not Found"})),
    )
        .into_response()
}

async fn redirect(
    State(hits): State<Hits>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    hits.add("/redirect");
    let to = query.get("to").cloned().unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// 64 MiB, far more than any cap here, without a content-length.
async fn endless(State(hits): State<Hits>) -> Response {
    hits.add("/endless");
    let chunk = bytes::Bytes::from(vec![b' '; 16 << 10]);
    let stream =
        futures::stream::repeat_with(move || Ok::<_, std::convert::Infallible>(chunk.clone()))
            .take(4096);
    axum::body::Body::from_stream(stream).into_response()
}

async fn slow(State(hits): State<Hits>) -> &'static str {
    hits.add("/slow");
    tokio::time::sleep(Duration::from_secs(30)).await;
    "late"
}

async fn text(State(hits): State<Hits>) -> &'static str {
    hits.add("/text");
    "plain words"
}

/// The operator's config for these tests: the loopback server allowed,
/// private addresses allowed (it is on 127.0.0.1), the token given by the
/// embedder (not the process environment).
fn config(server: &Server) -> HostConfig {
    HostConfig::default()
        .allow_http(server.origin().parse().unwrap())
        .allow_http_private()
        .env("API_TOKEN", TOKEN)
}

fn decl(value: Value) -> RestDecl {
    serde_json::from_value(value).expect("a valid declaration")
}

fn issues_decl(server: &Server) -> RestDecl {
    decl(json!({
        "name": "issues",
        "description": "Issues of a repository.",
        "url": server.url("/repos/{owner}/{repo}/issues"),
        "query": ["state", "labels"],
        "headers": {
            "Authorization": {"env": "API_TOKEN", "prefix": "Bearer "},
            "Accept": {"value": "application/vnd.test+json"},
        },
        "input_schema": {
            "type": "object",
            "required": ["owner", "repo"],
            "properties": {
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "state": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
            },
        },
    }))
}

/// A registry holding the tool of each declaration.
fn registry(config: &HostConfig, decls: Vec<RestDecl>) -> ToolRegistry {
    let policy = RestPolicy::new(config.rest_rules()).expect("the client starts");
    let registry = ToolRegistry::new();
    for decl in decls {
        RestTool::new(decl, &policy)
            .expect("the declaration loads")
            .register(&registry)
            .expect("the tool registers");
    }
    registry
}

async fn call(registry: &ToolRegistry, tool: &str, input: Value) -> Result<Value, ToolError> {
    registry
        .call(tool, input, &CallContext::default())
        .await
        .output
}

#[track_caller]
fn assert_kind(result: Result<Value, ToolError>, kind: ToolErrorKind) -> ToolError {
    let e = result.expect_err("the call fails");
    assert_eq!(e.kind, kind, "{e}");
    e
}

/// A GET tool with `path` and retries that wait 10 ms.
fn get_decl(server: &Server, name: &str, path: &str, extra: Value) -> RestDecl {
    let mut value = json!({
        "name": name,
        "description": "test",
        "url": server.url(path),
        "retry_delay_ms": 10,
        "backoff": "fixed",
    });
    if let (Some(map), Value::Object(extra)) = (value.as_object_mut(), extra) {
        map.extend(extra);
    }
    decl(value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_fills_the_path_and_query_and_sends_the_secret_header() {
    let server = Server::start().await;
    let registry = registry(&config(&server), vec![issues_decl(&server)]);
    let out = call(
        &registry,
        "issues",
        json!({"owner": "rust-lang", "repo": "rust", "state": "open", "labels": ["bug", "a&b"]}),
    )
    .await
    .unwrap();
    assert_eq!(out["owner"], "rust-lang");
    assert_eq!(out["repo"], "rust");
    assert_eq!(
        out["query"],
        json!([["state", "open"], ["labels", "bug"], ["labels", "a&b"]])
    );
    assert_eq!(out["accept"], "application/vnd.test+json");

    // Without the header the server refuses, as a real API would: 401 is
    // the tool's failure, not retried.
    let mut bare = issues_decl(&server);
    bare.name = "issues_bare".into();
    bare.headers.clear();
    let registry = self::registry(&config(&server), vec![bare]);
    let e = assert_kind(
        call(&registry, "issues_bare", json!({"owner": "a", "repo": "b"})).await,
        ToolErrorKind::ToolFailed,
    );
    assert!(e.message.contains("401"), "{e}");
    assert!(
        e.message.contains("Bad credentials"),
        "quotes the body: {e}"
    );
    assert_eq!(server.hits.get("/issues"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_sends_the_fields_not_in_the_url_as_a_json_body() {
    let server = Server::start().await;
    let create = decl(json!({
        "name": "create_item",
        "description": "Create an item.",
        "method": "POST",
        "url": server.url("/items"),
        "response": "/item",
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "tags": {"type": "array"}},
        },
    }));
    let only_title = decl(json!({
        "name": "create_titled",
        "description": "Create an item with a title only.",
        "method": "POST",
        "url": server.url("/items"),
        "body": "fields",
        "body_fields": ["title"],
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "note": {"type": "string"}},
        },
    }));
    let registry = registry(&config(&server), vec![create, only_title]);
    let out = call(
        &registry,
        "create_item",
        json!({"title": "hello", "tags": ["x"]}),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"title": "hello", "tags": ["x"]}));
    let out = call(
        &registry,
        "create_titled",
        json!({"title": "t", "note": "not sent"}),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"id": 7, "item": {"title": "t"}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_pointer_picks_the_output_and_text_is_wrapped_when_declared() {
    let server = Server::start().await;
    let registry = registry(
        &config(&server),
        vec![
            get_decl(
                &server,
                "items",
                "/data",
                json!({"response": "/data/items"}),
            ),
            get_decl(
                &server,
                "nothing",
                "/data",
                json!({"response": "/data/none"}),
            ),
            get_decl(
                &server,
                "words",
                "/text",
                json!({"response_format": "text"}),
            ),
            get_decl(&server, "words_json", "/text", json!({})),
        ],
    );
    assert_eq!(
        call(&registry, "items", json!({})).await.unwrap(),
        json!([1, 2, 3])
    );
    let e = assert_kind(
        call(&registry, "nothing", json!({})).await,
        ToolErrorKind::InvalidOutput,
    );
    assert!(e.message.contains("/data/none"), "{e}");
    assert_eq!(
        call(&registry, "words", json!({})).await.unwrap(),
        json!("plain words")
    );
    let e = assert_kind(
        call(&registry, "words_json", json!({})).await,
        ToolErrorKind::InvalidOutput,
    );
    assert!(
        e.message.contains("response_format"),
        "says what to do: {e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_path_value_stays_one_segment() {
    let server = Server::start().await;
    let tool = get_decl(
        &server,
        "file",
        "/files/{name}",
        json!({"input_schema": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    );
    let registry = registry(&config(&server), vec![tool]);
    let out = call(&registry, "file", json!({"name": "../admin"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        json!({"name": "../admin", "path": "/files/..%2Fadmin"})
    );
    let out = call(&registry, "file", json!({"name": "a/b?c=d#e"}))
        .await
        .unwrap();
    assert_eq!(out["name"], "a/b?c=d#e");
    assert_eq!(out["path"], "/files/a%2Fb%3Fc%3Dd%23e");
    assert_kind(
        call(&registry, "file", json!({"name": ".."})).await,
        ToolErrorKind::InvalidInput,
    );
    assert_kind(
        call(&registry, "file", json!({})).await,
        ToolErrorKind::InvalidInput,
    );
    assert_eq!(server.hits.get("/files"), 2);
    assert_eq!(server.hits.total(), 2, "nothing else was asked for");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_is_waited_for_and_retried() {
    let server = Server::start().await;
    let registry = registry(
        &config(&server),
        vec![get_decl(&server, "limited", "/limited", json!({}))],
    );
    let started = Instant::now();
    let out = call(&registry, "limited", json!({})).await.unwrap();
    assert_eq!(out, json!({"ok": true}));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After: {:?}",
        started.elapsed()
    );
    assert_eq!(server.hits.get("/limited"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_is_retried_until_the_retries_run_out_and_a_404_is_not() {
    let server = Server::start().await;
    let registry = registry(
        &config(&server),
        vec![
            get_decl(&server, "down", "/down", json!({"retries": 2})),
            get_decl(&server, "missing", "/missing", json!({"retries": 2})),
        ],
    );
    let e = assert_kind(
        call(&registry, "down", json!({})).await,
        ToolErrorKind::Unavailable,
    );
    assert!(e.message.contains("503"), "{e}");
    assert_eq!(server.hits.get("/down"), 3, "one try and two retries");

    let e = assert_kind(
        call(&registry, "missing", json!({})).await,
        ToolErrorKind::ToolFailed,
    );
    assert!(e.message.contains("404 Not Found"), "{e}");
    assert_eq!(server.hits.get("/missing"), 1, "not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_host_not_allowed_is_refused_and_never_contacted() {
    let server = Server::start().await;
    let other = Server::start().await;
    let target = other.url("/data");
    let registry = registry(
        &config(&server),
        vec![get_decl(
            &server,
            "bounce",
            "/redirect",
            json!({"query": ["to"], "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}}),
        )],
    );
    let e = assert_kind(
        call(&registry, "bounce", json!({"to": target})).await,
        ToolErrorKind::PermissionDenied,
    );
    assert!(e.message.contains(&target), "names the target: {e}");
    assert!(e.message.contains("--allow-http"), "says what to do: {e}");
    assert_eq!(other.hits.total(), 0, "the other host was never contacted");
    assert_eq!(server.hits.get("/redirect"), 1, "refusals are not retried");

    // Within the allowed origin a redirect is followed.
    let out = call(&registry, "bounce", json!({"to": "/data"}))
        .await
        .unwrap();
    assert_eq!(out["data"]["total"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_headers_never_follow_a_redirect_to_another_origin() {
    let server = Server::start().await;
    let other = Server::start().await;
    // Both origins allowed: a tool without secrets may go from one to the
    // other, a tool with a header from the environment may not.
    let config = config(&server).allow_http(other.origin().parse().unwrap());
    let schema = json!({"type": "object", "properties": {"to": {"type": "string"}}});
    let plain = get_decl(
        &server,
        "plain",
        "/redirect",
        json!({"query": ["to"], "input_schema": schema}),
    );
    let secret = get_decl(
        &server,
        "secret",
        "/redirect",
        json!({"query": ["to"], "input_schema": schema,
               "headers": {"X-Api-Key": {"env": "API_TOKEN"}}}),
    );
    let registry = registry(&config, vec![plain, secret]);
    let target = other.url("/data");
    let out = call(&registry, "plain", json!({"to": target}))
        .await
        .unwrap();
    assert_eq!(out["data"]["total"], 3);
    assert_eq!(other.hits.get("/data"), 1);
    let e = assert_kind(
        call(&registry, "secret", json!({"to": target})).await,
        ToolErrorKind::PermissionDenied,
    );
    assert!(e.message.contains(&target), "{e}");
    assert!(e.message.contains("leaves the tool's origin"), "{e}");
    assert_eq!(other.hits.get("/data"), 1, "the secret never left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_service_ends_at_the_deadline_as_a_timeout() {
    let server = Server::start().await;
    let registry = registry(
        &config(&server),
        vec![get_decl(
            &server,
            "slow",
            "/slow",
            json!({"timeout_ms": 300, "retries": 1}),
        )],
    );
    let started = Instant::now();
    let e = assert_kind(
        call(&registry, "slow", json!({})).await,
        ToolErrorKind::Timeout,
    );
    assert!(e.message.contains("300 ms"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.hits.get("/slow"), 2, "a timeout is retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_is_refused_without_http_private_and_nothing_is_contacted() {
    let server = Server::start().await;
    let port = server.addr.port();
    let config = HostConfig::default()
        .allow_http(format!("http://127.0.0.1:{port}").parse().unwrap())
        .allow_http(format!("http://localhost:{port}").parse().unwrap());
    let policy = RestPolicy::new(config.rest_rules()).unwrap();

    // An IP literal is refused when the tool loads.
    let e = RestTool::new(get_decl(&server, "literal", "/data", json!({})), &policy)
        .expect_err("a loopback literal is refused");
    assert!(matches!(e, RestError::NotAllowed { .. }), "{e}");
    assert!(e.to_string().contains("loopback"), "{e}");
    assert!(
        e.to_string().contains("http_private"),
        "says what to do: {e}"
    );

    // A name is resolved and checked when called.
    let by_name = decl(json!({
        "name": "by_name",
        "description": "test",
        "url": format!("http://localhost:{port}/data"),
        "retries": 0,
    }));
    let registry = ToolRegistry::new();
    RestTool::new(by_name, &policy)
        .unwrap()
        .register(&registry)
        .unwrap();
    let e = assert_kind(
        call(&registry, "by_name", json!({})).await,
        ToolErrorKind::PermissionDenied,
    );
    assert!(e.message.contains("loopback"), "{e}");
    assert!(e.message.contains("localhost"), "names the host: {e}");
    assert_eq!(server.hits.total(), 0, "the server was never contacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_over_the_cap_fails_while_it_streams() {
    let server = Server::start().await;
    let registry = registry(
        &config(&server),
        vec![get_decl(
            &server,
            "endless",
            "/endless",
            json!({"max_response_kb": 64}),
        )],
    );
    let started = Instant::now();
    let e = assert_kind(
        call(&registry, "endless", json!({})).await,
        ToolErrorKind::OutputTooLarge,
    );
    assert!(e.message.contains("64 KiB"), "{e}");
    assert!(e.message.contains("max_response_kb"), "names the key: {e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped early: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_declarations_are_refused_at_load_with_what_to_do() {
    let server = Server::start().await;
    let policy = RestPolicy::new(config(&server).rest_rules()).unwrap();
    let refused = |value: Value| {
        RestTool::new(decl(value), &policy)
            .expect_err("refused")
            .to_string()
    };

    let e =
        refused(json!({"name": "away", "description": "d", "url": "https://api.example.net/x"}));
    assert!(e.contains("https://api.example.net"), "names the URL: {e}");
    assert!(e.contains("--allow-http https://api.example.net"), "{e}");
    assert!(e.contains("allow.http"), "{e}");

    let mut unset = issues_decl(&server);
    unset.headers.get_mut("Authorization").unwrap().env = Some("TOOLHOST_TEST_UNSET_VAR".into());
    let e = RestTool::new(unset, &policy)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("TOOLHOST_TEST_UNSET_VAR"),
        "names the variable: {e}"
    );
    assert!(e.contains("Authorization"), "{e}");

    let e = refused(json!({
        "name": "typo", "description": "d",
        "url": server.url("/repos/{owner}/{repository}"),
        "input_schema": {"type": "object", "properties": {"owner": {"type": "string"}}},
    }));
    assert!(e.contains("`repository`"), "names the parameter: {e}");
    assert!(e.contains("input_schema"), "{e}");

    let e = refused(
        json!({"name": "cap", "description": "d", "url": server.url("/x"), "max_response_kb": 1_000_000}),
    );
    assert!(e.contains("max_response_kb"), "{e}");

    let e = refused(json!({"name": "host", "description": "d", "url": "http://{host}/x"}));
    assert!(e.contains("never in the scheme, host or port"), "{e}");

    // Unknown keys are refused by serde, with the key named.
    let e = serde_json::from_value::<RestDecl>(
        json!({"name": "x", "description": "d", "url": "http://h/", "methd": "GET"}),
    )
    .expect_err("unknown key");
    assert!(e.to_string().contains("methd"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_show_and_names_are_unique_across_sources() {
    let server = Server::start().await;
    let policy = RestPolicy::new(config(&server).rest_rules()).unwrap();
    let tool = RestTool::new(issues_decl(&server), &policy).unwrap();
    let shown = format!(
        "{tool:?} {policy:?} {}",
        serde_json::to_string(tool.summary()).unwrap()
    );
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("API_TOKEN"), "names the variable: {shown}");

    let registry = ToolRegistry::new();
    registry
        .register(NativeTool::new(
            "issues",
            "native",
            json!({"type": "object"}),
            |v| async move { Ok(v) },
        ))
        .unwrap();
    let e = tool
        .declared_in("/etc/toolhost/toolhost.toml")
        .register(&registry)
        .unwrap_err();
    let e = e.to_string();
    assert!(e.contains("a native tool"), "{e}");
    assert!(e.contains("/etc/toolhost/toolhost.toml"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declaration_files_are_checked_like_a_plugin_directory() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "items.rest.toml",
        format!(
            "description = \"Items.\"\nurl = \"{}\"\nresponse = \"/data/items\"\n",
            server.url("/data")
        ),
    );
    write(
        "wrong.rest.toml",
        format!(
            "name = \"other\"\ndescription = \"d\"\nurl = \"{}\"\n",
            server.url("/data")
        ),
    );
    // The operator's toolhost.toml may name any variable; a plugin
    // directory only those in `allow.env`.
    write(
        "secret.rest.toml",
        format!(
            "description = \"d\"\nurl = \"{}\"\n[headers.Authorization]\nenv = \"HOME\"\n",
            server.url("/data")
        ),
    );
    let policy = RestPolicy::new(config(&server).rest_rules()).unwrap();
    let report = rest::load_dir(dir.path(), &policy).unwrap();
    let names: Vec<&str> = report
        .tools
        .iter()
        .map(|t| toolhost::tools::Tool::spec(t).name.as_str())
        .collect();
    assert_eq!(names, ["items"]);
    let errors: Vec<String> = report
        .errors
        .iter()
        .map(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors.iter().any(|e| e.contains("secret.rest.toml")
            && e.contains("allow.env")
            && e.contains("HOME")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("wrong.rest.toml") && e.contains("\"other\"")),
        "{errors:?}"
    );
    // A host that pins its plugins loads no declaration file: it could be
    // neither pinned nor signed.
    let mut pinned = config(&server);
    pinned.integrity.require_signatures = true;
    let refused =
        rest::load_dir(dir.path(), &RestPolicy::new(pinned.rest_rules()).unwrap()).unwrap();
    assert!(refused.tools.is_empty());
    assert_eq!(refused.errors.len(), 3);
    assert!(
        refused.errors[0].to_string().contains("[[rest]]"),
        "{}",
        refused.errors[0]
    );

    let registry = ToolRegistry::new();
    for tool in report.tools {
        tool.register(&registry).unwrap();
    }
    assert_eq!(
        call(&registry, "items", json!({})).await.unwrap(),
        json!([1, 2, 3])
    );
}

fn toolhost(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(toolhost_bin());
    command
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG");
    for (k, v) in envs {
        command.env(k, v);
    }
    command.output().expect("toolhost runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_lists_and_calls_rest_tools_without_showing_secrets() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(
        plugins.join("data.rest.toml"),
        format!(
            "description = \"Data.\"\nurl = \"{}\"\nresponse = \"/data/total\"\n",
            server.url("/data")
        ),
    )
    .unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            r#"[allow]
http = ["{origin}"]
http_private = true

[[rest]]
name = "issues"
description = "Issues of a repository."
url = "{url}"
query = ["state"]
input_schema = {{ type = "object", required = ["owner", "repo"], properties = {{ owner = {{ type = "string" }}, repo = {{ type = "string" }}, state = {{ type = "string" }} }} }}
headers.Authorization = {{ env = "TOOLHOST_TEST_TOKEN", prefix = "Bearer " }}
"#,
            origin = server.origin(),
            url = server.url("/repos/{owner}/{repo}/issues"),
        ),
    )
    .unwrap();
    let (plugins, config) = (
        plugins.to_str().unwrap().to_owned(),
        config.to_str().unwrap().to_owned(),
    );
    let env = [("TOOLHOST_TEST_TOKEN", TOKEN)];

    let list = {
        let (plugins, config) = (plugins.clone(), config.clone());
        tokio::task::spawn_blocking(move || {
            toolhost(
                &["list", "--json", "--plugins", &plugins, "--config", &config],
                &env,
            )
        })
        .await
        .unwrap()
    };
    let stdout = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        !stdout.contains(TOKEN),
        "the secret is not listed: {stdout}"
    );
    let listed: Value = serde_json::from_str(stdout.trim()).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    let issues = tools
        .iter()
        .find(|t| t["name"] == "issues")
        .expect("issues listed");
    assert_eq!(issues["source"]["kind"], "rest");
    assert_eq!(issues["source"]["method"], "GET");
    assert_eq!(
        issues["source"]["headers"],
        json!([{"name": "Authorization", "env": "TOOLHOST_TEST_TOKEN"}])
    );
    assert!(tools.iter().any(|t| t["name"] == "data"), "{stdout}");

    let called = {
        let (plugins, config) = (plugins.clone(), config.clone());
        tokio::task::spawn_blocking(move || {
            toolhost(
                &[
                    "call",
                    "issues",
                    "--json",
                    "--plugins",
                    &plugins,
                    "--config",
                    &config,
                    "--input",
                    r#"{"owner":"o","repo":"r","state":"closed"}"#,
                ],
                &env,
            )
        })
        .await
        .unwrap()
    };
    let stdout = String::from_utf8_lossy(&called.stdout);
    assert!(
        called.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let out: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["output"]["owner"], "o");
    assert_eq!(out["output"]["query"], json!([["state", "closed"]]));

    // Without the variable the config does not load: exit 2, naming it.
    let unset = tokio::task::spawn_blocking(move || {
        toolhost(
            &[
                "call",
                "data",
                "--plugins",
                &plugins,
                "--config",
                &config,
                "--input",
                "{}",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&unset.stderr);
    assert_eq!(unset.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("TOOLHOST_TEST_TOKEN"), "{stderr}");
}
