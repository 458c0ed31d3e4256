//! Plugins: `*.wasm` components in a directory, each with an optional
//! sidecar manifest, turned into [`Tool`](crate::tools::Tool)s.
//!
//! Loading a directory never fails because of one bad plugin: each file is
//! loaded on its own, and the [`LoadReport`] lists what loaded and what did
//! not, with the file and the reason.

mod apps;
mod background;
mod bytes;
mod catalog;
pub(crate) mod compile;
mod error;
mod inspect;
pub mod integrity;
mod known;
mod lazy;
mod loaded;
mod manifest;
mod offers;
mod plan;
mod resolve;
mod session;
mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use wasmtime::component::Component;

pub use apps::{APP_MIME_TYPE, UI_SCHEME};
pub use background::DeferredReport;
pub use error::{LoadEvent, LoadObserver, PluginError};
pub use inspect::Inspection;
pub use loaded::{ComponentInterface, Plugin, WasmTool};
pub use manifest::{DirSpec, Manifest, PermissionsSpec, SessionSpec, TaskSpec};
pub use plan::ToolLoad;
pub use watch::{DEFAULT_DEBOUNCE, PluginWatcher, ReloadError, WatchError, WatchEvent};

use compile::describe;
use integrity::ManifestState;
use resolve::{Resolved, read_manifest};

use crate::config::HostConfig;
use crate::sandbox::{CacheStatus, Limits, PluginIdentity, Sandbox, SandboxConfig, SandboxError};
use crate::tools::{ToolRegistry, ToolSpec};

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
    /// Files left to compile later
    /// ([`PluginHost::load_dir_compiled`]); empty after a full load.
    pub deferred: Vec<PathBuf>,
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
            plugin.register_into(registry)?;
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
        config
            .validate()
            .map_err(|e| SandboxError::Config(e.to_string()))?;
        let invalid = |e: crate::sandbox::LimitError| SandboxError::Config(e.to_string());
        let defaults = config.limits.default_limits().map_err(invalid)?;
        let ceiling = config.limits.ceiling().map_err(invalid)?;
        let integrity =
            integrity::Integrity::new(&config.integrity).map_err(SandboxError::Config)?;
        let session_cap = session::SessionCap::new(config.effective_max_sessions() as usize);
        let sandbox = Sandbox::new(&SandboxConfig {
            cache_dir: config.cache_dir.clone(),
            cache_stamp_settle: std::time::Duration::from_millis(config.cache_stamp_settle_ms),
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

    /// How many instance slots are held now, across this host: calls
    /// running, live sessions and spare instances (at most
    /// `max_instances`).
    pub fn instance_slots_in_use(&self) -> usize {
        self.sandbox.slots_in_use()
    }

    /// How many spare instances (made ahead of time) are ready now,
    /// across this host.
    pub fn spare_instances(&self) -> usize {
        self.sandbox.spares_ready()
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
        Ok(self.load_files(files).await)
    }

    /// Load `files`, side by side; what loaded and what did not, in the
    /// files' order.
    async fn load_files(&self, files: Vec<PathBuf>) -> LoadReport {
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
        report
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
        // A plugin with offers (contract 0.3) loads the full way: its lists
        // come from calls into it; so does one whose `[ui]` must be checked
        // against them.
        if settings.manifest.ui.is_empty()
            && let Some(known) = self.remembered(path, &settings)
            && !offers::exported(&known.1.interface)
        {
            return Ok(self.load_known(path, settings, known));
        }
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
        let resolved = &settings.resolved;
        let config = &settings.manifest.config;
        let inputs = catalog::inputs_key(config, &resolved.limits, &resolved.permissions);
        let identity = Arc::new(PluginIdentity {
            name: plugin_name(path),
            config: config.clone(),
        });
        let guest = self
            .sandbox
            .prepare(
                component,
                identity,
                resolved.limits,
                resolved.permissions.clone(),
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
        let interface = ComponentInterface::of(component, self.sandbox.engine());
        let (tools, extras, whole) = match remembered {
            Some(described) => described,
            None => {
                let (tools, extras) = describe(&guest, path, &self.config.plugins).await?;
                (tools, extras, false)
            }
        };
        // A note from before interfaces were kept is completed, so that
        // the next load can do without the compiled code.
        if let (Some(key), false) = (inputs, whole) {
            let described = (&tools[..], &extras[..]);
            catalog::remember(
                &self.sandbox,
                &digest,
                key,
                described,
                guest.slots(),
                &interface,
            );
        }
        let schemes = offers::schemes(&plugin_name(path), &settings.manifest.resource_schemes);
        let offers = offers::list(&guest, path, &schemes).await?;
        let ui = apps::check(&settings.manifest.ui, &schemes[0], &tools, offers.as_ref()).map_err(
            |message| PluginError::Describe {
                path: path.to_owned(),
                message,
            },
        )?;
        let described = Described {
            tools,
            extras,
            from_cache: tools_from_cache,
            offers,
            ui,
            interface,
        };
        let guest = lazy::LazyGuest::ready(guest);
        Ok(self.assemble(path, settings, digest, cache, described, guest))
    }

    /// The plugin of these parts.
    fn assemble(
        &self,
        path: &Path,
        settings: Settings,
        digest: blake3::Hash,
        cache: CacheStatus,
        described: Described,
        guest: lazy::LazyGuest,
    ) -> Arc<Plugin> {
        let Settings {
            manifest,
            manifest_path,
            manifest_sha256,
            resolved,
        } = settings;
        let idle_ttl = Duration::from_secs(
            manifest
                .session
                .idle_ttl_secs
                .unwrap_or(self.config.session_idle_ttl_secs),
        );
        Arc::new(Plugin {
            name: plugin_name(path),
            path: path.to_owned(),
            manifest_path,
            digest,
            manifest_sha256,
            stateful: manifest.stateful,
            version: manifest.version.clone(),
            task: manifest.task,
            exec: resolved.exec.clone(),
            cache,
            tools: described.tools,
            extras: described.extras,
            tools_from_cache: described.from_cache,
            offers: described.offers,
            ui: described.ui,
            asks_user: described.interface.asks_user(),
            interface: described.interface,
            sessions: session::Sessions::new(idle_ttl, Arc::clone(&self.session_cap)),
            guest,
        })
    }
}

/// A plugin's tools and interface, and whether the cache remembered them.
struct Described {
    tools: Vec<ToolSpec>,
    extras: Vec<loaded::ToolExtras>,
    from_cache: bool,
    /// What it offers besides tools (contract 0.3).
    offers: Option<crate::sandbox::OfferLists>,
    /// Its tools' MCP Apps views, checked (`apps::check`).
    ui: std::collections::BTreeMap<String, String>,
    interface: ComponentInterface,
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

/// A plugin's manifest, read and checked against the operator's config.
struct Settings {
    manifest: Manifest,
    manifest_path: Option<PathBuf>,
    /// The SHA-256 of the manifest's bytes as read and parsed.
    manifest_sha256: Option<integrity::Sha256Digest>,
    resolved: Resolved,
}

/// A plugin's name: its file stem.
fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin")
        .to_owned()
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
