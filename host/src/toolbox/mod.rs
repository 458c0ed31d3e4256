//! One entry point that assembles every tool a config and a plugin
//! directory declare into one registry: plugins (and `[[oci.plugins]]`
//! pulled from registries into the cache), `[[rest]]` and
//! `NAME.rest.toml` REST tools, `[[mcp]]` servers, components a program
//! holds as bytes, and native tools the program adds. Every `toolhost`
//! command builds its tools here; so can any program.
//!
//! ```no_run
//! use toolhost::config::HostConfig;
//! use toolhost::toolbox::Toolbox;
//! use toolhost::tools::NativeTool;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HostConfig::from_file("toolhost.toml".as_ref())?;
//! let toolbox = Toolbox::builder(config)
//!     .plugins("plugins")
//!     .native(NativeTool::new(
//!         "shout",
//!         "Upper-cases a text.",
//!         serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
//!         |input| async move { Ok(serde_json::json!(input["text"].as_str().unwrap_or("").to_uppercase())) },
//!     ))
//!     .build()
//!     .await?;
//! for error in toolbox.plugin_report().errors.iter() {
//!     eprintln!("skipped: {error}");
//! }
//! let cx = toolhost::tools::CallContext::default();
//! let answer = toolbox.registry().call("shout", serde_json::json!({"text": "hi"}), &cx).await.output?;
//! # Ok(()) }
//! ```

mod offers;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::HostConfig;
use crate::mcp::{McpDecl, McpError, McpRules, McpServer};
use crate::oci::OciError;
use crate::plugin::{
    DeferredReport, LoadObserver, LoadReport, Manifest, PluginError, PluginHost, PluginWatcher,
    WatchError,
};
use crate::sandbox::SandboxError;
use crate::telemetry::Metrics;
use crate::tools::rest::{self, RestDecl, RestError, RestLoadReport, RestPolicy, RestTool};
use crate::tools::{ExecOptions, Observability, RegistryError, Tool, ToolRegistry};

/// Why a toolbox could not be assembled. A broken plugin, a broken
/// `NAME.rest.toml` or an MCP server that is not up yet is *not* one of
/// these: each is reported ([`Toolbox::plugin_report`],
/// [`Toolbox::rest_report`], [`McpServer::summary`]) and the rest load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolboxError {
    /// The sandbox could not be set up from the config.
    #[error("cannot set up the sandbox")]
    Sandbox(#[source] SandboxError),
    /// The plugin directory cannot be listed.
    #[error("cannot load plugins from {}", path.display())]
    PluginDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: PluginError,
    },
    /// The REST tools' HTTP client could not be set up.
    #[error("cannot set up REST tools")]
    RestPolicy(#[source] RestError),
    /// A `[[rest]]` declaration of the config is invalid: the operator's
    /// own, so it stops the start (a `NAME.rest.toml` is only reported).
    #[error("in {}", config_place(file.as_deref()))]
    Rest {
        /// The config file, if the config came from one.
        file: Option<PathBuf>,
        /// What is wrong.
        #[source]
        source: RestError,
    },
    /// The REST declaration files of the plugin directory cannot be listed.
    #[error("cannot read REST declarations in {}", dir.display())]
    RestDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An `[[mcp]]` declaration of the config is invalid.
    #[error("in {}", config_place(file.as_deref()))]
    Mcp {
        /// The config file, if the config came from one.
        file: Option<PathBuf>,
        /// What is wrong.
        #[source]
        source: McpError,
    },
    /// Two tools want one name (a plugin's and a REST tool's, or a native
    /// tool's): the operator decides which one goes.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

fn config_place(file: Option<&Path>) -> String {
    match file {
        Some(path) => format!("host config {}", path.display()),
        None => "the host config".to_owned(),
    }
}

/// What [`Toolbox::builder`] assembles; see the [module docs](self).
#[must_use]
pub struct ToolboxBuilder {
    config: HostConfig,
    config_file: Option<PathBuf>,
    plugins: Option<PathBuf>,
    for_tool: Option<String>,
    components: Vec<(String, Vec<u8>, Manifest)>,
    native: Vec<(Arc<dyn Tool>, ExecOptions)>,
    observer: Option<LoadObserver>,
    observability: Observability,
    compile_later: bool,
    offers: Vec<offers::Add>,
}

impl std::fmt::Debug for ToolboxBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolboxBuilder")
            .field("config_file", &self.config_file)
            .field("plugins", &self.plugins)
            .field("for_tool", &self.for_tool)
            .field("components", &self.components.len())
            .field("native", &self.native.len())
            .finish_non_exhaustive()
    }
}

