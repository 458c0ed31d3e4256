//! Outbound HTTP through wasi:http, as a user meets it: the bundled `fetch`
//! plugin against a loopback server. A granted origin works; anything else
//! (another host, another port, a redirect elsewhere, a name that leads to
//! a private address, one request too many) is refused before it leaves,
//! as `permission_denied` naming the URL; the response cap and the deadline
//! hold; a manifest asking for more than the operator allows does not load.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use futures::StreamExt as _;
use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::{PluginError, PluginHost};
use toolhost::tools::{CallContext, ToolError, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin, toolhost_bin, workspace_root};

/// A loopback HTTP server that counts the requests it gets.
struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Server {
    async fn start() -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new()
            .route("/json", get(document))
            .route("/redirect", get(redirect))
            .route("/loop", get(redirect_loop))
            .route("/slow", get(slow))
            .route("/endless", get(endless))
            .with_state(Arc::clone(&hits));
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

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn document(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    axum::Json(json!({"items": [{"name": "a"}, {"name": "b"}], "total": 2}))
}

async fn redirect(
    State(hits): State<Arc<AtomicUsize>>,
    Query(query): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    let to = query.get("to").cloned().unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)])
}

async fn redirect_loop(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    (StatusCode::FOUND, [(header::LOCATION, "/loop")])
}

async fn slow(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(30)).await;
    "late"
}

/// 64 MiB of JSON-ish bytes, far more than any test's cap; it stops early
/// when the client goes away.
async fn endless(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    let chunk = bytes::Bytes::from(vec![b' '; 16 << 10]);
    let stream =
        futures::stream::repeat_with(move || Ok::<_, std::convert::Infallible>(chunk.clone()))
            .take(4096);
    axum::body::Body::from_stream(stream)
}

fn config() -> HostConfig {
    HostConfig::default().cache_dir(workspace_root().join("target").join("test-cache"))
}

/// The operator's allow-list for these tests: the loopback server, private
/// addresses allowed (it is on 127.0.0.1).
fn loopback_config() -> HostConfig {
    config()
        .allow_http("http://127.0.0.1:*".parse().unwrap())
        .allow_http_private()
}

/// A directory with the bundled `fetch` plugin under `manifest`.
fn fetch_with(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("fetch", dir.path());
    std::fs::write(dir.path().join("fetch.toml"), manifest).unwrap();
    dir
}

fn granted(server: &Server, limits: &str) -> String {
    format!(
        "[permissions]\nhttp = [\"http://127.0.0.1:{}\"]\n[limits]\n{limits}\n",
        server.port()
    )
}

async fn registry(config: HostConfig, dir: &Path) -> ToolRegistry {
    let report = PluginHost::new(config)
        .expect("the sandbox starts")
        .load_dir(dir)
        .await
        .expect("the directory is readable");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report.registry().expect("the tools register")
}

async fn fetch(registry: &ToolRegistry, url: &str, pointer: &str) -> Result<Value, ToolError> {
    registry
        .call(
            "fetch_json",
            json!({"url": url, "pointer": pointer}),
            &CallContext::default(),
        )
        .await
        .output
}

