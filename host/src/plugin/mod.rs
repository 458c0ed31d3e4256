//! Plugins: `*.wasm` components in a directory, each with an optional
//! sidecar manifest, turned into [`Tool`](crate::tools::Tool)s.
//!
//! Loading a directory never fails because of one bad plugin: each file is
//! loaded on its own, and the [`LoadReport`] lists what loaded and what did
//! not, with the file and the reason.

mod catalog;
mod inspect;
pub mod integrity;
mod loaded;
mod manifest;
mod plan;
mod session;
mod watch;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use wasmtime::component::Component;

pub use inspect::Inspection;
pub use loaded::{ComponentInterface, Plugin, WasmTool};
pub use manifest::{
    Allow, DirSpec, ExecSpec, HostConfig, HostLimits, LimitsSpec, Manifest, PermissionsSpec,
    PluginBudget,
};
pub use plan::ToolLoad;
pub use watch::{DEFAULT_DEBOUNCE, PluginWatcher, ReloadError, WatchError, WatchEvent};

use integrity::ManifestState;

use crate::fsread::read_regular;
use crate::sandbox::{
    CacheStatus, DirGrant, EnvVar, FileStamp, Guest, Limits, Permissions, PluginIdentity, Sandbox,
    SandboxConfig, SandboxError,
};
use crate::text;
use crate::tools::{SchemaBudget, ToolRegistry, ToolSpec, check_schema, is_valid_tool_name};

/// Why a plugin (or a plugin directory) did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The directory cannot be listed.
    #[error("cannot read plugin directory {}: {error}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// Why (part of the message).
        error: std::io::Error,
    },
    /// A file cannot be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (part of the message).
        error: std::io::Error,
    },
    /// The manifest is not valid TOML of the documented shape.
    #[error("{}: invalid manifest: {message}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The manifest asks for more than the operator allows. Refused, not
    /// trimmed: a plugin that silently gets less than it asked for fails in
    /// confusing ways later.
    #[error("{}: the manifest asks for more than this host allows: {message}", path.display())]
    NotAllowed {
        /// The manifest file.
        path: PathBuf,
        /// What was asked and what is allowed.
        message: String,
    },
    /// The file is not a component of the `toolhost:plugin` world.
    #[error("{}: could not load the component: {error:#}", path.display())]
    Component {
        /// The `.wasm` file.
        path: PathBuf,
        /// Why (part of the message).
        error: SandboxError,
    },
    /// The component's `describe` failed or returned something unusable.
    #[error("{}: {message}", path.display())]
    Describe {
        /// The `.wasm` file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The component is not one the integrity policy (a manifest pin, the
    /// lock file, signatures) lets this host run: refused before compiling.
    #[error("{}: refused: {error}", path.display())]
    Integrity {
        /// The `.wasm` file.
        path: PathBuf,
        /// What did not match (part of the message).
        error: Box<integrity::IntegrityError>,
    },
    /// Two plugins export the same tool name.
    #[error(
        "tool `{name}` is exported by both {} and {}; the second was not loaded: rename the tool in one of them",
        first.display(), second.display()
    )]
    DuplicateTool {
        /// The contested tool name.
        name: String,
        /// The plugin that keeps it.
        first: PathBuf,
        /// The plugin that was refused.
        second: PathBuf,
    },
}

impl PluginError {
    /// The file this error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::ReadDir { path, .. }
            | Self::Read { path, .. }
            | Self::Manifest { path, .. }
            | Self::NotAllowed { path, .. }
            | Self::Component { path, .. }
            | Self::Describe { path, .. }
            | Self::Integrity { path, .. } => path,
            Self::DuplicateTool { second, .. } => second,
        }
    }
}

/// What happens while a plugin loads, for progress displays: compiling a
/// big component (a Python or JavaScript interpreter) takes seconds, once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadEvent {
    /// Compilation started (the component was not in the cache).
    Compiling {
        /// The plugin's name.
        plugin: String,
        /// The component's size.
        bytes: usize,
    },
    /// Compilation ended, successfully or not.
    Compiled {
        /// The plugin's name.
        plugin: String,
        /// How long it took.
        elapsed: Duration,
    },
}

/// Receives [`LoadEvent`]s.
pub type LoadObserver = Arc<dyn Fn(&LoadEvent) + Send + Sync>;

