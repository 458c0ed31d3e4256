//! The `toolhost` command line: clap commands on the library's public API.
//! All logic lives in the library; this binary parses flags, reads the
//! environment, sets up logging and prints. Exit codes: 0 success, 1 a
//! tool call (or run) failed, 2 usage or configuration error.

mod call;
mod generation;
mod inspect;
mod list;
mod lock;
mod new;
mod oci;
mod offers;
mod progress;
mod run;
mod run_approval;
mod run_question;
mod search;
mod serve;
mod sign;
mod telemetry;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use toolhost::config::HostConfig;
use toolhost::egress::HttpOrigin;
use toolhost::environ::Environment;
use toolhost::telemetry::TelemetryConfig;
use toolhost::toolbox::{Toolbox, ToolboxError};
use toolhost::tools::Observability;

/// mimalloc, not the system allocator: a request to `serve` makes many
/// small allocations, often freed on another thread than the one that
/// made them (a span handed to the exporter's thread); mimalloc takes some
/// 7% off the server's CPU per call (docs/mcp.md, "Speed"). Built
/// without transparent huge pages (the workspace's `no_thp`): asked for
/// them, mimalloc backs every 2 MiB it touches with a whole huge page,
/// which cost `serve` a quarter of its memory after a run and doubled
/// the peak while compiling (docs/benchmarks.md, "Memory").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for a failed tool call or run.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for bad flags, config or plugin directory.
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Run LLM tools as sandboxed WebAssembly components"
)]
struct Cli {
    /// More log output (-v: debug, -vv: trace). TOOLHOST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every tool in a plugin directory.
    List(list::ListArgs),
    /// Search the tools for a request in words: the best matches, best first.
    Search(search::SearchArgs),
    /// Call one tool in the sandbox and print its output.
    Call(call::CallArgs),
    /// Show a component's imports, exports, manifest, limits, grants and cache state.
    Inspect(inspect::InspectArgs),
    /// Run the capped LLM tool loop on a prompt with the plugins' tools.
    Run(Box<run::RunArgs>),
    /// List the resources and resource templates the sources offer
    /// (`[[mcp]]` servers in the host config), one per line.
    Resources(offers::ResourcesArgs),
    /// Read a resource by URI: text to stdout, bytes to --out FILE.
    Read(offers::ReadArgs),
    /// List the prompts the sources offer, or print prompt NAME's messages
    /// (--arg KEY=VALUE for its arguments).
    Prompt(offers::PromptArgs),
    /// Complete a prompt's argument (--prompt NAME) or a resource template's
    /// variable (--template URI): the values that fit --value, one per line.
    Complete(offers::CompleteArgs),
    /// Serve every tool over MCP: stdio (default) or streamable HTTP (--http).
    Serve(serve::ServeArgs),
    /// Scaffold a plugin project (source, manifest, build.sh) in rust, python, js, c or go.
    New(new::NewArgs),
    /// Pin a plugin directory: write a lock file with the SHA-256 of every NAME.wasm and NAME.toml.
    Lock(lock::LockArgs),
    /// Make an Ed25519 key for signing plugins (secret key file 0600; public key printed).
    Keygen(sign::KeygenArgs),
    /// Sign a plugin component with your key: write NAME.wasm.sig.
    Sign(sign::SignArgs),
    /// Pull a plugin from an OCI registry into a plugin directory
    /// (component, manifest and signature; written atomically).
    Pull(oci::PullArgs),
    /// Push a plugin (NAME.wasm with its NAME.toml and NAME.wasm.sig) to an
    /// OCI registry, as a Wasm component artifact.
    Push(oci::PushArgs),
}

impl Command {
    /// The plugin and config flags, for a command that loads tools.
    fn plugin_args(&self) -> Option<&PluginArgs> {
        match self {
            Self::List(args) => Some(&args.plugins),
            Self::Search(args) => Some(&args.plugins),
            Self::Call(args) => Some(&args.plugins),
            Self::Inspect(args) => Some(&args.plugins),
            Self::Run(args) => Some(&args.plugins),
            Self::Resources(args) => Some(&args.plugins),
            Self::Read(args) => Some(&args.plugins),
            Self::Prompt(args) => Some(&args.plugins),
            Self::Complete(args) => Some(&args.plugins),
            Self::Serve(args) => Some(&args.plugins),
            _ => None,
        }
    }
}

