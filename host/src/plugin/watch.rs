//! Hot reload: a plugin directory watched, and a registry kept in step
//! with it.
//!
//! A [`PluginWatcher`] owns the tools that the plugin files of one
//! directory registered, and nothing else: a change to `NAME.wasm` or
//! `NAME.toml` reloads that one plugin and swaps exactly its tools
//! ([`ToolRegistry::replace`]), so REST tools, native tools and tools from
//! other sources in the same registry are never touched. A file is loaded
//! only once it has been quiet for the debounce window, and only if it did
//! not change while it loaded; a version that does not load (a truncated
//! component, a refused grant, a failed integrity check, a tool name taken
//! by another tool) leaves the previous version serving, and the next
//! change to the file tries again. Calls in flight finish on the version
//! they started on.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify_debouncer_mini::notify::{self, RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, DebouncedEventKind, Debouncer};
use tokio::sync::mpsc;

use super::{Plugin, PluginError, PluginHost};
use crate::tools::{RegistryError, Tool, ToolOrigin, ToolRegistry};

/// How long a file must stay unchanged before it is loaded: long enough
/// for a `cp` of a big component to finish, short enough to feel instant.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

/// Why a directory cannot be watched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The file-system watcher could not be started on the directory.
    #[error(
        "cannot watch plugin directory {} for changes: {error}; check that it exists and is readable (or turn hot reload off)",
        path.display()
    )]
    Start {
        /// The directory.
        path: PathBuf,
        /// Why (part of the message).
        error: notify::Error,
    },
}

/// Why a change in the directory did not take effect. What served before
/// still serves.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The new version of the plugin did not load.
    #[error(transparent)]
    Load(#[from] PluginError),
    /// The new version loaded, but a tool of it could not be registered:
    /// most often its name is taken by another tool.
    #[error("{}: the new version was not put in service: {error}", path.display())]
    Register {
        /// The `.wasm` file.
        path: PathBuf,
        /// Why (part of the message).
        error: RegistryError,
    },
    /// The file-system watcher reported an error.
    #[error("watching {}: {error}; changes may have been missed: touch the file to reload it", path.display())]
    Watch {
        /// The directory.
        path: PathBuf,
        /// Why (part of the message).
        error: notify::Error,
    },
}

/// What a change in the watched directory did.
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchEvent {
    /// A plugin was loaded and its tools are in service: a new file, or a
    /// new version of one (which replaced the old version's tools).
    Loaded {
        /// The plugin now serving.
        plugin: Arc<Plugin>,
        /// Whether it replaced a version that was serving.
        replaced: bool,
        /// Tool names it added (not served by the old version).
        added: Vec<String>,
        /// Tool names of the old version it no longer has.
        removed: Vec<String>,
    },
    /// A plugin file is gone, and its tools with it.
    Removed {
        /// The `.wasm` file.
        path: PathBuf,
        /// The tool names it served.
        tools: Vec<String>,
    },
    /// A change did not take effect.
    Failed {
        /// The file (or, for a watcher error, the directory).
        path: PathBuf,
        /// Why.
        error: ReloadError,
    },
}

impl WatchEvent {
    /// Whether the registry's tools changed (a client's tool list is stale).
    pub fn changed_tools(&self) -> bool {
        matches!(self, Self::Loaded { .. } | Self::Removed { .. })
    }
}

/// Watches a plugin directory and keeps a registry's plugin tools in step
/// with it (see the [module docs](self)). Made by [`PluginHost::watch`].
///
/// Changes are applied as [`next`](Self::next) is awaited: a program that
/// wants hot reload keeps a task awaiting it. Dropping the watcher stops
/// watching; the tools it registered stay in the registry.
pub struct PluginWatcher {
    host: PluginHost,
    dir: PathBuf,
    registry: Arc<ToolRegistry>,
    /// Per plugin file name: the very tools it registered.
    owned: HashMap<OsString, Owned>,
    changes: mpsc::UnboundedReceiver<DebounceEventResult>,
    pending: VecDeque<WatchEvent>,
    _debouncer: Debouncer<RecommendedWatcher>,
}

