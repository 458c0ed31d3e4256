//! MCP's streamable HTTP transport (rmcp's tower service on axum), with
//! the checks a local server needs: loopback unless told otherwise, a
//! bearer token for anything else, Host and Origin checked against DNS
//! rebinding.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::direct::Front;
use super::direct_sessions::DirectSessions;
use super::handler::{McpTools, Tools};
use super::sessions::CappedSessions;
use super::{ServeError, ServerOptions};
use crate::telemetry::Metrics;

/// Loopback names a `Host` header may carry (any port).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Browser origins on this machine (any port).
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Check that `options` allow serving on `addr`: a non-loopback address
/// needs `allow_remote` and a bearer token; a token must not be blank.
pub(super) fn check(options: &ServerOptions, addr: SocketAddr) -> Result<(), ServeError> {
    if options
        .token
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err(ServeError::BlankToken);
    }
    let remote_allowed =
        options.allow_remote && (options.token.is_some() || options.auth.is_some());
    if !(addr.ip().is_loopback() || remote_allowed) {
        return Err(ServeError::NotLoopback { addr });
    }
    Ok(())
}

/// Serve on `listener` until `stop` is cancelled, then let answers in
/// flight finish (up to the grace period of the connection budgets).
pub(super) async fn serve(
    listener: TcpListener,
    addr: SocketAddr,
    options: ServerOptions,
    mut tools: Tools,
    stop: CancellationToken,
) {
    let (hosts, origins) = allowed(addr, &options);
    let origins_allowed = origins.clone();
    // Calls in a session skip rmcp's session worker (see `direct`); a
    // stateless server has no sessions.
    let direct = (!options.stateless && !options.rmcp_only).then(|| {
        Arc::new(DirectSessions::new(
            hosts.clone(),
            options.sessions.idle_timeout,
        ))
    });
    tools.lane = direct.clone().map(|d| d as Arc<dyn super::handler::Lane>);
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(sessions.child_token())
        // Stateless: no MCP sessions, so any process behind a load
        // balancer can answer any request; each is answered on its own
        // (a plugin session of its own unless `_meta` names one), as JSON.
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    let count = tools.registry.len();
    let metrics = tools.registry.metrics();
    let tasks = tools.tasks.is_some();
    // One handler (and so one plugin session) per MCP session; rmcp drops
    // it, ending the plugin session, when the session is deleted or
    // expires (after the session idle timeout). A request of the
    // stateless revision gets a handler of its own, dropped once answered.
    let session_manager = Arc::new(CappedSessions::new(
        options.sessions,
        direct
            .clone()
            .map(|d| d as Arc<dyn super::sessions::SessionEnd>),
        metrics.clone(),
    ));
    let service = StreamableHttpService::new(
        move || Ok(McpTools::new(tools.clone())),
        Arc::clone(&session_manager),
        config,
    );
    let app = guarded(
        Router::new().nest_service("/mcp", service),
        &options,
        &session_manager,
        metrics.as_ref(),
    );
    // Direct answers skip the router's layers: the front counts them.
    let app = Front::new(
        app,
        direct,
        Arc::clone(&session_manager),
        options.token.clone(),
        options.auth.clone(),
        options.policy.clone(),
        metrics,
    )
    .with_tasks(tasks)
    .with_cors(super::cors::Cors::new(&origins_allowed));
    tracing::info!("serving {count} tools over MCP (streamable HTTP) on http://{addr}/mcp");
    let budgets = options.connections;
    let shutdown = async move {
        stop.cancelled().await;
        tracing::info!(
            "shutting down: finishing answers in flight (up to {}s)",
            budgets.shutdown_grace.as_secs_f64()
        );
    };
    // Open event streams never end by themselves: the sessions close once
    // the grace period is over.
    let closing = sessions.clone();
    super::connections::serve(listener, app, budgets, shutdown, move || closing.cancel()).await;
    sessions.cancel();
}

/// The `Host` names and browser origins the server accepts: loopback's,
/// the address it is bound to (unless loopback or unspecified), and those
/// `options` allow.
fn allowed(addr: SocketAddr, options: &ServerOptions) -> (Vec<String>, Vec<String>) {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
    origins.extend(options.allowed_origins.iter().cloned());
    (hosts, origins)
}

/// The app around `mcp` (the `/mcp` service): its event-stream and DELETE
/// fixes, the session cap (with sessions), the metrics routes (with
/// `metrics`), the bearer token (with one), `/healthz`, and the count of
/// answers by status.
fn guarded(
    mcp: Router,
    options: &ServerOptions,
    session_manager: &Arc<CappedSessions>,
    metrics: Option<&Metrics>,
) -> Router {
    let mut mcp = mcp
        .layer(middleware::from_fn(super::sse::gather_event_stream_start))
        .layer(middleware::from_fn(delete_answers_ok));
    if !options.stateless {
        mcp = mcp.layer(middleware::from_fn_with_state(
            Arc::clone(session_manager),
            super::sessions::refuse_over_cap,
        ));
    }
    // Metrics under the same bind and token rules as MCP.
    if let Some(metrics) = metrics {
        mcp = mcp.merge(super::metrics::routes(metrics.clone()));
    }
    if let Some(token) = options.token.clone() {
        mcp = mcp.layer(middleware::from_fn_with_state(
            token,
            super::token::require_token,
        ));
    }
    if let Some(auth) = &options.auth {
        mcp = mcp
            .layer(middleware::from_fn_with_state(
                Arc::clone(auth),
                super::auth::http::require,
            ))
            .merge(super::auth::http::metadata_routes(auth));
    }
    let mut app = mcp.route("/healthz", axum::routing::get(|| async { "ok" }));
    if let Some(metrics) = metrics {
        app = super::metrics::count_status(app, metrics.clone());
    }
    app
}

/// A DELETE that ended its session is answered `200 OK`. rmcp answers
/// `202 Accepted`, which the official Python SDK client takes for a failure
/// ("Session termination failed: 202"): it accepts 200 and 204 only. The
/// session has ended by the time of the answer (its calls answered, see
/// [`super::direct_sessions::DirectSessions::end`]), so nothing is left pending
/// and 200 is what happened.
async fn delete_answers_ok(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_bind_needs_allow_remote_and_a_token() {
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let plain = ServerOptions::new();
        assert!(matches!(
            check(&plain, public),
            Err(ServeError::NotLoopback { .. })
        ));
        let remote = ServerOptions::new().allow_remote(true);
        assert!(check(&remote, public).is_err());
        let remote_with_token = remote.bearer_token("a-long-random-token");
        assert!(check(&remote_with_token, public).is_ok());
        assert!(check(&plain, local).is_ok());
        let blank = ServerOptions::new().bearer_token("  ");
        assert!(matches!(check(&blank, local), Err(ServeError::BlankToken)));
    }
}
