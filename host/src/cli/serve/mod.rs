//! `toolhost serve`: the tools as an MCP server, over stdio (the default)
//! or streamable HTTP (`--http ADDR`). See docs/mcp.md.

mod connections;
mod handler;
mod http;
mod sessions;
mod sse;
mod stdio;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;
use toolhost::plugin::{DEFAULT_DEBOUNCE, PluginWatcher, WatchEvent};

use super::{ChainDisplay, ExecArgs, PluginArgs, UsageError};
use handler::{McpTools, Tools, ToolsChanged};

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    #[command(flatten)]
    exec: ExecArgs,
    /// Serve MCP's streamable HTTP transport on ADDR (e.g. 127.0.0.1:8080;
    /// port 0 picks a free one) instead of stdio. The endpoint is /mcp;
    /// /healthz answers `ok`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Let --http bind an address other than loopback. Needs --token-env.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Require `Authorization: Bearer TOKEN` on every MCP request, TOKEN
    /// read from environment variable VAR.
    #[arg(long, value_name = "VAR", requires = "http")]
    token_env: Option<String>,
    /// Also accept requests whose Host is HOST (a name or host:port;
    /// repeatable). Loopback names are always accepted.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// Also accept browser requests from ORIGIN, e.g.
    /// https://app.example.com:443 (repeatable). Loopback origins are
    /// always accepted; any other Origin is refused with 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Serve without MCP sessions: no Mcp-Session-Id, every request
    /// answered on its own (as JSON), so N processes behind any load
    /// balancer need no session affinity. Stateful plugins then keep state
    /// only under a `_meta` session key (docs/mcp.md).
    #[arg(long, requires = "http")]
    stateless: bool,
    /// At most N HTTP connections open at once; one more is answered
    /// `503 Service Unavailable` (with the reason) and closed.
    #[arg(long, value_name = "N", default_value = "512", requires = "http")]
    max_connections: NonZeroUsize,
    /// Close a connection that has not sent a whole request head this long
    /// after it opened or began the request (slow or silent clients).
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "10s", requires = "http")]
    header_timeout: Duration,
    /// Close a connection whose request body has not all arrived this long
    /// after its head.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "30s", requires = "http")]
    body_timeout: Duration,
    /// Close a kept-alive connection with no request in flight for this
    /// long.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "60s", requires = "http")]
    idle_timeout: Duration,
    /// At most N MCP sessions at once; an `initialize` over the cap is
    /// answered `503` with a JSON-RPC error naming it. Not used with
    /// --stateless (no sessions).
    #[arg(long, value_name = "N", default_value = "1000", requires = "http")]
    max_sessions: NonZeroUsize,
    /// End an MCP session (and its plugin session) after this long
    /// without a request.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "5m", requires = "http")]
    session_idle_timeout: Duration,
    /// After SIGTERM or Ctrl-C, let answers in flight finish for up to
    /// this long, then exit with whatever is still open.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "10s", requires = "http")]
    shutdown_grace: Duration,
    /// Do not watch the plugin directory. By default, adding, replacing or
    /// removing NAME.wasm / NAME.toml there updates the tools at once, and
    /// connected clients are told (notifications/tools/list_changed).
    #[arg(long)]
    no_watch: bool,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Check the flags before loading anything: a refused bind is a usage
    // error, found at once.
    let http = match args.http {
        Some(addr) => Some(
            http::Options::new(
                addr,
                args.allow_remote,
                args.token_env.as_deref(),
                args.allow_hosts.clone(),
                args.allow_origins.clone(),
                args.stateless,
            )
            .map_err(UsageError)?,
        ),
        None => None,
    };
    let budgets = connections::Budgets {
        max_connections: args.max_connections.get(),
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        idle_timeout: args.idle_timeout,
        shutdown_grace: args.shutdown_grace,
    };
    let session_budgets = sessions::SessionBudgets {
        max_sessions: args.max_sessions.get(),
        idle_timeout: args.session_idle_timeout,
    };
    let toolbox = args.plugins.load_all().await?;
    let registry = Arc::clone(toolbox.registry());
    if registry.is_empty() {
        tracing::warn!(
            "serving no tools for now (see above); with hot reload on, plugins that appear in {} are served as they come",
            toolhost::text::escape_controls(&args.plugins.plugins.display().to_string())
        );
    }
    // Watched from here on: a file changed between the load above and
    // this point is picked up at its next change.
    let watcher = if args.no_watch || !args.plugins.plugins.is_dir() {
        None
    } else {
        let watcher = toolbox.watch(DEFAULT_DEBOUNCE).map_err(|e| {
            UsageError(anyhow::Error::new(e).context("pass --no-watch to serve without hot reload"))
        })?;
        Some(watcher)
    };
    let tools = Tools {
        registry,
        overrides: args.exec.overrides(),
        changes: watcher.as_ref().map(|_| ToolsChanged::new()),
    };
    let reload = reload(watcher, tools.changes.clone());
    let served = async move {
        match http {
            Some(options) => http::serve(options, budgets, session_budgets, tools).await,
            None => serve_stdio(tools).await,
        }
    };
    // The reload loop never ends by itself: serving decides when to stop.
    tokio::select! {
        served = served => served?,
        () = reload => {}
    }
    // The plugins stay loaded until every connection is done.
    drop(toolbox);
    Ok(ExitCode::SUCCESS)
}