/// Loads plugins into one shared sandbox (one WebAssembly engine, one
/// compile cache, one pool of instances) under one operator [`HostConfig`].
#[derive(Clone)]
pub struct PluginHost {
    sandbox: Sandbox,
    config: Arc<HostConfig>,
    /// `config.integrity`, its lock file read once.
    integrity: Arc<integrity::Integrity>,
    /// `config.max_sessions`, shared by every plugin this host loads.
    session_cap: Arc<session::SessionCap>,
    /// `config.limits`, checked and converted once.
    defaults: Limits,
    ceiling: Limits,
    observer: Option<LoadObserver>,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What loading a directory produced.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Plugins that loaded, sorted by file name.
    pub plugins: Vec<Arc<Plugin>>,
    /// Files that did not load, and why.
    pub errors: Vec<PluginError>,
}

impl LoadReport {
    /// Register every loaded plugin's tools.
    ///
    /// # Errors
    ///
    /// A tool name already taken in `registry` (names are unique within a
    /// report already).
    pub fn register_into(
        &self,
        registry: &ToolRegistry,
    ) -> Result<(), crate::tools::RegistryError> {
        for plugin in &self.plugins {
            for tool in plugin.tools() {
                registry.register_with(Arc::new(tool), plugin.exec_options().clone())?;
            }
        }
        Ok(())
    }

    /// A registry with every loaded plugin's tools.
    ///
    /// # Errors
    ///
    /// A tool could not be registered. Names are unique within a report and
    /// schemas were checked at load, so this means the two disagree: it is
    /// returned, never a registry missing some tools.
    pub fn registry(&self) -> Result<ToolRegistry, crate::tools::RegistryError> {
        let registry = ToolRegistry::new();
        self.register_into(&registry)?;
        Ok(registry)
    }
}

impl PluginHost {
    /// A host with its own sandbox.
    ///
    /// # Errors
    ///
    /// The sandbox could not be set up.
    pub fn new(config: HostConfig) -> Result<Self, SandboxError> {
        let invalid = |e: crate::sandbox::LimitError| SandboxError::Config(e.to_string());
        let defaults = config.limits.default_limits().map_err(invalid)?;
        let ceiling = config.limits.ceiling().map_err(invalid)?;
        if config.spare_instances > config.max_instances {
            return Err(SandboxError::Config(format!(
                "`spare_instances` = {} is more than `max_instances` = {}; lower it",
                config.spare_instances, config.max_instances
            )));
        }
        if let Some(max) = config.max_sessions
            && (max == 0 || max > config.max_instances)
        {
            return Err(SandboxError::Config(format!(
                "`max_sessions` = {max} must be between 1 and `max_instances` = {}; change it",
                config.max_instances
            )));
        }
        let integrity =
            integrity::Integrity::new(&config.integrity).map_err(SandboxError::Config)?;
        let session_cap = session::SessionCap::new(config.effective_max_sessions() as usize);
        let sandbox = Sandbox::new(&SandboxConfig {
            cache_dir: config.cache_dir.clone(),
            max_instances: config.max_instances,
            max_memory_bytes: ceiling.memory_bytes,
            memory_init: config.memory_init,
        })?;
        Ok(Self {
            sandbox,
            config: Arc::new(config),
            integrity: Arc::new(integrity),
            session_cap,
            defaults,
            ceiling,
            observer: None,
        })
    }

