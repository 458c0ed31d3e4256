//! A plugin's guest, made on its first call when the compile cache already
//! knows everything a load needs.
//!
//! Listing tools needs their specs, not the compiled code: a plugin whose
//! file is unchanged (its stamp), whose compiled code is cached (an entry
//! whose trailer names it) and whose tools the cache remembers under the
//! same manifest inputs loads without mapping, deserializing or linking
//! its code. That is most of what a warm `list`, `call` or `serve` start
//! cost per plugin. The first call makes the guest: from the cache entry,
//! or, when the entry turns out unusable, from the file's bytes, checked
//! against the digest the load knew (a file changed since is refused,
//! never run under the old file's tools).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::fsread::read_regular;
use crate::sandbox::{Guest, Limits, Permissions, PluginIdentity, Sandbox};
use crate::tools::{ToolError, ToolErrorKind};

/// A guest ready now, or made on first use.
pub(super) struct LazyGuest {
    ready: OnceCell<Guest>,
    limits: Limits,
    permissions: Permissions,
    /// How to make it; `None` when it was made at load.
    make: Option<Make>,
}

/// What making a guest later takes.
pub(super) struct Make {
    pub(super) sandbox: Sandbox,
    pub(super) path: PathBuf,
    pub(super) digest: blake3::Hash,
    pub(super) identity: Arc<PluginIdentity>,
    pub(super) spares: usize,
    /// The most bytes the component file may have.
    pub(super) max_bytes: u64,
}

impl LazyGuest {
    /// A guest made at load.
    pub(super) fn ready(guest: Guest) -> Self {
        let (limits, permissions) = (*guest.limits(), guest.permissions().clone());
        Self {
            ready: OnceCell::new_with(Some(guest)),
            limits,
            permissions,
            make: None,
        }
    }

    /// A guest to make on first use, under `limits` and `permissions`.
    pub(super) fn later(make: Make, limits: Limits, permissions: Permissions) -> Self {
        Self {
            ready: OnceCell::new(),
            limits,
            permissions,
            make: Some(make),
        }
    }

    pub(super) fn limits(&self) -> &Limits {
        &self.limits
    }

    pub(super) fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Whether the guest is made.
    pub(super) fn is_ready(&self) -> bool {
        self.ready.initialized()
    }

    /// Spare instances ready now (none before the guest is made).
    pub(super) fn spares_ready(&self) -> usize {
        self.ready.get().map_or(0, Guest::spares_ready)
    }

    /// The guest, made now if it is not yet. Calls that arrive while it is
    /// made wait for the one making; a failure is not kept (the next call
    /// tries again).
    ///
    /// # Errors
    ///
    /// A `plugin_load` [`ToolError`]: the compiled code and the file are
    /// both unusable, or the file changed since the plugin was loaded.
    pub(super) async fn get(&self) -> Result<&Guest, ToolError> {
        self.ready
            .get_or_try_init(|| async {
                let Some(make) = &self.make else {
                    unreachable!("a guest without a recipe is made at load")
                };
                let job = MakeJob {
                    sandbox: make.sandbox.clone(),
                    path: make.path.clone(),
                    digest: make.digest,
                    identity: Arc::clone(&make.identity),
                    spares: make.spares,
                    max_bytes: make.max_bytes,
                    limits: self.limits,
                    permissions: self.permissions.clone(),
                };
                tokio::task::spawn_blocking(move || job.run())
                    .await
                    .map_err(|e| load_error(format!("the thread making the guest failed: {e}")))?
            })
            .await
    }
}

/// [`Make`], owned, for a blocking thread.
struct MakeJob {
    sandbox: Sandbox,
    path: PathBuf,
    digest: blake3::Hash,
    identity: Arc<PluginIdentity>,
    spares: usize,
    max_bytes: u64,
    limits: Limits,
    permissions: Permissions,
}

impl MakeJob {
    fn run(self) -> Result<Guest, ToolError> {
        let component = match self.sandbox.cached(&self.digest) {
            Some(component) => component,
            None => {
                // The entry went away or is unusable: the file, if it is
                // still the component the plugin was loaded from.
                let wasm = read_regular(&self.path, self.max_bytes, "plugins.max_component_mb")
                    .map_err(|e| load_error(format!("cannot read {}: {e}", self.path.display())))?;
                if Sandbox::digest(&wasm) != self.digest {
                    return Err(load_error(format!(
                        "{} changed since the plugin was loaded; load the plugins again \
                         (`serve` reloads a changed file on its own)",
                        self.path.display()
                    )));
                }
                let (component, _) = self
                    .sandbox
                    .compile(&wasm, &self.digest)
                    .map_err(|e| load_error(format!("{e:#}")))?;
                component
            }
        };
        self.sandbox
            .prepare(
                &component,
                self.identity,
                self.limits,
                self.permissions,
                self.spares,
            )
            .map_err(ToolError::from)
    }
}

fn load_error(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::PluginLoad, message)
}