impl std::fmt::Debug for PluginWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginWatcher")
            .field("dir", &self.dir)
            .field("plugins", &self.owned.len())
            .finish_non_exhaustive()
    }
}

impl PluginHost {
    /// Watch `dir` for plugin files added, replaced or removed, and keep
    /// `registry` in step (see [`PluginWatcher`]). The plugin tools already
    /// in `registry` that were loaded from `dir` (by
    /// [`load_dir`](Self::load_dir) and
    /// [`LoadReport::register_into`](super::LoadReport::register_into))
    /// are adopted: a change to their file swaps them.
    ///
    /// A file must be unchanged for `debounce` ([`DEFAULT_DEBOUNCE`] is a
    /// good value) before it is loaded. Subdirectories are not watched.
    ///
    /// # Errors
    ///
    /// The directory cannot be watched (it does not exist, or the system's
    /// limit on watches is reached).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::path::Path;
    /// use std::sync::Arc;
    /// use toolhost::plugin::{DEFAULT_DEBOUNCE, HostConfig, PluginHost};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = PluginHost::new(HostConfig::default())?;
    /// let dir = Path::new("plugins");
    /// let registry = Arc::new(host.load_dir(dir).await?.registry()?);
    /// let mut watcher = host.watch(dir, Arc::clone(&registry), DEFAULT_DEBOUNCE)?;
    /// while let Some(event) = watcher.next().await {
    ///     println!("{event:?}: {} tools now", registry.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn watch(
        &self,
        dir: &Path,
        registry: Arc<ToolRegistry>,
        debounce: Duration,
    ) -> Result<PluginWatcher, WatchError> {
        let start = |error| WatchError::Start {
            path: dir.to_owned(),
            error,
        };
        let (tx, changes) = mpsc::unbounded_channel();
        let mut debouncer =
            notify_debouncer_mini::new_debouncer(debounce, move |batch: DebounceEventResult| {
                // The receiver is gone only when the watcher is dropped.
                let _ = tx.send(batch);
            })
            .map_err(start)?;
        debouncer
            .watcher()
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(start)?;
        let owned = adopt(dir, &registry);
        Ok(PluginWatcher {
            host: self.clone(),
            dir: dir.to_owned(),
            registry,
            owned,
            changes,
            pending: VecDeque::new(),
            _debouncer: debouncer,
        })
    }
}

/// What one plugin file put in the registry.
struct Owned {
    /// The very tools it registered.
    tools: Vec<Arc<dyn Tool>>,
    /// Its files as they were when loaded (unknown for adopted tools): an
    /// event that finds them the same changes nothing.
    loaded: Option<Stamps>,
}