    /// Report [`LoadEvent`]s to `observer` (a progress bar, a log).
    pub fn with_observer(mut self, observer: LoadObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The operator config in force.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// How many sessions of stateful plugins are live across this host
    /// (at most [`HostConfig::effective_max_sessions`]).
    pub fn live_sessions(&self) -> usize {
        self.session_cap.live()
    }

    /// Load every `*.wasm` in `dir` (not recursive), in file-name order.
    ///
    /// # Errors
    ///
    /// Only when `dir` cannot be listed; a bad plugin is reported in
    /// [`LoadReport::errors`] and the others still load.
    pub async fn load_dir(&self, dir: &Path) -> Result<LoadReport, PluginError> {
        let read_dir = |error| PluginError::ReadDir {
            path: dir.to_owned(),
            error,
        };
        let files = component_files(dir).map_err(read_dir)?;
        // Plugins load side by side, one per core: most of a load is reading
        // and mapping compiled code or compiling it, on blocking threads.
        // Results still come back in file-name order, so which of two
        // plugins offering the same tool name loses does not depend on timing.
        let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut loads = futures::stream::iter(files)
            .map(|path| async move {
                let loaded = self.load_file(&path).await;
                (path, loaded)
            })
            .buffered(parallel);
        let mut report = LoadReport::default();
        let mut claims = Claims::default();
        while let Some((path, loaded)) = loads.next().await {
            match loaded.and_then(|plugin| {
                claims.claim(&path, plugin.tool_specs())?;
                Ok(plugin)
            }) {
                Ok(plugin) => report.plugins.push(plugin),
                Err(e) => report.errors.push(e),
            }
        }
        Ok(report)
    }

    /// Load one plugin file, with the manifest beside it if there is one.
    ///
    /// # Errors
    ///
    /// The file or manifest cannot be read or is invalid, the manifest asks
    /// for more than allowed, or the component does not work.
    pub async fn load_file(&self, path: &Path) -> Result<Arc<Plugin>, PluginError> {
        // The manifest first: a refused grant costs no compile.
        let settings = self.settings(path)?;
        let compiled = self
            .compile_file(path, ManifestState::of(Some(&settings)))
            .await?;
        let (component, cache) = compiled.result.map_err(|error| PluginError::Component {
            path: path.to_owned(),
            error,
        })?;
        self.instantiate(path, settings, compiled.digest, &component, cache)
            .await
    }

    /// The manifest beside the component at `path`, checked against the
    /// operator's config.
    fn settings(&self, path: &Path) -> Result<Settings, PluginError> {
        let (manifest, manifest_path, manifest_sha256) = read_manifest(path, &self.config.plugins)?;
        let resolved = self.resolve(&manifest, manifest_path.as_deref().unwrap_or(path))?;
        Ok(Settings {
            manifest,
            manifest_path,
            manifest_sha256,
            resolved,
        })
    }

    /// Read the component at `path`, check those bytes against the
    /// integrity policy (with what is known of its `manifest`), hash them
    /// and compile them (or load them from the cache). Only reading or
    /// refusing it is an `Err` here; whether it compiled is in
    /// [`Compiled::result`].
    async fn compile_file(
        &self,
        path: &Path,
        manifest: ManifestState,
    ) -> Result<Compiled, PluginError> {
        // Reading, hashing and loading (or compiling) the component all
        // block, so they run off the executor, in one hop.
        let budget = self.config.plugins;
        let sandbox = self.sandbox.clone();
        let observer = self.observer.clone();
        let integrity = self.integrity.clone();
        let (file, plugin) = (path.to_owned(), plugin_name(path));
        let compiled = tokio::task::spawn_blocking(move || {
            let max = budget.max_component_mb.saturating_mul(1 << 20);
            // Taken before the read: what the file was when its bytes were hashed.
            let stamp = FileStamp::of(&file);
            let known = stamp
                .as_ref()
                .and_then(|stamp| sandbox.known_digest(&file, stamp));
            // An unchanged file whose compiled code is cached is neither
            // read nor hashed again, unless the integrity policy has bytes
            // to check.
            if let (Some(stamp), Some(digest)) = (&stamp, known)
                && stamp.size() <= max
                && !integrity.needs_bytes(manifest)
                && let Some(component) = sandbox.cached(&digest)
            {
                return Ok(Compiled {
                    digest,
                    cache_entry: sandbox.cache_entry(&digest),
                    cached_before: true,
                    result: Ok((component, CacheStatus::Hit)),
                });
            }
            let wasm = read_regular(&file, max, "plugins.max_component_mb").map_err(|error| {
                PluginError::Read {
                    path: file.clone(),
                    error,
                }
            })?;
            // These bytes, and no second read of the file, are what is
            // checked and then compiled; a refused component is not compiled.
            integrity
                .check(&file, &wasm, manifest, budget.max_manifest_bytes)
                .map_err(|error| PluginError::Integrity {
                    path: file.clone(),
                    error: Box::new(error),
                })?;
            let digest = Sandbox::digest(&wasm);
            if let Some(stamp) = &stamp
                && known != Some(digest)
            {
                sandbox.remember_digest(&file, stamp, &digest);
            }
            let cache_entry = sandbox.cache_entry(&digest);
            let cached_before = cache_entry.as_ref().is_some_and(|entry| entry.exists());
            let started = std::time::Instant::now();
            if !cached_before {
                let bytes = wasm.len();
                let event = LoadEvent::Compiling {
                    plugin: plugin.clone(),
                    bytes,
                };
                emit(observer.as_ref(), event);
            }
            let result = sandbox.compile(&wasm, &digest);
            if !cached_before {
                let elapsed = started.elapsed();
                emit(observer.as_ref(), LoadEvent::Compiled { plugin, elapsed });
            }
            Ok(Compiled {
                digest,
                cache_entry,
                cached_before,
                result,
            })
        })
        .await;
        compiled.map_err(|e| PluginError::Describe {
            path: path.to_owned(),
            message: format!("the compiler thread failed: {e}"),
        })?
    }

    /// Link a compiled component under its checked manifest and learn its
    /// tools: from the cache when remembered, else from its `describe`.
    async fn instantiate(
        &self,
        path: &Path,
        settings: Settings,
        digest: blake3::Hash,
        component: &Component,
        cache: CacheStatus,
    ) -> Result<Arc<Plugin>, PluginError> {
        let Settings {
            manifest,
            manifest_path,
            manifest_sha256,
            resolved,
        } = settings;
        let name = plugin_name(path);
        let inputs = catalog::inputs_key(&manifest.config, &resolved.limits, &resolved.permissions);
        let identity = Arc::new(PluginIdentity {
            name: name.clone(),
            config: manifest.config.clone(),
        });
        let guest = self
            .sandbox
            .prepare(
                component,
                identity,
                resolved.limits,
                resolved.permissions,
                self.config.spare_instances as usize,
            )
            .map_err(|error| PluginError::Component {
                path: path.to_owned(),
                error,
            })?;
        let remembered = inputs
            .as_deref()
            .and_then(|key| catalog::recall(&self.sandbox, &digest, key, &self.config.plugins));
        let tools_from_cache = remembered.is_some();
        let tools = match remembered {
            Some(tools) => tools,
            None => {
                let tools = describe(&guest, path, &self.config.plugins).await?;
                if let Some(key) = inputs {
                    catalog::remember(&self.sandbox, &digest, key, &tools, guest.slots());
                }
                tools
            }
        };
        let idle_ttl = Duration::from_secs(
            manifest
                .session
                .idle_ttl_secs
                .unwrap_or(self.config.session_idle_ttl_secs),
        );
        Ok(Arc::new(Plugin {
            name,
            path: path.to_owned(),
            manifest_path,
            digest,
            manifest_sha256,
            stateful: manifest.stateful,
            version: manifest.version.clone(),
            exec: resolved.exec.clone(),
            cache,
            tools,
            tools_from_cache,
            interface: ComponentInterface::of(component, self.sandbox.engine()),
            sessions: session::Sessions::new(idle_ttl, Arc::clone(&self.session_cap)),
            guest,
        }))
    }

    /// Check a manifest against the operator's config and resolve its paths.
    fn resolve(&self, manifest: &Manifest, manifest_path: &Path) -> Result<Resolved, PluginError> {
        let not_allowed = |message: String| PluginError::NotAllowed {
            path: manifest_path.to_owned(),
            message,
        };
        let limits =
            manifest
                .limits
                .apply_to(self.defaults)
                .map_err(|e| PluginError::Manifest {
                    path: manifest_path.to_owned(),
                    message: format!("[limits] {e}; lower it"),
                })?;
        limits
            .check_ceiling(&self.ceiling)
            .map_err(|over| not_allowed(over.to_string()))?;
        let allow = &self.config.allow;
        let mut env = Vec::new();
        for key in &manifest.permissions.env {
            if !allow.env.contains(key) {
                return Err(not_allowed(format!(
                    "environment variable `{key}` is not allowed; add it to `allow.env` in the host config (or pass --allow-env {key})"
                )));
            }
            // The grant is the operator's explicit decision to pass this
            // variable through: with the value the embedder gave, else the
            // process's; an unset variable is simply absent.
            let given = allow.env_values.iter().find(|v| v.name() == key);
            if let Some(var) = given {
                env.push(var.clone());
            } else if let Ok(value) = std::env::var(key) {
                env.push(EnvVar::new(key.clone(), value));
            }
        }
        let base = manifest_path.parent().unwrap_or(Path::new("."));
        let mut dirs = Vec::new();
        for dir in &manifest.permissions.dirs {
            let wanted = base.join(&dir.host);
            let host = wanted.canonicalize().map_err(|e| PluginError::Manifest {
                path: manifest_path.to_owned(),
                message: format!(
                    "granted directory {} cannot be opened: {e}",
                    wanted.display()
                ),
            })?;
            if !host.is_dir() {
                return Err(PluginError::Manifest {
                    path: manifest_path.to_owned(),
                    message: format!("granted path {} is not a directory", host.display()),
                });
            }
            if !dir.guest.starts_with('/') {
                return Err(PluginError::Manifest {
                    path: manifest_path.to_owned(),
                    message: format!("guest path `{}` must be absolute, like `/data`", dir.guest),
                });
            }
            let roots: Vec<&PathBuf> = if dir.rw {
                allow.rw_dirs.iter().collect()
            } else {
                allow.dirs.iter().chain(&allow.rw_dirs).collect()
            };
            let inside = roots
                .iter()
                .any(|root| root.canonicalize().is_ok_and(|root| host.starts_with(root)));
            if !inside {
                let (mode, key, flag) = if dir.rw {
                    ("read-write", "allow.rw_dirs", "--allow-rw-dir")
                } else {
                    ("read-only", "allow.dirs", "--allow-dir")
                };
                return Err(not_allowed(format!(
                    "{mode} access to {} is not allowed; add it (or a parent) to `{key}` in the host config, or pass {flag}",
                    host.display()
                )));
            }
            // Opened now, and every call maps this very directory: a
            // symlink swapped in later cannot widen the grant.
            let grant = DirGrant::open(host, dir.guest.clone(), dir.rw).map_err(|e| {
                PluginError::Manifest {
                    path: manifest_path.to_owned(),
                    message: format!("granted directory cannot be opened: {e}"),
                }
            })?;
            dirs.push(grant);
        }
        let http = allow
            .http_grant(&manifest.permissions.http)
            .map_err(not_allowed)?;
        let manifest_error = |message: String| PluginError::Manifest {
            path: manifest_path.to_owned(),
            message,
        };
        let exec = manifest.exec.options().map_err(manifest_error)?;
        if let Some(version) = &manifest.version
            && !crate::tools::is_valid_version(version)
        {
            return Err(manifest_error(format!(
                "version = {:?} is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `.`, `_`, `-` and `+`, e.g. \"1.2.0\"",
                crate::text::clip(version, 80)
            )));
        }
        Ok(Resolved {
            limits,
            permissions: Permissions { dirs, env, http },
            exec,
        })
    }
}

/// Who owns each tool name in a directory: the first plugin, in file-name
/// order, that loads and offers it. A plugin offering a name already owned
/// is refused whole. One rule for a full load and for finding the owner of
/// one tool (`plan`).
#[derive(Debug, Default)]
struct Claims(HashMap<String, PathBuf>);

impl Claims {
    /// Give the plugin at `path` its tools' names, or say which is taken.
    fn claim(&mut self, path: &Path, tools: &[ToolSpec]) -> Result<(), PluginError> {
        if let Some((name, first)) = tools
            .iter()
            .find_map(|t| self.0.get(&t.name).map(|first| (&t.name, first)))
        {
            return Err(PluginError::DuplicateTool {
                name: name.clone(),
                first: first.clone(),
                second: path.to_owned(),
            });
        }
        for t in tools {
            self.0.insert(t.name.clone(), path.to_owned());
        }
        Ok(())
    }
}

struct Resolved {
    limits: Limits,
    permissions: Permissions,
    exec: crate::tools::ExecOptions,
}

/// A plugin's manifest, read and checked against the operator's config.
struct Settings {
    manifest: Manifest,
    manifest_path: Option<PathBuf>,
    /// The SHA-256 of the manifest's bytes as read and parsed.
    manifest_sha256: Option<integrity::Sha256Digest>,
    resolved: Resolved,
}

/// A component file read, hashed, and compiled or loaded from the cache.
struct Compiled {
    digest: blake3::Hash,
    /// Where its compiled code is cached; `None` when caching is off.
    cache_entry: Option<PathBuf>,
    /// Whether the cache held it before this load.
    cached_before: bool,
    /// The component, or why it is not one this host can load.
    result: Result<(Component, CacheStatus), SandboxError>,
}

/// A plugin's name: its file stem.
fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin")
        .to_owned()
}