impl ToolboxBuilder {
    /// Name the file the config was read from, for messages (a REST tool's
    /// listing says where it was declared; an invalid declaration names
    /// the file).
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self
    }

    /// Load the plugins of this directory (every `NAME.wasm` with its
    /// `NAME.toml`, and every `NAME.rest.toml`), or this one `.wasm` file.
    pub fn plugins(mut self, path: impl Into<PathBuf>) -> Self {
        self.plugins = Some(path.into());
        self
    }

    /// For a process that calls `tool` and nothing else: a plugin directory
    /// may load only the plugin that owns it
    /// ([`PluginHost::load_dir_for_tool`]). The registry answers `tool` as
    /// a full load's would.
    pub fn for_tool(mut self, tool: impl Into<String>) -> Self {
        self.for_tool = Some(tool.into());
        self
    }

    /// Add the component `wasm` as plugin `name`, under `manifest`
    /// ([`PluginHost::load_bytes`]); a failure is reported with the
    /// plugin directory's.
    pub fn component(mut self, name: impl Into<String>, wasm: Vec<u8>, manifest: Manifest) -> Self {
        self.components.push((name.into(), wasm, manifest));
        self
    }

    /// Add a tool of the program's own (a [`NativeTool`](crate::tools::NativeTool)
    /// or any [`Tool`]), run with default [`ExecOptions`].
    pub fn native(self, tool: impl Tool) -> Self {
        self.native_with(Arc::new(tool), ExecOptions::default())
    }

    /// Add a tool of the program's own, run with `options`.
    pub fn native_with(mut self, tool: Arc<dyn Tool>, options: ExecOptions) -> Self {
        self.native.push((tool, options));
        self
    }

    /// Tell `observer` about loads (compiles, mostly): a progress line.
    pub fn observer(mut self, observer: LoadObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Record the registry's calls as `observability` says: a call log,
    /// metrics, how `execute_tool` spans are made. Metrics also read the
    /// instance pool and the `[[mcp]]` servers' state at each
    /// [`render`](Metrics::render), through a handle on the plugin host and
    /// on each server, as the toolbox holds them.
    pub fn observability(mut self, observability: Observability) -> Self {
        self.observability = observability;
        self
    }

    /// Leave the plugins of the directory whose compiled code is not in
    /// the compile cache for [`Toolbox::load_deferred`]: `build` then
    /// costs no compile, and a server can answer at once with the tools
    /// the cache knows, adding the others as they compile (see
    /// [`PluginHost::load_dir_compiled`]). Not with
    /// [`for_tool`](Self::for_tool), which loads one plugin anyway.
    pub fn compile_later(mut self) -> Self {
        self.compile_later = true;
        self
    }

    /// Load and start everything, and put every tool in one registry. The
    /// `[[mcp]]` servers are started together; each waits for its first
    /// connection, and one that is not up yet keeps trying in the
    /// background (its tools join the registry when it is).
    ///
    /// # Errors
    ///
    /// See [`ToolboxError`]: only what the operator or the program must
    /// fix; broken plugins are reported, not errors.
    pub async fn build(self) -> Result<Toolbox, ToolboxError> {
        let Self {
            config,
            config_file,
            plugins,
            for_tool,
            components,
            native,
            observer,
            observability,
            compile_later,
            offers,
        } = self;
        let rest_policy = RestPolicy::new(config.rest_rules()).map_err(ToolboxError::RestPolicy)?;
        let mcp_rules = config.mcp_rules();
        let rest_decls = config.rest.clone();
        let mcp_decls = config.mcp.clone();
        let (oci_found, oci_errors) =
            crate::oci::fetch_declared(&config.oci, config.cache_dir.as_deref(), &config.plugins)
                .await;
        let mut host = PluginHost::new(config).map_err(ToolboxError::Sandbox)?;
        if let Some(observer) = observer {
            host = host.with_observer(observer);
        }
        let dir = plugins.as_deref().filter(|p| !p.is_file());
        let (mut report, owned) = load_plugins(
            &host,
            plugins.as_deref(),
            for_tool,
            mcp_decls.is_empty(),
            compile_later,
        )
        .await?;
        let deferred = std::mem::take(&mut report.deferred);
        load_more_plugins(&host, &mut report, oci_found, components).await;
        let rest = load_rest(rest_decls, config_file.as_deref(), dir, &rest_policy)?;
        if let (Some(owned), Some(dir)) = (owned, dir)
            && rest
                .tools
                .iter()
                .any(|t| owned.binary_search(&t.spec().name).is_ok())
        {
            // A REST tool takes a name a plugin owns: that is an error only
            // the full load reports as it does.
            report = host
                .load_dir(dir)
                .await
                .map_err(|source| ToolboxError::PluginDir {
                    path: dir.to_owned(),
                    source,
                })?;
        }
        let mcp = start_mcp(mcp_decls, &mcp_rules, config_file.as_deref()).await?;
        let metrics = observability.call_metrics().cloned();
        let registry = Arc::new(ToolRegistry::new().observed(observability));
        register(&registry, &report, &rest, native)?;
        offers::add(&registry, offers);
        let mut refused = Vec::new();
        for server in &mcp {
            // Each refusal is also logged by the server, naming it.
            refused.extend(server.attach(&registry));
        }
        if let Some(metrics) = metrics {
            probe(&metrics, &host, &mcp);
        }
        Ok(Toolbox {
            host,
            registry,
            plugins: report,
            rest,
            mcp,
            refused,
            oci_errors,
            dir: dir.map(Path::to_owned),
            deferred: std::sync::Mutex::new(deferred),
        })
    }
}