/// The plugin tools in `registry` loaded from files in `dir`, by file name.
fn adopt(dir: &Path, registry: &ToolRegistry) -> HashMap<OsString, Owned> {
    let same_dir = |path: &Path| {
        let parent = path.parent().unwrap_or(Path::new("."));
        parent == dir
            || matches!(
                (parent.canonicalize(), dir.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            )
    };
    let mut owned: HashMap<OsString, Owned> = HashMap::new();
    let snapshot = registry.snapshot();
    // Every version of every name: a plugin's tools may have a version.
    for tool in snapshot.keys().filter_map(|key| snapshot.get(&key)) {
        if let ToolOrigin::Plugin { path, .. } = tool.origin()
            && let Some(name) = path.file_name()
            && same_dir(&path)
        {
            owned
                .entry(name.to_owned())
                .or_insert_with(|| Owned {
                    tools: Vec::new(),
                    loaded: None,
                })
                .tools
                .push(Arc::clone(tool));
        }
    }
    owned
}

impl PluginWatcher {
    /// The directory watched.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Wait for the next change in the directory, apply it to the registry
    /// and say what it did. `None` when the file-system watcher has stopped
    /// (it does not stop by itself while the watcher lives).
    pub async fn next(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            let batch = self.changes.recv().await?;
            let events = match batch {
                Ok(events) => events,
                Err(error) => {
                    return Some(WatchEvent::Failed {
                        path: self.dir.clone(),
                        error: ReloadError::Watch {
                            path: self.dir.clone(),
                            error,
                        },
                    });
                }
            };
            // Only files quiet for the whole window: one still being
            // written comes back as `Any` once it is done.
            let files: BTreeSet<OsString> = events
                .iter()
                .filter(|e| matches!(e.kind, DebouncedEventKind::Any))
                .filter_map(|e| plugin_file(&e.path))
                .collect();
            for file in files {
                if let Some(event) = self.reconcile(&file).await {
                    self.pending.push_back(event);
                }
            }
        }
    }

    /// Bring the registry in line with plugin file `file` as it is now.
    async fn reconcile(&mut self, file: &OsString) -> Option<WatchEvent> {
        let path = self.dir.join(file);
        let before = Stamps::of(&path);
        if before.wasm.is_none() {
            let old = self.owned.remove(file)?;
            self.registry
                .replace(&old.tools, Vec::new())
                .expect("removing tools cannot clash");
            return Some(WatchEvent::Removed {
                path,
                tools: names(&old.tools),
            });
        }
        let old = self.owned.get(file);
        if old.is_some_and(|o| o.loaded.as_ref() == Some(&before)) {
            // An event that changed nothing (a second event for one write).
            return None;
        }
        let old = old.map(|o| o.tools.clone()).unwrap_or_default();
        let loaded = self.host.load_file(&path).await;
        if Stamps::of(&path) != before {
            // Written to while it loaded: the event for that write follows,
            // and the file is loaded again once it is quiet.
            return None;
        }
        let plugin = match loaded {
            Ok(plugin) => plugin,
            Err(error) => {
                return Some(WatchEvent::Failed {
                    path,
                    error: error.into(),
                });
            }
        };
        let new: Vec<Arc<dyn Tool>> = plugin
            .tools()
            .into_iter()
            .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
            .collect();
        let options = plugin.exec_options();
        let swap = new
            .iter()
            .map(|tool| (Arc::clone(tool), options.clone()))
            .collect();
        if let Err(error) = self.registry.replace(&old, swap) {
            return Some(WatchEvent::Failed {
                path: path.clone(),
                error: ReloadError::Register { path, error },
            });
        }
        let (old_names, new_names) = (names(&old), names(&new));
        let added = new_names
            .iter()
            .filter(|n| !old_names.contains(n))
            .cloned()
            .collect();
        let removed = old_names
            .iter()
            .filter(|n| !new_names.contains(n))
            .cloned()
            .collect();
        self.owned.insert(
            file.clone(),
            Owned {
                tools: new,
                loaded: Some(before),
            },
        );
        Some(WatchEvent::Loaded {
            plugin,
            replaced: !old.is_empty(),
            added,
            removed,
        })
    }
}

/// The plugin file (`NAME.wasm`) a changed path belongs to: itself, or the
/// component beside a manifest `NAME.toml`.
fn plugin_file(path: &Path) -> Option<OsString> {
    let name = Path::new(path.file_name()?);
    match name.extension()?.to_str()? {
        "wasm" => Some(name.as_os_str().to_owned()),
        "toml" => Some(name.with_extension("wasm").into_os_string()),
        _ => None,
    }
}

/// What tells one version of a plugin's files from the next: the size and
/// time of last change of the component and of its manifest.
#[derive(Debug, PartialEq, Eq)]
struct Stamps {
    wasm: Option<Stamp>,
    manifest: Option<Stamp>,
}

type Stamp = (u64, Option<SystemTime>);

impl Stamps {
    fn of(wasm: &Path) -> Self {
        Self {
            wasm: stamp(wasm),
            manifest: stamp(&wasm.with_extension("toml")),
        }
    }
}

/// `None` when `path` is not (or no longer) a regular file.
fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| (meta.len(), meta.modified().ok()))
}

fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.spec().name.clone()).collect()
}