#[track_caller]
fn assert_denied(result: Result<Value, ToolError>, url: &str, why: &str) {
    let e = result.expect_err("the request was refused");
    assert_eq!(e.kind, ToolErrorKind::PermissionDenied, "{e}");
    assert!(e.message.contains(url), "names the URL {url}: {e}");
    assert!(e.message.contains(why), "says `{why}`: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_origin_answers_and_a_redirect_within_it_is_followed() {
    let server = Server::start().await;
    let dir = fetch_with(&granted(&server, ""));
    let registry = registry(loopback_config(), dir.path()).await;

    let out = fetch(&registry, &server.url("/json"), "/items/1/name")
        .await
        .unwrap();
    assert_eq!(
        out,
        json!({"url": server.url("/json"), "status": 200, "value": "b"})
    );

    let out = fetch(&registry, &server.url("/redirect?to=/json"), "/total")
        .await
        .unwrap();
    assert_eq!(out["value"], json!(2));
    assert_eq!(out["url"], json!(server.url("/json")));
    assert_eq!(server.hits(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_host_another_port_or_a_redirect_away_is_refused_by_url() {
    let server = Server::start().await;
    let dir = fetch_with(&granted(&server, ""));
    let registry = registry(loopback_config(), dir.path()).await;

    // Refused before any name lookup or connection.
    let away = "http://denied.example.net/secret";
    assert_denied(fetch(&registry, away, "").await, away, "not an origin");
    let other_port = format!("http://127.0.0.1:{}/json", server.port() ^ 1);
    assert_denied(
        fetch(&registry, &other_port, "").await,
        &other_port,
        "not an origin this plugin was granted",
    );
    let https = format!("https://127.0.0.1:{}/json", server.port());
    assert_denied(fetch(&registry, &https, "").await, &https, "not an origin");
    assert_eq!(server.hits(), 0, "nothing reached the server");

    // The server answers the first request; the guest's request to the
    // new location is checked again and refused.
    let bounce = server.url(&format!("/redirect?to={away}"));
    assert_denied(fetch(&registry, &bounce, "").await, away, "not an origin");
    assert_eq!(server.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_resolves_to_a_private_address_is_refused() {
    let server = Server::start().await;
    // `localhost` and 127.0.0.1 are allowed as origins, but private
    // addresses are not: the check is on the address, not the name.
    let config = config()
        .allow_http("http://localhost:*".parse().unwrap())
        .allow_http("http://127.0.0.1:*".parse().unwrap());
    let dir = fetch_with(&format!(
        "[permissions]\nhttp = [\"http://localhost:{0}\", \"http://127.0.0.1:{0}\"]\n",
        server.port()
    ));
    let registry = registry(config, dir.path()).await;

    let by_name = format!("http://localhost:{}/json", server.port());
    assert_denied(fetch(&registry, &by_name, "").await, &by_name, "loopback");
    let literal = server.url("/json");
    assert_denied(
        fetch(&registry, &literal, "").await,
        &literal,
        "allow.http_private",
    );
    assert_eq!(server.hits(), 0, "nothing reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_without_a_grant_is_told_which_key_to_ask_with() {
    let server = Server::start().await;
    let dir = fetch_with("");
    let registry = registry(loopback_config(), dir.path()).await;
    let url = server.url("/json");
    assert_denied(fetch(&registry, &url, "").await, &url, "[permissions] http");
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_call_are_capped() {
    let server = Server::start().await;
    let dir = fetch_with(&granted(&server, "http_requests = 3"));
    let registry = registry(loopback_config(), dir.path()).await;
    let url = server.url("/loop");
    assert_denied(fetch(&registry, &url, "").await, &url, "at most 3");
    assert_eq!(server.hits(), 3);
    // The count is per call.
    let ok = fetch(&registry, &server.url("/json"), "/total").await;
    assert_eq!(ok.unwrap()["value"], json!(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_cap_holds() {
    let server = Server::start().await;
    let dir = fetch_with(&granted(&server, "http_response_kb = 64"));
    let registry = registry(loopback_config(), dir.path()).await;
    let url = server.url("/endless");
    let e = fetch(&registry, &url, "").await.unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::OutputTooLarge, "{e}");
    assert!(
        e.message.contains(&url) && e.message.contains("http_response_kb"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_covers_a_request_that_never_answers() {
    let server = Server::start().await;
    let dir = fetch_with(&granted(&server, "timeout_ms = 800"));
    let registry = registry(loopback_config(), dir.path()).await;
    let started = Instant::now();
    let e = fetch(&registry, &server.url("/slow"), "")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Timeout, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The host keeps serving.
    let ok = fetch(&registry, &server.url("/json"), "/total").await;
    assert_eq!(ok.unwrap()["value"], json!(2));
}

#[tokio::test]
async fn a_manifest_asking_outside_the_allow_list_does_not_load() {
    let dir = fetch_with("[permissions]\nhttp = [\"https://api.example.com\"]\n");
    let host =
        PluginHost::new(config().allow_http("https://*.example.org".parse().unwrap())).unwrap();
    let report = host.load_dir(dir.path()).await.unwrap();
    assert!(report.plugins.is_empty());
    let [PluginError::NotAllowed { message, .. }] = &report.errors[..] else {
        panic!("{:?}", report.errors);
    };
    for part in [
        "`permissions.http`",
        "https://api.example.com",
        "allowed: https://*.example.org",
        "--allow-http",
    ] {
        assert!(message.contains(part), "`{part}` in: {message}");
    }

    // The bundled manifest asks for its public origins: a host that does
    // not allow them refuses it, one that does loads it.
    let bundled = tempfile::tempdir().unwrap();
    copy_plugin("fetch", bundled.path());
    let report = PluginHost::new(config())
        .unwrap()
        .load_dir(bundled.path())
        .await
        .unwrap();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let allowing = config()
        .allow_http("https://api.github.com".parse().unwrap())
        .allow_http("https://*.wikipedia.org".parse().unwrap());
    registry(allowing, bundled.path()).await;
}

/// `toolhost ARGS` with the test cache and no ambient config.
fn toolhost(args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("toolhost starts")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_cli_allows_http_by_flag_and_reports_refusals() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(Server::start());
    let dir = fetch_with(&granted(&server, ""));
    let plugins = dir.path().to_str().unwrap();

    // Not allowed by the operator: refused at load, by name.
    let out = toolhost(&["list", "--plugins", plugins, "--json"]);
    let errors = stdout_json(&out)["errors"].to_string();
    assert!(
        errors.contains("permissions.http") && errors.contains("--allow-http"),
        "{errors}"
    );

    let input = json!({"url": server.url("/json"), "pointer": "/items/0/name"}).to_string();
    let call = |private: bool| {
        let mut args = vec![
            "call",
            "fetch_json",
            "--input",
            &input,
            "--plugins",
            plugins,
            "--allow-http",
            "http://127.0.0.1:*",
            "--json",
        ];
        if private {
            args.push("--allow-http-private");
        }
        toolhost(&args)
    };
    let out = call(true);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_json(&out)["output"]["value"], json!("a"));

    // Without --allow-http-private the loopback server is out of reach.
    let out = call(false);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let error = stdout_json(&out).to_string();
    assert!(
        error.contains("permission_denied") && error.contains(&server.url("/json")),
        "{error}"
    );
    assert_eq!(server.hits(), 1);
}