/// Load into `report` the plugin files `[[oci]]` fetched (`oci_found`)
/// and the builder's in-memory `components`; each that fails to load is
/// reported, not an error.
async fn load_more_plugins(
    host: &PluginHost,
    report: &mut LoadReport,
    oci_found: Vec<PathBuf>,
    components: Vec<(String, Vec<u8>, Manifest)>,
) {
    for path in oci_found {
        // Checked by the integrity policy as any plugin file.
        match host.load_file(&path).await {
            Ok(plugin) => report.plugins.push(plugin),
            Err(e) => report.errors.push(e),
        }
    }
    for (name, wasm, manifest) in components {
        match host.load_bytes(&name, wasm, manifest).await {
            Ok(plugin) => report.plugins.push(plugin),
            Err(e) => report.errors.push(e),
        }
    }
}

/// The REST tools: those `[[rest]]` declares (`decls`, of `config_file`),
/// then the `NAME.rest.toml` files of the plugin directory `dir`, all held
/// to `policy`.
#[expect(
    clippy::result_large_err,
    reason = "the error is `build`'s own, passed on as is; boxing it here would only be undone there"
)]
fn load_rest(
    decls: Vec<RestDecl>,
    config_file: Option<&Path>,
    dir: Option<&Path>,
    policy: &RestPolicy,
) -> Result<RestLoadReport, ToolboxError> {
    let mut rest = RestLoadReport::default();
    for decl in decls {
        let mut tool = RestTool::new(decl, policy).map_err(|source| ToolboxError::Rest {
            file: config_file.map(Path::to_owned),
            source,
        })?;
        if let Some(path) = config_file {
            tool = tool.declared_in(path);
        }
        rest.tools.push(tool);
    }
    if let Some(dir) = dir {
        let found = rest::load_dir(dir, policy).map_err(|source| ToolboxError::RestDir {
            dir: dir.to_owned(),
            source,
        })?;
        rest.tools.extend(found.tools);
        rest.errors.extend(found.errors);
    }
    Ok(rest)
}

