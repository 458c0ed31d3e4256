//! `toolhost serve`: the tools as an MCP server, over stdio (the default)
//! or streamable HTTP (`--http ADDR`). See docs/mcp.md.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use toolhost::approval::ToolPattern;
use toolhost::mcp::server::{
    ConnectionBudgets, ServeError, ServerOptions, SessionBudgets, ToolServer,
};
use toolhost::plugin::{DEFAULT_DEBOUNCE, PluginWatcher, WatchEvent};
use toolhost::tasks::TaskHost;
use toolhost::telemetry::Metrics;
use toolhost::toolbox::Toolbox;
use toolhost::tools::Observability;

use super::{ChainDisplay, ExecArgs, PluginArgs, UsageError};

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub(crate) plugins: PluginArgs,
    #[command(flatten)]
    exec: ExecArgs,
    /// Serve MCP's streamable HTTP transport on ADDR (e.g. 127.0.0.1:8080;
    /// port 0 picks a free one) instead of stdio. The endpoint is /mcp;
    /// /healthz answers `ok`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Let --http bind an address other than loopback. Needs --token-env
    /// or an `[auth]` section in the host config (OAuth access tokens).
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
    /// Answer every request through rmcp, the fast lane off (it answers a
    /// plain tools/call without rmcp's per-request tasks): the same
    /// answers at more server CPU per call.
    #[arg(long)]
    no_fast_lane: bool,
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
    /// At most N MCP sessions from one client (one peer address; IPv6 by
    /// its /64) at once, so one client cannot take every session; default
    /// half of --max-sessions. Behind a reverse proxy (one address for
    /// everyone) set it to --max-sessions.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions_per_client: Option<NonZeroUsize>,
    /// End an MCP session (and its plugin session) after this long
    /// without a request.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "5m", requires = "http")]
    session_idle_timeout: Duration,
    /// After SIGTERM or Ctrl-C, let answers in flight finish for up to
    /// this long, then exit with whatever is still open (the export of the
    /// last trace spans waits at most this long too).
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, default_value = "10s", requires = "http")]
    pub(super) shutdown_grace: Duration,
    /// Do not watch the plugin directory. By default, adding, replacing or
    /// removing NAME.wasm / NAME.toml there updates the tools at once, and
    /// connected clients are told (notifications/tools/list_changed).
    #[arg(long)]
    no_watch: bool,
    /// Compile every plugin before answering anything, as `list` does. By
    /// default `serve` answers at once with the tools whose compiled code
    /// is in the compile cache, compiles the other plugins in the
    /// background, and adds their tools as each is ready (connected
    /// clients are told: notifications/tools/list_changed).
    #[arg(long)]
    wait_for_plugins: bool,
    /// List only the --always-list tools and one search tool,
    /// `tool_search` (input {"query", "limit"?}; it answers the found
    /// tools' names, descriptions and input schemas), for clients that
    /// choke on hundreds of tools. Every tool can still be called by name.
    #[arg(long)]
    tool_search: bool,
    /// With --tool-search, also list the tools PATTERN names (`*` stands
    /// for any run of characters; repeatable).
    #[arg(long = "always-list", value_name = "PATTERN", requires = "tool_search")]
    always_list: Vec<String>,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Check the flags before loading anything: a refused bind is a usage
    // error, found at once.
    let options = options(&args)?;
    let toolbox = args
        .plugins
        .load_observed(None, !args.wait_for_plugins, |telemetry| {
            match args.http.is_some() && telemetry.metrics {
                true => Observability::new().metrics(Metrics::new()),
                false => Observability::new(),
            }
        })
        .await?;
    say_cache(&toolbox);
    let mut options = options.approval(toolbox.host().config().approval.clone());
    // Calls that outlive a request, kept in the cache's task store (the
    // tasks its last process left running are failed, saying why).
    let config = toolbox.host().config();
    let tasks = TaskHost::open(config.tasks.clone(), config.cache_dir.as_deref()).context(
        "cannot open the task store; set [tasks] store in the host config to a writable file",
    )?;
    options = options.tasks(tasks);
    if let (Some(auth), Some(addr)) = (&toolbox.host().config().auth, args.http) {
        options = options.resource_server(auth.resource_server()?);
        if let Some(policy) = auth.policy()? {
            options = options.policy(policy);
        }
        options.check_http(addr).map_err(|e| UsageError(e.into()))?;
    }
    let registry = Arc::clone(toolbox.registry());
    if registry.is_empty() && toolbox.deferred().is_empty() {
        tracing::warn!(
            "serving no tools for now (see above); with hot reload on, plugins that appear in {} are served as they come",
            toolhost::text::escape_controls(&args.plugins.plugins.display().to_string())
        );
    }
    // Watched from here on: a file changed between the load above and
    // this point is picked up at its next change. With plugins left to
    // compile, the watcher starts once they have loaded (so that it owns
    // their tools too); made here first all the same, so that a directory
    // that cannot be watched is refused before serving.
    let deferred = toolbox.deferred();
    let watch = !args.no_watch && args.plugins.plugins.is_dir();
    let watcher = if watch {
        let watcher = toolbox.watch(DEFAULT_DEBOUNCE).map_err(|e| {
            UsageError(anyhow::Error::new(e).context("pass --no-watch to serve without hot reload"))
        })?;
        Some(watcher).filter(|_| deferred.is_empty())
    } else {
        None
    };
    say_deferred(&deferred);
    let telemetry = toolbox.host().config().telemetry.clone();
    let server = ToolServer::new(registry, options);
    let stop = shutdown_signal();
    let served = async move {
        match args.http {
            Some(addr) => {
                serve_http(
                    &server,
                    addr,
                    telemetry.metrics_addr,
                    args.shutdown_grace,
                    stop,
                )
                .await
            }
            None => server.serve_stdio(stop).await.map_err(anyhow::Error::from),
        }
    };
    let reloads = reloads(&toolbox, watcher, !deferred.is_empty(), watch);
    // The reload loop never ends by itself: serving decides when to stop.
    tokio::select! {
        served = served => served?,
        () = reloads => {}
    }
    // The plugins stay loaded until every connection is done.
    drop(toolbox);
    Ok(ExitCode::SUCCESS)
}