/// The manifest beside `wasm` (`NAME.toml`), or the default one, with the
/// SHA-256 of the bytes parsed.
fn read_manifest(
    wasm: &Path,
    budget: &PluginBudget,
) -> Result<(Manifest, Option<PathBuf>, Option<integrity::Sha256Digest>), PluginError> {
    let path = wasm.with_extension("toml");
    let bytes = match read_regular(
        &path,
        budget.max_manifest_bytes,
        "plugins.max_manifest_bytes",
    ) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Manifest::default(), None, None));
        }
        Err(error) => return Err(PluginError::Read { path, error }),
    };
    // Lines kept: a TOML error points at its column on the line below.
    let invalid = |message: String| PluginError::Manifest {
        path: path.clone(),
        message: text::untrusted_lines(&message, 1024),
    };
    let digest = integrity::Sha256Digest::of(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8 text".into()))?;
    let manifest = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    Ok((manifest, Some(path), Some(digest)))
}

/// The plugin components in `dir` (every `*.wasm` file, not recursive), in
/// file-name order: what [`PluginHost::load_dir`] loads and `toolhost
/// lock` pins.
fn component_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Whether `tools` is a tool list this host accepts from a plugin: at least
/// one tool and at most `plugins.max_tools`, valid unique names,
/// descriptions and schemas within their budgets. The same rule for a
/// fresh `describe` answer and for one remembered in the cache.
pub(crate) fn check_tools(tools: &[ToolSpec], budget: &PluginBudget) -> Result<(), String> {
    if tools.is_empty() {
        return Err("describe() lists no tools".into());
    }
    if tools.len() > budget.max_tools {
        return Err(format!(
            "describe() lists {} tools, more than the {} allowed; split the plugin, or raise `plugins.max_tools` in the host config",
            tools.len(),
            budget.max_tools
        ));
    }
    let mut names = HashSet::with_capacity(tools.len());
    for tool in tools {
        let shown = text::untrusted(&tool.name, 80);
        if !is_valid_tool_name(&tool.name) {
            return Err(format!(
                "tool name `{shown}` is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`"
            ));
        }
        if !names.insert(tool.name.as_str()) {
            return Err(format!("tool `{shown}` is listed twice"));
        }
        if tool.description.len() > budget.max_description_bytes {
            return Err(format!(
                "tool `{shown}`: the description is {} bytes, more than the {} allowed; shorten it, or raise `plugins.max_description_bytes`",
                tool.description.len(),
                budget.max_description_bytes
            ));
        }
        check_schema(&tool.input_schema, &SchemaBudget::default())
            .map_err(|e| format!("tool `{shown}`: input schema over budget: {e}"))?;
    }
    Ok(())
}