/// The `[[mcp]]` servers `decls` (of `config_file`) declares, held to
/// `rules`, started together: each waits for its first connection, and
/// one that is not up yet keeps trying in the background.
async fn start_mcp(
    decls: Vec<McpDecl>,
    rules: &McpRules,
    config_file: Option<&Path>,
) -> Result<Vec<McpServer>, ToolboxError> {
    let mut mcp = Vec::new();
    for decl in decls {
        let server = McpServer::new(decl, rules).map_err(|source| ToolboxError::Mcp {
            file: config_file.map(Path::to_owned),
            source,
        })?;
        mcp.push(server);
    }
    futures::future::join_all(mcp.iter().map(McpServer::start)).await;
    Ok(mcp)
}

/// Put the tools of the plugins (`report`), of `rest` and the `native`
/// ones in `registry`, in that order.
fn register(
    registry: &ToolRegistry,
    report: &LoadReport,
    rest: &RestLoadReport,
    native: Vec<(Arc<dyn Tool>, ExecOptions)>,
) -> Result<(), RegistryError> {
    report.register_into(registry)?;
    for tool in &rest.tools {
        tool.clone().register(registry)?;
    }
    for (tool, options) in native {
        registry.register_with(tool, options)?;
    }
    Ok(())
}

/// The plugins of `path` (a directory or one file), and, when only the
/// owner of `tool` was loaded, every tool name the directory owns.
async fn load_plugins(
    host: &PluginHost,
    path: Option<&Path>,
    tool: Option<String>,
    no_mcp: bool,
    compile_later: bool,
) -> Result<(LoadReport, Option<Vec<String>>), ToolboxError> {
    let Some(path) = path else {
        return Ok((LoadReport::default(), None));
    };
    let not_a_dir = |source| ToolboxError::PluginDir {
        path: path.to_owned(),
        source,
    };
    let compile_later = compile_later && tool.is_none();
    if path.is_file() {
        let mut report = LoadReport::default();
        if compile_later && !host.is_compiled(path) {
            report.deferred.push(path.to_owned());
            return Ok((report, None));
        }
        match host.load_file(path).await {
            Ok(p) => report.plugins.push(p),
            Err(e) => report.errors.push(e),
        }
        return Ok((report, None));
    }
    // An MCP server's tools are attached where no plugin owns the name:
    // that takes every plugin's tools.
    match tool.filter(|_| no_mcp) {
        Some(tool) => {
            let load = host
                .load_dir_for_tool(path, &tool)
                .await
                .map_err(not_a_dir)?;
            Ok((load.report, load.partial.then_some(load.owned)))
        }
        None if compile_later => Ok((host.load_dir_compiled(path).await.map_err(not_a_dir)?, None)),
        None => Ok((host.load_dir(path).await.map_err(not_a_dir)?, None)),
    }
}

/// Every tool a config and a plugin directory declare, in one registry,
/// and what loading them found. Holds the plugins' sandbox and the MCP
/// servers' connections: keep it while the tools run.
#[derive(Debug)]
pub struct Toolbox {
    host: PluginHost,
    registry: Arc<ToolRegistry>,
    plugins: LoadReport,
    rest: RestLoadReport,
    mcp: Vec<McpServer>,
    refused: Vec<RegistryError>,
    oci_errors: Vec<OciError>,
    dir: Option<PathBuf>,
    /// The plugins left to compile, until [`load_deferred`](Self::load_deferred) takes them.
    deferred: std::sync::Mutex<Vec<PathBuf>>,
}