/// Apply every change in the plugin directory, log it, and tell the
/// clients when their tool list is stale. Never returns while watching.
async fn reload(watcher: Option<PluginWatcher>, changes: Option<ToolsChanged>) {
    let (Some(mut watcher), Some(changes)) = (watcher, changes) else {
        return std::future::pending().await;
    };
    while let Some(event) = watcher.next().await {
        match &event {
            WatchEvent::Loaded {
                plugin,
                replaced,
                added,
                removed,
                displaced,
            } => {
                let verb = if *replaced { "reloaded" } else { "loaded" };
                tracing::info!(
                    "{verb} plugin {} ({} tools; added: [{}]; removed: [{}])",
                    shown(plugin.path()),
                    plugin.tool_specs().len(),
                    added.join(", "),
                    removed.join(", "),
                );
                for lost in displaced {
                    tracing::warn!("{}", ChainDisplay(lost).escaped());
                }
            }
            WatchEvent::Removed { path, tools } => {
                tracing::info!(
                    "plugin {} removed: no longer serving [{}]",
                    shown(path),
                    tools.join(", ")
                );
            }
            WatchEvent::Failed { error, .. } => {
                tracing::warn!(
                    "plugin change not applied, the previous version (if any) still serves: {}",
                    ChainDisplay(error).escaped()
                );
            }
            _ => {}
        }
        if event.changed_tools() {
            changes.notify();
        }
    }
    tracing::warn!("the plugin directory watcher stopped; restart to pick up changes");
    std::future::pending().await
}

/// A file name fit for a log line (anyone who can write the directory
/// picks it).
fn shown(path: &std::path::Path) -> String {
    toolhost::text::untrusted(&path.display().to_string(), 1024)
}

/// One MCP connection on stdin/stdout (stdout is the protocol: logs go to
/// stderr), one plugin session, until the client closes stdin or a signal
/// arrives.
async fn serve_stdio(tools: Tools) -> anyhow::Result<()> {
    tracing::info!("serving {} tools over MCP on stdio", tools.registry.len());
    let stdin_closed = CancellationToken::new();
    let transport = stdio::transport(stdin_closed.clone())
        .context("cannot use stdin/stdout as the MCP transport")?;
    let service = McpTools::new(tools)
        .serve(transport)
        .await
        .context("the MCP handshake on stdio failed (is an MCP client on the other end?)")?;
    let cancel = service.cancellation_token();
    let mut waiting = std::pin::pin!(service.waiting());
    tokio::select! {
        quit = &mut waiting => {
            let quit = quit.context("the MCP connection task failed")?;
            tracing::debug!("MCP connection ended: {quit:?}");
        }
        () = stdin_closed.cancelled() => {
            // Cancelling the connection cancels every call in flight (each
            // call's token is a child of it): their guests stop at the next
            // epoch tick, and nobody waits for answers the client cannot
            // read any more.
            tracing::debug!("stdin closed: cancelling the calls in flight");
            cancel.cancel();
            if tokio::time::timeout(STDIO_WIND_DOWN, waiting).await.is_err() {
                tracing::debug!("the MCP connection did not wind down in time; exiting anyway");
            }
        }
        () = shutdown_signal() => {
            tracing::info!("signal received: closing the MCP connection");
            cancel.cancel();
        }
    }
    Ok(())
}

/// How long the stdio connection may take to end once its calls are
/// cancelled (they stop within an epoch tick).
const STDIO_WIND_DOWN: Duration = Duration::from_millis(500);

/// Ctrl-C or SIGTERM.
pub(super) async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
