//! Hot reload: a plugin directory watched, and a registry kept in step
//! with it.
//!
//! A [`PluginWatcher`] owns the tools that the plugin files of one
//! directory registered, and nothing else: a change to `NAME.wasm` or
//! `NAME.toml` reloads that one plugin and swaps exactly its tools
//! ([`ToolRegistry::replace`]), so REST tools, native tools and tools from
//! other sources in the same registry are never touched, but for a name
//! both offer: it goes to the source that takes precedence (see
//! [`ToolRegistry`]), whatever the order of changes.
//!
//! Only a change of content reloads a plugin. The watcher listens for
//! files created, written, renamed and removed, never for reads or
//! changes of metadata (`cat`, `touch`, another `toolhost` loading the
//! same directory), and a file whose bytes (and whose manifest's bytes)
//! are the ones already seen, loaded or refused, changes nothing: a
//! stateful plugin keeps its sessions, clients get no `list_changed`, and
//! a refused plugin is not refused (and logged) again.
//!
//! A file is loaded only once it has been quiet for the debounce window,
//! and only if it did not change while it loaded; a version that does not
//! load (a truncated component, a FIFO or a device in its place, a refused
//! grant, a failed integrity check, a tool name taken by a source that
//! takes precedence) leaves the previous version serving, and the next
//! change to the file tries again. A plugin is removed only when its
//! `NAME.wasm` is gone from the directory. Calls in flight finish on the
//! version they started on.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{
    self, Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher, event::ModifyKind,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

mod content;

use content::{Content, Found};

use super::{Plugin, PluginError, PluginHost, component_files};
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
    /// There is no plugin directory to watch (plugins came from one file,
    /// or from bytes).
    #[error("there is no plugin directory to watch; give one (or turn hot reload off)")]
    NoDirectory,
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
    /// its name is taken by a tool from a source that takes precedence.
    #[error("{}: the new version was not put in service: {error}", path.display())]
    Register {
        /// The `.wasm` file.
        path: PathBuf,
        /// Why (part of the message).
        error: RegistryError,
    },
    /// The file-system watcher reported an error.
    #[error("watching {}: {error}; changes may have been missed: write the file again (or restart) to reload it", path.display())]
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
        /// Tools of weaker sources it took its names back from (each a
        /// [`RegistryError::Displaced`]): they are no longer served.
        displaced: Vec<RegistryError>,
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
/// with it (see the module docs in `plugin/watch.rs`). Made by [`PluginHost::watch`].
///
/// Changes are applied as [`next`](Self::next) is awaited: a program that
/// wants hot reload keeps a task awaiting it. Dropping the watcher stops
/// watching; the tools it registered stay in the registry.
pub struct PluginWatcher {
    host: PluginHost,
    dir: PathBuf,
    registry: Arc<ToolRegistry>,
    debounce: Duration,
    /// Per plugin file name: the very tools it registered.
    owned: HashMap<OsString, Vec<Arc<dyn Tool>>>,
    /// Per plugin file name: the content last seen, loaded or refused (at
    /// first, as it was when watching began). The same content again
    /// changes nothing.
    seen: HashMap<OsString, Content>,
    /// Plugin files changed, and when each was last changed: each is
    /// reconciled once quiet for `debounce`.
    dirty: HashMap<OsString, Instant>,
    changes: mpsc::UnboundedReceiver<notify::Result<Event>>,
    pending: VecDeque<WatchEvent>,
    _watcher: RecommendedWatcher,
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
    /// are adopted: a change to their file swaps them. Every plugin file
    /// in `dir` is read once now, to know its content: a later event that
    /// finds the same content changes nothing.
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
    /// use toolhost::config::HostConfig;
    /// use toolhost::plugin::{DEFAULT_DEBOUNCE, PluginHost};
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
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            // Reads and metadata changes are not changes of content.
            if event.as_ref().is_ok_and(|e| !changes_content(&e.kind)) {
                return;
            }
            // The receiver is gone only when the watcher is dropped.
            let _ = tx.send(event);
        })
        .map_err(start)?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(start)?;
        let owned = adopt(dir, &registry);
        let budget = self.config.plugins;
        let seen = component_files(dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|path| {
                let name = path.file_name()?.to_owned();
                match Content::of(&path, &budget) {
                    Found::Present(content) => Some((name, content)),
                    Found::Absent | Found::Unreadable(_) => None,
                }
            })
            .collect();
        Ok(PluginWatcher {
            host: self.clone(),
            dir: dir.to_owned(),
            registry,
            debounce,
            owned,
            seen,
            dirty: HashMap::new(),
            changes,
            pending: VecDeque::new(),
            _watcher: watcher,
        })
    }
}

