//! `GET /metrics`: the registry's [`Metrics`] in Prometheus' text format,
//! on the MCP server's own address (under its bearer token) or on one of
//! its own ([`ToolServer::serve_metrics`]); every HTTP answer counted by
//! status; and the caller's trace context read off a request.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderName, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tokio_util::sync::CancellationToken;

use super::{HttpServer, ServeError, ToolServer};
use crate::telemetry::{CONTENT_TYPE, Metrics, TRACEPARENT, TRACESTATE, TraceParent};

/// The `/metrics` route over `metrics` (the live session gauge is kept by
/// each server's sessions as they open and close, so any address serves
/// the same numbers).
pub(super) fn routes(metrics: Metrics) -> Router {
    Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = metrics.clone();
            async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.render()).into_response() }
        }),
    )
}

/// Count every answer by its status.
pub(super) fn count_status(router: Router, metrics: Metrics) -> Router {
    router.layer(middleware::from_fn_with_state(metrics, counted))
}

async fn counted(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    metrics.record_http(response.status().as_u16());
    response
}

/// The trace a request continues: `traceparent` in its `_meta` (MCP,
/// SEP-414), else in the HTTP request's headers.
pub(super) fn trace_parent(context: &RequestContext<RoleServer>) -> Option<TraceParent> {
    let headers = context
        .extensions
        .get::<http::request::Parts>()
        .map(|parts| &parts.headers);
    trace_parent_in(&context.meta, headers)
}

/// [`trace_parent`] from a request's `_meta` and HTTP headers.
pub(super) fn trace_parent_in(
    meta: &rmcp::model::JsonObject,
    headers: Option<&http::HeaderMap>,
) -> Option<TraceParent> {
    let meta = |key: &str| meta.get(key).and_then(|v| v.as_str());
    if let Some(parent) = meta(TRACEPARENT) {
        return TraceParent::from_w3c(parent, meta(TRACESTATE));
    }
    let header = |key: &HeaderName| headers?.get(key).and_then(|v| v.to_str().ok());
    TraceParent::from_w3c(header(&TRACEPARENT_HEADER)?, header(&TRACESTATE_HEADER))
}

/// The W3C trace headers as `HeaderName`s made once (a lookup by `&str`
/// parses the name on every request).
const TRACEPARENT_HEADER: HeaderName = HeaderName::from_static(TRACEPARENT);
const TRACESTATE_HEADER: HeaderName = HeaderName::from_static(TRACESTATE);

impl ToolServer {
    /// Serve `GET /metrics` (and `/healthz`) on an address of its own,
    /// e.g. for a Prometheus that should not hold the MCP bearer token.
    /// The same bind rule as MCP holds: loopback, unless remote clients
    /// are allowed and a token is set. Scrapes need no token. Its
    /// connections are held to the server's [`ConnectionBudgets`](super::ConnectionBudgets)
    /// (a cap of their own, the same timeouts), as `/mcp`'s are.
    ///
    /// # Errors
    ///
    /// As [`serve_http`](Self::serve_http); [`ServeError::NoMetrics`]
    /// when the registry counts no metrics
    /// ([`Observability::metrics`](crate::tools::Observability::metrics)).
    pub async fn serve_metrics(&self, addr: SocketAddr) -> Result<HttpServer, ServeError> {
        self.options.check_http(addr)?;
        let metrics = self.tools.registry.metrics().ok_or(ServeError::NoMetrics)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener.local_addr().map_err(ServeError::LocalAddr)?;
        let app = routes(metrics).route("/healthz", axum::routing::get(|| async { "ok" }));
        // No sessions and no token here: only the router answers.
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tracing::info!("serving metrics on http://{addr}/metrics");
        // The connection budgets of MCP (a cap of its own, the same
        // numbers): idle or slow scrapers cannot hold descriptors that
        // `/mcp` needs.
        let budgets = self.options.connections;
        let task = tokio::spawn(async move {
            let shutdown = async move { stopped.cancelled().await };
            super::connections::serve(listener, app, budgets, shutdown, || {}).await;
        });
        Ok(HttpServer {
            addr,
            stop,
            task: Some(task),
        })
    }
}
