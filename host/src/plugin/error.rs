//! Why a plugin did not load, and what a load reports while it runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::integrity;
use crate::sandbox::SandboxError;

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
    /// A plugin loaded after start could not join the registry (a tool
    /// name another plugin already serves); it was not loaded.
    #[error("{}: not loaded: {error}", path.display())]
    Registry {
        /// The plugin's component.
        path: PathBuf,
        /// Why the registry refused its tools.
        error: crate::tools::RegistryError,
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
            | Self::Integrity { path, .. }
            | Self::Registry { path, .. } => path,
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