/// Tell `observer` (or the log, without one) about a load's progress.
fn emit(observer: Option<&LoadObserver>, event: LoadEvent) {
    match observer {
        Some(observer) => observer(&event),
        None => {
            if let LoadEvent::Compiling { plugin, bytes } = &event {
                tracing::info!(
                    plugin,
                    size_kib = bytes >> 10,
                    "compiling plugin (done once, then cached)"
                );
            }
        }
    }
}

/// Ask the component for its tools and check each one.
async fn describe(
    guest: &Guest,
    path: &Path,
    budget: &PluginBudget,
) -> Result<Vec<ToolSpec>, PluginError> {
    let bad = |message: String| PluginError::Describe {
        path: path.to_owned(),
        message,
    };
    let infos = guest
        .describe()
        .await
        .map_err(|e| bad(format!("describe() failed: {e}")))?;
    if infos.len() > budget.max_tools {
        // Say so before converting anything.
        return Err(bad(format!(
            "describe() lists {} tools, more than the {} allowed; split the plugin, or raise `plugins.max_tools` in the host config",
            infos.len(),
            budget.max_tools
        )));
    }
    let mut specs: Vec<ToolSpec> = Vec::with_capacity(infos.len());
    for info in infos {
        let shown = text::untrusted(&info.name, 80);
        if info.input_schema.len() > budget.max_schema_bytes {
            return Err(bad(format!(
                "tool `{shown}`: the input schema is {} bytes, more than the {} allowed; simplify it, or raise `plugins.max_schema_bytes`",
                info.input_schema.len(),
                budget.max_schema_bytes
            )));
        }
        let schema: Value = serde_json::from_str(&info.input_schema)
            .map_err(|e| bad(format!("tool `{shown}`: input schema is not JSON: {e}")))?;
        specs.push(ToolSpec {
            name: info.name,
            description: info.description,
            input_schema: schema,
        });
    }
    check_tools(&specs, budget).map_err(bad)?;
    for spec in &specs {
        // Within budget, so compiling it is bounded work.
        if let Err(e) = jsonschema::validator_for(&spec.input_schema) {
            return Err(bad(format!(
                "tool `{}`: input schema is not a valid JSON Schema: {}",
                spec.name,
                text::untrusted(&e.to_string(), 512)
            )));
        }
    }
    Ok(specs)
}