/// Where plugins come from and what the operator allows them.
#[derive(Debug, Clone, Args)]
pub struct PluginArgs {
    /// Plugin directory (every NAME.wasm with its NAME.toml), or one .wasm file.
    #[arg(long, short = 'p', env = "TOOLHOST_PLUGINS", default_value = "plugins")]
    pub plugins: PathBuf,
    /// Host config (toolhost.toml): default and maximum limits, allowed grants,
    /// the cache directory. Default: $XDG_CONFIG_HOME/toolhost/toolhost.toml
    /// (~/.config/toolhost/toolhost.toml) if it exists. Never read from the
    /// current directory: a checkout must not widen its own grants.
    #[arg(long, env = "TOOLHOST_CONFIG")]
    pub config: Option<PathBuf>,
    /// Cache compiled components here. Default: $XDG_CACHE_HOME/toolhost or ~/.cache/toolhost.
    #[arg(long, env = "TOOLHOST_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every time; do not read or write the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Allow read-only directory grants inside DIR (repeatable).
    #[arg(long = "allow-dir", value_name = "DIR")]
    pub allow_dirs: Vec<PathBuf>,
    /// Allow read-write directory grants inside DIR (repeatable).
    #[arg(long = "allow-rw-dir", value_name = "DIR")]
    pub allow_rw_dirs: Vec<PathBuf>,
    /// Allow manifests to pass environment variable KEY through (repeatable).
    #[arg(long = "allow-env", value_name = "KEY")]
    pub allow_env: Vec<String>,
    /// Allow manifests to ask for HTTP origins within PATTERN, e.g.
    /// https://api.example.com or 'https://*.example.org:*' (repeatable).
    #[arg(long = "allow-http", value_name = "PATTERN")]
    pub allow_http: Vec<HttpOrigin>,
    /// Let granted HTTP requests reach loopback, private and link-local
    /// addresses (servers on this machine or the LAN).
    #[arg(long)]
    pub allow_http_private: bool,
    /// Do not trust the plugin directory itself for read-only grants.
    #[arg(long)]
    pub untrusted_plugin_dir: bool,
    /// Lock file (from `toolhost lock`): load only the plugins it pins, as
    /// pinned. Overrides `integrity.lock_file` in the host config; never
    /// read from the current or plugin directory unless named here.
    #[arg(long, env = "TOOLHOST_LOCK", value_name = "FILE")]
    pub lock: Option<PathBuf>,
}

/// Changes to every tool's execution options (`--tool-timeout`,
/// `--tool-retries`), for `run` and `call`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// An outer deadline for each tool call attempt, e.g. 500ms, 2s, 1m
    /// (a bare number is seconds). It never lengthens a plugin's own
    /// sandbox deadline: the smaller one ends the call.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub tool_timeout: Option<std::time::Duration>,
    /// Retry a tool call that failed transiently (timeout, busy,
    /// unavailable) up to N times, with exponential backoff.
    #[arg(long, value_name = "N")]
    pub tool_retries: Option<u32>,
}

impl ExecArgs {
    /// The overrides the flags describe.
    pub fn overrides(&self) -> toolhost::tools::ExecOverrides {
        toolhost::tools::ExecOverrides {
            timeout: self.tool_timeout,
            retries: self.tool_retries,
            ..Default::default()
        }
    }
}