/// Say which compile cache this process uses. MCP clients start `serve`
/// with an environment of their own, so that a slow first start (every
/// plugin compiled again) can be traced to a cache other than the shell's
/// (docs/mcp.md, "Use it from Claude Desktop").
fn say_cache(toolbox: &Toolbox) {
    match &toolbox.host().config().cache_dir {
        Some(dir) => tracing::info!(
            "compile cache: {}",
            toolhost::text::escape_controls(&dir.display().to_string())
        ),
        None => tracing::warn!(
            "no compile cache (--no-cache, or no home directory to put it in): \
             every start compiles every plugin; pass --cache-dir DIR"
        ),
    }
}

/// Say which plugins (`deferred`) compile in the background, if any.
fn say_deferred(deferred: &[std::path::PathBuf]) {
    if !deferred.is_empty() {
        tracing::info!(
            "compiling {} plugin(s) in the background, not in the compile cache yet: {}; \
             their tools are added as each is ready",
            deferred.len(),
            deferred
                .iter()
                .map(|p| shown(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// Apply the plugin directory's changes to the tools for as long as the
/// server runs (never ends by itself). With plugins left to compile
/// (`deferred`), load them first, then start watching (when `watch`);
/// else with `watcher`, if any.
async fn reloads(toolbox: &Toolbox, watcher: Option<PluginWatcher>, deferred: bool, watch: bool) {
    let watcher = match watcher {
        Some(watcher) => Some(watcher),
        None if !deferred => None,
        None => {
            load_deferred(toolbox).await;
            watch
                .then(|| toolbox.watch(DEFAULT_DEBOUNCE))
                .and_then(|made| {
                    made.map_err(|e| {
                        tracing::warn!("hot reload is off: {}", ChainDisplay(&e).escaped());
                    })
                    .ok()
                })
        }
    };
    reload(watcher).await;
}

/// The server's options from the flags; the token read from the
/// environment.
fn options(args: &ServeArgs) -> anyhow::Result<ServerOptions> {
    let mut connections = ConnectionBudgets::default();
    connections.max_connections = args.max_connections.get();
    connections.header_timeout = args.header_timeout;
    connections.body_timeout = args.body_timeout;
    connections.idle_timeout = args.idle_timeout;
    connections.shutdown_grace = args.shutdown_grace;
    let mut sessions = SessionBudgets::default();
    sessions.max_sessions = args.max_sessions.get();
    sessions.idle_timeout = args.session_idle_timeout;
    sessions.max_sessions_per_client = args.max_sessions_per_client.map(NonZeroUsize::get);
    let mut options = ServerOptions::new()
        .exec_overrides(args.exec.overrides())
        .stateless(args.stateless)
        .fast_lane(!args.no_fast_lane)
        .connection_budgets(connections)
        .session_budgets(sessions)
        .allow_remote(args.allow_remote);
    if args.tool_search {
        let always = args
            .always_list
            .iter()
            .map(|p| {
                ToolPattern::new(p.as_str())
                    .map_err(|e| UsageError(anyhow::anyhow!("--always-list {p:?}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        options = options.tool_search(always);
    }
    for host in &args.allow_hosts {
        options = options.allow_host(host.clone());
    }
    for origin in &args.allow_origins {
        options = options.allow_origin(origin.clone());
    }
    if let Some(var) = &args.token_env {
        let token = std::env::var(var).map_err(|_| {
            UsageError(anyhow::anyhow!(
                "--token-env {var}: environment variable {var} is not set (or not UTF-8); set it to the bearer token clients must send"
            ))
        })?;
        if token.trim().is_empty() {
            return Err(UsageError(anyhow::anyhow!(
                "--token-env {var}: environment variable {var} is empty; set it to a long random token"
            ))
            .into());
        }
        options = options.bearer_token(token);
    }
    // With --allow-remote and no token, an `[auth]` section of the host
    // config may be what lets the bind through: checked once it is read.
    if let Some(addr) = args.http
        && (!args.allow_remote || args.token_env.is_some())
    {
        options.check_http(addr).map_err(|e| UsageError(e.into()))?;
    }
    Ok(options)
}

/// Serve HTTP until SIGTERM or Ctrl-C, then let answers in flight finish
/// (up to `grace`).
async fn serve_http(
    server: &ToolServer,
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    grace: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let refused = |e: ServeError| match e {
        ServeError::Bind { .. } | ServeError::NotLoopback { .. } | ServeError::BlankToken => {
            anyhow::Error::from(UsageError(e.into()))
        }
        e => anyhow::Error::from(e).context("cannot serve MCP over HTTP"),
    };
    let http = server.serve_http(addr).await.map_err(refused)?;
    // On stderr, always (also with -q): scripts and tests read the port.
    eprintln!("toolhost serve: listening on {}", http.url());
    let metrics = match metrics_addr {
        Some(addr) if server.registry().metrics().is_some() => {
            let metrics = server.serve_metrics(addr).await.map_err(refused)?;
            eprintln!(
                "toolhost serve: metrics on http://{}/metrics",
                metrics.local_addr()
            );
            Some(metrics)
        }
        _ => None,
    };
    stop.await;
    tracing::info!(
        "signal received: finishing answers in flight (up to {}s)",
        grace.as_secs_f64()
    );
    http.shutdown().await;
    if let Some(metrics) = metrics {
        metrics.shutdown().await;
    }
    Ok(())
}

/// Apply every change in the plugin directory and log it (the registry's
/// change feed tells the clients). Never returns while watching.
async fn reload(watcher: Option<PluginWatcher>) {
    let Some(mut watcher) = watcher else {
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
    }
    tracing::warn!("the plugin directory watcher stopped; restart to pick up changes");
    std::future::pending().await
}

/// Compile and add the plugins left for later, saying what each did.
async fn load_deferred(toolbox: &Toolbox) {
    let report = toolbox.load_deferred().await;
    for plugin in &report.plugins {
        tracing::info!(
            "loaded plugin {} ({} tools)",
            shown(plugin.path()),
            plugin.tool_specs().len()
        );
    }
    for error in &report.errors {
        tracing::warn!("skipped plugin: {}", ChainDisplay(error).escaped());
    }
    for lost in &report.displaced {
        tracing::warn!("{}", ChainDisplay(lost).escaped());
    }
}

/// A file name fit for a log line (anyone who can write the directory
/// picks it).
fn shown(path: &std::path::Path) -> String {
    toolhost::text::untrusted(&path.display().to_string(), 1024)
}

/// Ctrl-C or SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled: call it before the server says it is
/// listening, so that a signal sent the moment a client (or a supervisor)
/// sees the address stops the server gracefully instead of killing it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            match (term, interrupt) {
                (Ok(mut term), Ok(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Ok(mut only), Err(_)) | (Err(_), Ok(mut only)) => {
                    only.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending::<()>().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
