//! `toolhost serve --http`: MCP's streamable HTTP transport (rmcp's tower
//! service on axum), with the checks a local server needs: loopback unless
//! told otherwise, a bearer token for anything else, Host and Origin
//! checked against DNS rebinding.

use std::net::SocketAddr;
use std::sync::Arc;

use super::connections::Budgets;
use super::handler::{McpTools, Tools};
use super::sessions::{CappedSessions, SessionBudgets};
use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

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

/// The checked `--http` flags.
#[derive(Debug)]
pub struct Options {
    addr: SocketAddr,
    token: Option<Arc<str>>,
    hosts: Vec<String>,
    origins: Vec<String>,
    stateless: bool,
}

impl Options {
    /// Check the flags: a non-loopback address needs `--allow-remote` and a
    /// token.
    pub fn new(
        addr: SocketAddr,
        allow_remote: bool,
        token_env: Option<&str>,
        allow_hosts: Vec<String>,
        allow_origins: Vec<String>,
        stateless: bool,
    ) -> anyhow::Result<Self> {
        let remote_allowed = allow_remote && token_env.is_some();
        if !(addr.ip().is_loopback() || remote_allowed) {
            bail!(
                "refusing to serve MCP on {addr}, which is not a loopback address: anyone who \
                 can reach it could run the tools. Bind 127.0.0.1 (or ::1), or pass \
                 --allow-remote and --token-env VAR (a bearer token in environment variable VAR)"
            );
        }
        let token = match token_env {
            None => None,
            Some(var) => {
                let token = std::env::var(var).with_context(|| {
                    format!("--token-env {var}: environment variable {var} is not set (or not UTF-8); set it to the bearer token clients must send")
                })?;
                if token.trim().is_empty() {
                    bail!(
                        "--token-env {var}: environment variable {var} is empty; set it to a long random token"
                    );
                }
                Some(Arc::from(token))
            }
        };
        let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
            hosts.push(addr.ip().to_string());
        }
        hosts.extend(allow_hosts);
        let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
        origins.extend(allow_origins);
        Ok(Self {
            addr,
            token,
            hosts,
            origins,
            stateless,
        })
    }
}

/// Serve until SIGTERM or Ctrl-C, then let answers in flight finish (up
/// to the grace period in `budgets`).
pub async fn serve(
    options: Options,
    budgets: Budgets,
    session_budgets: SessionBudgets,
    tools: Tools,
) -> anyhow::Result<()> {
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.hosts.clone())
        .with_allowed_origins(options.origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(sessions.child_token())
        // --stateless: no MCP sessions, so any process behind a load
        // balancer can answer any request; each is answered on its own
        // (a plugin session of its own unless `_meta` names one), as JSON.
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    let count = tools.registry.len();
    // One handler (and so one plugin session) per MCP session; rmcp drops
    // it, ending the plugin session, when the session is deleted or
    // expires (after the session idle timeout). A request of the
    // stateless revision gets a handler of its own, dropped once answered.
    let session_manager = Arc::new(CappedSessions::new(session_budgets));
    let service = StreamableHttpService::new(
        move || Ok(McpTools::new(tools.clone())),
        Arc::clone(&session_manager),
        config,
    );
    let mut mcp = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(super::sse::gather_event_stream_start));
    if !options.stateless {
        mcp = mcp.layer(middleware::from_fn_with_state(
            session_manager,
            super::sessions::refuse_over_cap,
        ));
    }
    if let Some(token) = options.token.clone() {
        mcp = mcp.layer(middleware::from_fn_with_state(token, require_token));
    }
    let app = mcp.route("/healthz", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))
        .map_err(super::UsageError)?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    // On stderr, always (also with -q): scripts and tests read the port.
    eprintln!("toolhost serve: listening on http://{local}/mcp");
    tracing::info!("serving {count} tools over MCP (streamable HTTP) on http://{local}/mcp");
    let grace = budgets.shutdown_grace;
    let shutdown = async move {
        super::shutdown_signal().await;
        tracing::info!(
            "signal received: finishing answers in flight (up to {}s)",
            grace.as_secs_f64()
        );
    };
    // Open event streams never end by themselves: the sessions close once
    // the grace period is over.
    let closing = sessions.clone();
    super::connections::serve(listener, app, budgets, shutdown, move || closing.cancel()).await;
    sessions.cancel();
    Ok(())
}

/// Refuse (401) a request without `Authorization: Bearer <token>`.
async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send Authorization: Bearer <token>\n",
        )
            .into_response(),
    }
}

/// Compare without an early exit, so the time taken does not say how much
/// of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_bind_needs_allow_remote_and_a_token() {
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(Options::new(public, false, None, vec![], vec![], false).is_err());
        assert!(Options::new(public, true, None, vec![], vec![], false).is_err());
        assert!(Options::new(local, false, None, vec![], vec![], false).is_ok());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secre"));
    }
}