/// Whether an event of `kind` may mean new content: a file created,
/// written, renamed or removed. Opening, reading and closing a file
/// (`cat`, a second server loading the directory) and changing its
/// metadata (`touch`, `chmod`) do not.
fn changes_content(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
    )
}

/// The plugin tools in `registry` loaded from files in `dir`, by file name.
fn adopt(dir: &Path, registry: &ToolRegistry) -> HashMap<OsString, Vec<Arc<dyn Tool>>> {
    let same_dir = |path: &Path| {
        let parent = path.parent().unwrap_or(Path::new("."));
        parent == dir
            || matches!(
                (parent.canonicalize(), dir.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            )
    };
    let mut owned: HashMap<OsString, Vec<Arc<dyn Tool>>> = HashMap::new();
    let snapshot = registry.snapshot();
    // Every version of every name: a plugin's tools may have a version.
    for tool in snapshot.keys().filter_map(|key| snapshot.get(&key)) {
        if let ToolOrigin::Plugin { path, .. } = tool.origin()
            && let Some(name) = path.file_name()
            && same_dir(&path)
        {
            owned
                .entry(name.to_owned())
                .or_default()
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
            let due = self.dirty.values().min().copied();
            tokio::select! {
                changed = self.changes.recv() => match changed? {
                    Ok(event) => {
                        // Quiet again only `debounce` after its last event:
                        // a file still being written waits until it is done.
                        let quiet = Instant::now() + self.debounce;
                        for path in &event.paths {
                            if let Some(file) = plugin_file(path) {
                                self.dirty.insert(file, quiet);
                            }
                        }
                    }
                    Err(error) => {
                        return Some(WatchEvent::Failed {
                            path: self.dir.clone(),
                            error: ReloadError::Watch {
                                path: self.dir.clone(),
                                error,
                            },
                        });
                    }
                },
                () = sleep_until(due), if due.is_some() => self.settle().await,
            }
        }
    }

    /// Reconcile every file quiet for the debounce window, and queue what
    /// each change did (with the plugins it displaced, and a retry of the
    /// refused ones when names were freed).
    async fn settle(&mut self) {
        let now = Instant::now();
        let quiet: BTreeSet<OsString> = self
            .dirty
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(file, _)| file.clone())
            .collect();
        for file in quiet {
            self.dirty.remove(&file);
            let Some(event) = self.reconcile(&file).await else {
                continue;
            };
            let frees_names = match &event {
                WatchEvent::Removed { .. } => true,
                WatchEvent::Loaded { removed, .. } => !removed.is_empty(),
                WatchEvent::Failed { .. } => false,
            };
            let dropped = match &event {
                WatchEvent::Loaded { displaced, .. } => self.drop_displaced(displaced),
                _ => Vec::new(),
            };
            self.pending.push_back(event);
            if frees_names {
                self.retry_refused();
            }
            self.pending.extend(dropped);
        }
    }

    /// Bring the registry in line with plugin file `file` as it is now.
    async fn reconcile(&mut self, file: &OsString) -> Option<WatchEvent> {
        let path = self.dir.join(file);
        let content = match self.content(&path).await {
            Found::Absent => return self.remove(file, path),
            Found::Unreadable(error) => {
                // Something that is not a plugin file (a FIFO, a device)
                // took its place: refused, and the old version serves on
                // (and is not reloaded when its bytes come back).
                return Some(WatchEvent::Failed {
                    path,
                    error: ReloadError::Load(error),
                });
            }
            Found::Present(content) => content,
        };
        if self.seen.get(file) == Some(&content) {
            // Content already seen (loaded or refused): nothing changed.
            return None;
        }
        let loaded = self.host.load_file(&path).await;
        let plugin = match loaded {
            Ok(plugin) if Content::loaded(&plugin) == content => plugin,
            // Written to while it loaded: the event for that write follows,
            // and the file is loaded again once it is quiet.
            Ok(_) => return None,
            Err(error) => {
                if !matches!(self.content(&path).await, Found::Present(now) if now == content) {
                    return None;
                }
                self.seen.insert(file.clone(), content);
                return Some(WatchEvent::Failed {
                    path,
                    error: error.into(),
                });
            }
        };
        Some(self.swap_in(file, path, content, plugin))
    }

    /// Plugin file `file` (at `path`) is gone: its tools leave the registry.
    /// `None` when it served none.
    fn remove(&mut self, file: &OsString, path: PathBuf) -> Option<WatchEvent> {
        self.seen.remove(file);
        let old = self.owned.remove(file)?;
        self.registry
            .replace(&old, Vec::new())
            .expect("removing tools cannot clash");
        super::offers::swap(&self.registry, &old, None);
        Some(WatchEvent::Removed {
            path,
            tools: names(&old),
        })
    }

    /// Put the tools of `plugin`, loaded from `file` (at `path`) with bytes
    /// `content`, in the place of those the file served before, and say
    /// which names came and went.
    fn swap_in(
        &mut self,
        file: &OsString,
        path: PathBuf,
        content: Content,
        plugin: Arc<Plugin>,
    ) -> WatchEvent {
        let old = self.owned.get(file).cloned().unwrap_or_default();
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
        let displaced = match self.registry.replace(&old, swap) {
            Ok(displaced) => displaced,
            Err(error) => {
                // Not remembered as seen: whether it fits depends on the
                // other sources, and the next change tries again.
                return WatchEvent::Failed {
                    path: path.clone(),
                    error: ReloadError::Register { path, error },
                };
            }
        };
        self.seen.insert(file.clone(), content);
        super::offers::swap(&self.registry, &old, Some(&plugin));
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
        self.owned.insert(file.clone(), new);
        WatchEvent::Loaded {
            plugin,
            replaced: !old.is_empty(),
            added,
            removed,
            displaced,
        }
    }

    /// A plugin serves all its tools or none: one of this directory that
    /// lost a name to a plugin that takes precedence (an earlier file) is
    /// taken out of service, and tried again when names are freed.
    fn drop_displaced(&mut self, displaced: &[RegistryError]) -> Vec<WatchEvent> {
        if displaced.is_empty() {
            return Vec::new();
        }
        let served = self.registry.snapshot();
        let is_served = |tool: &Arc<dyn Tool>| {
            let name = &tool.spec().name;
            let key = match tool.version() {
                Some(version) => format!("{name}@{version}"),
                None => name.clone(),
            };
            served.get(&key).is_some_and(|t| Arc::ptr_eq(t, tool))
        };
        let partial: Vec<OsString> = self
            .owned
            .iter()
            .filter(|(_, tools)| !tools.iter().all(is_served))
            .map(|(file, _)| file.clone())
            .collect();
        let mut events = Vec::new();
        for file in partial {
            let Some(tools) = self.owned.remove(&file) else {
                continue;
            };
            let lost = tools
                .iter()
                .find(|t| !is_served(t))
                .map(|t| t.spec().name.clone());
            self.registry
                .replace(&tools, Vec::new())
                .expect("removing tools cannot clash");
            self.seen.remove(&file);
            let path = self.dir.join(&file);
            let lost = lost.unwrap_or_default();
            let error = displaced
                .iter()
                .find(|e| e.tool_name() == lost)
                .cloned()
                .unwrap_or_else(|| RegistryError::Displaced {
                    name: lost,
                    owner: "another tool".into(),
                    displaced: format!("plugin {}", path.display()),
                });
            events.push(WatchEvent::Failed {
                path: path.clone(),
                error: ReloadError::Register { path, error },
            });
        }
        events
    }

    /// Try again, at once, every plugin file of the directory not in
    /// service: one refused because a name was taken may fit now.
    fn retry_refused(&mut self) {
        let now = Instant::now();
        for path in component_files(&self.dir).unwrap_or_default() {
            if let Some(file) = path.file_name()
                && !self.owned.contains_key(file)
            {
                self.seen.remove(file);
                self.dirty.entry(file.to_owned()).or_insert(now);
            }
        }
    }

    /// The content of the plugin at `path` now, read off the executor.
    async fn content(&self, path: &Path) -> Found {
        let (file, budget) = (path.to_owned(), self.host.config.plugins);
        tokio::task::spawn_blocking(move || Content::of(&file, &budget))
            .await
            .unwrap_or_else(|e| {
                Found::Unreadable(PluginError::Describe {
                    path: path.to_owned(),
                    message: format!("the reading thread failed: {e}"),
                })
            })
    }
}

/// Sleep until `due`, or forever when there is nothing to wait for.
async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
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

fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.spec().name.clone()).collect()
}