/// A duration as a person writes it: `500ms`, `2s`, `1.5s`, `1m`, `1h`, or
/// a bare number of seconds.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. 500ms, 2s or 1m"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ms, s, m or h"
            ));
        }
    };
    std::time::Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{text}` is not a usable duration; give a positive one, e.g. 2s"))
}

/// A usage or configuration problem: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct UsageError(pub anyhow::Error);

impl PluginArgs {
    /// The host config: the file, then the flags on top.
    pub fn host_config(&self) -> anyhow::Result<HostConfig> {
        let path = self.config_file();
        let here = Path::new("toolhost.toml");
        if here.is_file() && path.as_deref().is_none_or(|p| !same_file(p, here)) {
            // Policy never comes from where the process happens to run: a
            // cloned repository could otherwise widen its own grants or
            // point the cache (native code) at a directory it controls.
            tracing::warn!(
                "ignoring ./toolhost.toml: the host config is read only from --config, \
                 TOOLHOST_CONFIG or {} (pass --config toolhost.toml to use this one)",
                user_config_file().map_or_else(
                    || "$XDG_CONFIG_HOME/toolhost/toolhost.toml".to_owned(),
                    |p| p.display().to_string()
                )
            );
        }
        let mut config = match &path {
            Some(path) => HostConfig::from_file(path)?,
            None => HostConfig::default(),
        };
        // The library never reads the environment: grants, REST headers
        // and MCP servers see this process's.
        config = config.environment(Environment::from_vars(std::env::vars()));
        lock::apply(&mut config, self.lock.as_deref());
        default_docker_config(&mut config);
        if self.no_cache {
            config.cache_dir = None;
        } else if let Some(dir) = self.cache_dir.clone() {
            config.cache_dir = Some(dir);
        } else if config.cache_dir.is_none() {
            config.cache_dir = default_cache_dir();
        }
        config.allow.dirs.extend(self.allow_dirs.iter().cloned());
        config
            .allow
            .rw_dirs
            .extend(self.allow_rw_dirs.iter().cloned());
        config.allow.env.extend(self.allow_env.iter().cloned());
        config.allow.http.extend(self.allow_http.iter().cloned());
        config.allow.http_private |= self.allow_http_private;
        if !self.untrusted_plugin_dir {
            // Whoever put a plugin and its manifest in this directory also
            // controls the data beside it; read-only grants there are theirs.
            config.allow.dirs.push(self.plugin_dir().to_owned());
        }
        Ok(config)
    }

    /// The host config file read: `--config`, else the user's if it exists.
    fn config_file(&self) -> Option<PathBuf> {
        match &self.config {
            Some(p) => Some(p.clone()),
            None => user_config_file().filter(|p| p.is_file()),
        }
    }

    /// Whether logging was turned down to errors (`-q`).
    fn quiet_progress(&self) -> bool {
        QUIET.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn plugin_dir(&self) -> &Path {
        if self.plugins.is_file() {
            self.plugins.parent().unwrap_or(Path::new("."))
        } else {
            &self.plugins
        }
    }

    /// Every tool the config and the plugin directory declare (see
    /// [`Toolbox`]). Broken plugins and REST files are reported on stderr
    /// and skipped; an MCP server that is not up yet is said so.
    pub async fn load_all(&self) -> anyhow::Result<Toolbox> {
        self.load_all_for(None).await
    }

    /// As [`load_all`](Self::load_all), for a process that calls `tool`
    /// and nothing else ([`ToolboxBuilder::for_tool`]).
    pub async fn load_all_for(&self, tool: Option<&str>) -> anyhow::Result<Toolbox> {
        self.load_observed(tool, false, |_| Observability::new())
            .await
    }

    /// As [`load_all_for`](Self::load_all_for), with the registry
    /// recording what `observe` makes of the telemetry config (a call log,
    /// metrics), and making its spans as that config says; with
    /// `compile_later`, plugins not in the compile cache are left for
    /// [`Toolbox::load_deferred`].
    pub async fn load_observed(
        &self,
        tool: Option<&str>,
        compile_later: bool,
        observe: impl FnOnce(&TelemetryConfig) -> Observability,
    ) -> anyhow::Result<Toolbox> {
        let config = self.host_config().map_err(UsageError)?;
        let mut observability = observe(&config.telemetry);
        if let Some(tracer) = telemetry::tracer() {
            observability = observability.tracer(tracer);
        }
        if config.telemetry.record_io_bytes > 0 {
            observability = observability.span_io(config.telemetry.record_io_bytes);
        }
        let mut builder = Toolbox::builder(config)
            .observability(observability)
            .plugins(&self.plugins)
            .observer(progress::observer(self.quiet_progress()));
        if let Some(file) = self.config_file() {
            builder = builder.config_file(file);
        }
        if let Some(tool) = tool {
            builder = builder.for_tool(tool);
        }
        if compile_later {
            builder = builder.compile_later();
        }
        let toolbox = builder.build().await.map_err(|e| match e {
            ToolboxError::PluginDir { source, .. } => {
                UsageError(anyhow::Error::new(source).context(list::no_plugin_hint(&self.plugins)))
            }
            e => UsageError(e.into()),
        })?;
        for error in &toolbox.plugin_report().errors {
            // The error may quote the plugin (a tool name it listed).
            tracing::warn!("skipped plugin: {}", ChainDisplay(error).escaped());
        }
        for error in toolbox.oci_errors() {
            tracing::warn!("skipped OCI plugin: {}", ChainDisplay(error).escaped());
        }
        for error in &toolbox.rest_report().errors {
            tracing::warn!("skipped REST tool: {}", ChainDisplay(error).escaped());
        }
        if toolbox.found_nothing() {
            // Every command: a directory with nothing in it is a mistake
            // (the source tree, not its build) worth saying, with where
            // the build likely is.
            tracing::warn!("{}", list::no_plugin_hint(&self.plugins));
        }
        for server in toolbox.mcp_servers() {
            if let Some(down) = server.summary().down {
                tracing::warn!(
                    "MCP server `{}` is not up yet ({}); its tools are missing until it is",
                    server.name(),
                    toolhost::text::escape_controls(&down)
                );
            }
        }
        Ok(toolbox)
    }
}

/// An error and its sources as one line, for logs and JSON.
#[derive(Debug)]
pub struct ChainDisplay<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ChainDisplay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

impl ChainDisplay<'_> {
    /// The chain for a log or terminal: control characters (a plugin's
    /// text may be quoted in it) written as escapes, except the line
    /// breaks of a multi-line cause (a TOML error's caret), whose lines
    /// are indented so none passes for a line of its own.
    pub fn escaped(&self) -> String {
        toolhost::text::escape_controls_indented(&self.to_string(), "    ").into_owned()
    }
}

impl std::error::Error for ChainDisplay<'_> {}

/// `$XDG_<var>` if it is an absolute path, else `~/<fallback>`, joined with
/// `toolhost` (the XDG base directory rules).
fn xdg_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let base = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home_dir().map(|h| h.join(fallback)))?;
    Some(base.join("toolhost"))
}

/// `$HOME`, else the user's home from the password database: MCP clients
/// and service managers start `toolhost serve` with a filtered
/// environment, sometimes without `HOME`, and the process must still find
/// the compile cache the user's shell filled (or it compiles every plugin
/// again before it can answer).
fn home_dir() -> Option<PathBuf> {
    std::env::home_dir().filter(|h| h.is_absolute())
}

/// Registry logins from the Docker config the user already has, unless the
/// host config names one: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`.
fn default_docker_config(config: &mut HostConfig) {
    if config.oci.docker_config.is_none() {
        config.oci.docker_config = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| home_dir().map(|h| h.join(".docker")))
            .map(|dir| dir.join("config.json"));
    }
}