impl Toolbox {
    /// Start assembling a toolbox under `config`.
    pub fn builder(config: HostConfig) -> ToolboxBuilder {
        ToolboxBuilder {
            config,
            config_file: None,
            plugins: None,
            for_tool: None,
            components: Vec::new(),
            native: Vec::new(),
            observer: None,
            observability: Observability::default(),
            compile_later: false,
            offers: Vec::new(),
        }
    }

    /// The registry with every tool. The MCP servers keep their tools in
    /// it current, and [`watch`](Self::watch) the plugins'.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The plugins left to compile ([`ToolboxBuilder::compile_later`]),
    /// until [`load_deferred`](Self::load_deferred) takes them.
    pub fn deferred(&self) -> Vec<PathBuf> {
        self.deferred
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Compile and load the plugins left for later, one at a time in
    /// file-name order, each one's tools joining the registry as it is
    /// ready (its change feed tells subscribers, an MCP server's clients
    /// included). The first call takes them all; a later one has none.
    /// Start [`watch`](Self::watch) after it, so that the watcher owns
    /// them too.
    pub async fn load_deferred(&self) -> DeferredReport {
        let files = std::mem::take(
            &mut *self
                .deferred
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        self.host.load_deferred(&files, &self.registry).await
    }

    /// The plugins' host (its config, its sandbox).
    pub fn host(&self) -> &PluginHost {
        &self.host
    }

    /// The plugins that loaded, and the files that did not.
    pub fn plugin_report(&self) -> &LoadReport {
        &self.plugins
    }

    /// The REST tools, and the declaration files that did not load.
    pub fn rest_report(&self) -> &RestLoadReport {
        &self.rest
    }

    /// The `[[mcp]]` servers, started (see [`McpServer::summary`] for
    /// whether each is up).
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp
    }

    /// The MCP servers' tools the registry refused (a name taken, a schema
    /// over budget), as of the assembly.
    pub fn refused(&self) -> &[RegistryError] {
        &self.refused
    }

    /// The `[[oci.plugins]]` that could not be fetched (neither from the
    /// registry nor from the cache); each is skipped, as a broken plugin
    /// file is. Those fetched load as plugin files (their failures are in
    /// [`plugin_report`](Self::plugin_report)).
    pub fn oci_errors(&self) -> &[OciError] {
        &self.oci_errors
    }

    /// Whether a plugin directory was given and held nothing to load: no
    /// plugin, no REST declaration, not even a broken one (likely the
    /// source tree rather than its build).
    pub fn found_nothing(&self) -> bool {
        self.dir.is_some()
            && self.plugins.plugins.is_empty()
            && self.plugins.errors.is_empty()
            && self.deferred().is_empty()
            && self.rest.tools.is_empty()
            && self.rest.errors.is_empty()
    }

    /// Hot reload: watch the plugin directory and apply every change to
    /// the registry (a plugin loaded, replaced or removed), waiting
    /// `debounce` for a burst of writes to settle. The watcher's events say
    /// what happened; the registry's change feed tells its subscribers.
    ///
    /// # Errors
    ///
    /// No plugin directory was given, or it cannot be watched.
    pub fn watch(&self, debounce: Duration) -> Result<PluginWatcher, WatchError> {
        let dir = self.dir.as_deref().ok_or(WatchError::NoDirectory)?;
        self.host.watch(dir, Arc::clone(&self.registry), debounce)
    }
}

/// Read the instance pool and the MCP servers' state into `metrics` at
/// each render.
fn probe(metrics: &Metrics, host: &PluginHost, mcp: &[McpServer]) {
    let host = host.clone();
    let servers = mcp.to_vec();
    metrics.probe(move |metrics| {
        metrics.set_instances(
            host.instance_slots_in_use() as u64,
            host.spare_instances() as u64,
        );
        for server in &servers {
            let summary = server.summary();
            let restarts = server.connection_attempts().saturating_sub(1);
            metrics.set_upstream(&summary.server, summary.down.is_none(), restarts);
        }
    });
}
