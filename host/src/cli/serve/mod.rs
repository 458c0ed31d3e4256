//! `toolhost serve`: the tools as an MCP server, over stdio (the default)
//! or streamable HTTP (`--http ADDR`). See docs/mcp.md.

mod handler;
mod http;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;

use super::{ExecArgs, PluginArgs, UsageError};
use handler::McpTools;

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
            )
            .map_err(UsageError)?,
        ),
        None => None,
    };
    let loaded = args.plugins.load_all().await?;
    let registry = loaded.registry()?;
    if registry.is_empty() {
        tracing::warn!(
            "no tools to serve in {}; build plugins with plugins/build.sh or point --plugins elsewhere",
            args.plugins.plugins.display()
        );
    }
    let overrides = args.exec.overrides();
    match http {
        Some(options) => http::serve(options, registry, overrides).await?,
        None => serve_stdio(registry, overrides).await?,
    }
    // The plugins stay loaded until every connection is done.
    drop(loaded);
    Ok(ExitCode::SUCCESS)
}

/// One MCP connection on stdin/stdout (stdout is the protocol: logs go to
/// stderr), one plugin session, until the client closes stdin or a signal
/// arrives.
async fn serve_stdio(
    registry: Arc<toolhost::tools::ToolRegistry>,
    overrides: toolhost::tools::ExecOverrides,
) -> anyhow::Result<()> {
    tracing::info!("serving {} tools over MCP on stdio", registry.len());
    let service = McpTools::new(registry, overrides)
        .serve(rmcp::transport::stdio())
        .await
        .context("the MCP handshake on stdio failed (is an MCP client on the other end?)")?;
    let cancel = service.cancellation_token();
    tokio::select! {
        quit = service.waiting() => {
            let quit = quit.context("the MCP connection task failed")?;
            tracing::debug!("MCP connection ended: {quit:?}");
        }
        () = shutdown_signal() => {
            tracing::info!("signal received: closing the MCP connection");
            cancel.cancel();
        }
    }
    Ok(())
}

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