fn default_cache_dir() -> Option<PathBuf> {
    xdg_dir("XDG_CACHE_HOME", ".cache")
}

/// The user's own host config: `$XDG_CONFIG_HOME/toolhost/toolhost.toml`.
fn user_config_file() -> Option<PathBuf> {
    Some(xdg_dir("XDG_CONFIG_HOME", ".config")?.join("toolhost.toml"))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn init_logging(
    verbose: u8,
    quiet: bool,
    telemetry: &toolhost::telemetry::TelemetryConfig,
) -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use tracing_subscriber::EnvFilter;
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn,toolhost=info",
        (false, 1) => "info,toolhost=debug",
        (false, _) => "debug,toolhost=trace",
    };
    let filter =
        EnvFilter::try_from_env("TOOLHOST_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // Colours only on a terminal: a pipe or a log file gets plain text, so
    // the only escape sequences in it would be ones a plugin smuggled in
    // (and those are escaped).
    use std::io::IsTerminal;
    telemetry::init(filter, std::io::stderr().is_terminal(), telemetry)
}

/// How long the CLI waits, once its command is done, for blocking work it
/// started to finish before it exits anyway.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Set once from `-q`, read by the progress display.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn main() -> ExitCode {
    let cli = Cli::parse();
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let settings = telemetry::settings(cli.command.plugin_args());
    let traces = init_logging(cli.verbose, cli.quiet, &settings);
    // A collector that accepts and never answers holds the exit at most
    // this long; `serve` promises to be gone within its grace period.
    let mut flush_bound = settings.shutdown_timeout();
    if let Command::Serve(args) = &cli.command {
        flush_bound = flush_bound.min(args.shutdown_grace);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::List(args) => list::run(args).await,
            Command::Search(args) => search::run(args).await,
            Command::Call(args) => call::run(args).await,
            Command::Inspect(args) => inspect::run(args).await,
            Command::Run(args) => run::run(*args).await,
            Command::Resources(args) => offers::resources(args).await,
            Command::Read(args) => offers::read(args).await,
            Command::Prompt(args) => offers::prompt(args).await,
            Command::Complete(args) => offers::complete(args).await,
            Command::Serve(args) => serve::run(args).await,
            Command::New(args) => new::run(args).await,
            Command::Lock(args) => lock::run(args).await,
            Command::Keygen(args) => sign::keygen(args).await,
            Command::Sign(args) => sign::sign(args).await,
            Command::Pull(args) => oci::pull(args).await,
            Command::Push(args) => oci::push(args).await,
        }
    });
    // Do not wait for blocking-pool threads: work still running there (a
    // read a guest started on a slow file) must not keep the process alive
    // after the command is done.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    // The last batch of spans goes out before the process ends.
    if let Some(traces) = traces
        && let Err(e) = traces.shutdown_with_timeout(flush_bound)
    {
        tracing::warn!("not every span was exported: {e}");
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            // A TOML error is several lines (the line, a caret under the
            // column): kept as lines, indented under `error:`.
            eprintln!(
                "error: {}",
                toolhost::text::escape_controls_indented(&format!("{e:#}"), "    ")
            );
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_FAILED)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_parse_as_people_write_them() {
        use std::time::Duration;
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2 fortnights").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
