//! Plugins left to compile after start: a server answers at once with the
//! tools whose compiled code the cache holds, and adds the others as they
//! compile.
//!
//! [`PluginHost::load_dir_compiled`] loads what costs no compile and lists
//! the rest in [`LoadReport::deferred`]; [`PluginHost::load_deferred`]
//! compiles those, and adds each one's tools to the registry as soon as
//! it (and every file before it) is ready, so its change feed
//! (and an MCP server's `notifications/tools/list_changed`) tells clients
//! of each. A deferred plugin meets the tools already served as a hot
//! reload does, under the registry's precedence, which depends on the
//! tools alone: it takes a name from a source it takes precedence over
//! (REST, `[[mcp]]`, a plugin later in file-name order, whose tool is
//! then displaced and reported), and is refused whole where a plugin
//! before it in file-name order serves one of its names. Among plugins,
//! the owners come out as a full load's (but for a plugin that loses
//! only some of its names, which keeps the others instead of being
//! refused whole).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;

use super::{LoadReport, Plugin, PluginError, PluginHost};
use crate::fsread::read_regular;
use crate::sandbox::{FileStamp, Sandbox};
use crate::tools::{RegistryError, Tool, ToolRegistry};

/// What [`PluginHost::load_deferred`] did.
#[derive(Debug, Default)]
pub struct DeferredReport {
    /// Plugins that loaded; their tools are in the registry.
    pub plugins: Vec<Arc<Plugin>>,
    /// Files that did not load, and why (a tool name a plugin before it
    /// in file-name order serves included: the plugin is refused whole).
    pub errors: Vec<PluginError>,
    /// Tools that a loaded plugin took the name of (from a source it
    /// takes precedence over).
    pub displaced: Vec<RegistryError>,
}

impl PluginHost {
    /// Whether loading the component at `path` costs no compile: its
    /// compiled code is in the compile cache. Reads and hashes the file
    /// unless the cache already knows this file as it is; `false` when it
    /// cannot be read (loading it will say why) or caching is off.
    pub fn is_compiled(&self, path: &Path) -> bool {
        let max = self.config.plugins.max_component_mb.saturating_mul(1 << 20);
        let Some(stamp) = FileStamp::of(path) else {
            return false;
        };
        let digest = match self.sandbox.known_digest(path, &stamp) {
            Some(digest) => digest,
            None => match read_regular(path, max, "plugins.max_component_mb") {
                Ok(wasm) => Sandbox::digest(&wasm),
                Err(_) => return false,
            },
        };
        self.sandbox
            .cache_entry(&digest)
            .is_some_and(|entry| entry.is_file())
    }

    /// As [`load_dir`](Self::load_dir), but without compiling: a component
    /// whose compiled code is not in the cache is not loaded, and is listed
    /// in [`LoadReport::deferred`] instead, for
    /// [`load_deferred`](Self::load_deferred) once the program is serving.
    ///
    /// # Errors
    ///
    /// Only when `dir` cannot be listed, as [`load_dir`](Self::load_dir).
    pub async fn load_dir_compiled(&self, dir: &Path) -> Result<LoadReport, PluginError> {
        let files = super::component_files(dir).map_err(|error| PluginError::ReadDir {
            path: dir.to_owned(),
            error,
        })?;
        let host = self.clone();
        let (compiled, deferred): (Vec<PathBuf>, Vec<PathBuf>) =
            tokio::task::spawn_blocking(move || {
                files.into_iter().partition(|path| host.is_compiled(path))
            })
            .await
            .unwrap_or_default();
        let mut report = self.load_files(compiled).await;
        report.deferred = deferred;
        Ok(report)
    }

    /// Load `files` (compiling them, side by side as
    /// [`load_dir`](Self::load_dir) does), and add each plugin's tools to
    /// `registry` as soon as it and every file before it have loaded: one
    /// change of the registry per plugin, in file-name order, so which of
    /// two plugins offering one name is refused does not depend on timing.
    /// See the [module docs](self) for how its names meet the tools
    /// already served.
    pub async fn load_deferred(
        &self,
        files: &[PathBuf],
        registry: &ToolRegistry,
    ) -> DeferredReport {
        let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut loads = futures::stream::iter(files)
            .map(|path| async move { (path, self.load_file(path).await) })
            .buffered(parallel);
        let mut report = DeferredReport::default();
        while let Some((path, loaded)) = loads.next().await {
            let plugin = match loaded {
                Ok(plugin) => plugin,
                Err(error) => {
                    report.errors.push(error);
                    continue;
                }
            };
            let tools = plugin
                .tools()
                .into_iter()
                .map(|tool| {
                    (
                        Arc::new(tool) as Arc<dyn Tool>,
                        plugin.exec_options().clone(),
                    )
                })
                .collect();
            match registry.replace(&[], tools) {
                Ok(displaced) => {
                    report.displaced.extend(displaced);
                    // Its resources and prompts (contract 0.3) too.
                    super::offers::swap(registry, &[], Some(&plugin));
                    report.plugins.push(plugin);
                }
                Err(error) => report.errors.push(PluginError::Registry {
                    path: path.clone(),
                    error,
                }),
            }
        }
        report
    }
}
