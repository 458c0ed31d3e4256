//! What a component file is, for `toolhost inspect` and tools like it: its
//! interface and cache state even when it does not load as a plugin.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::integrity::ManifestState;
use super::{ComponentInterface, Plugin, PluginError, PluginHost};

/// What [`PluginHost::inspect`] found out about a component file.
#[derive(Debug)]
#[non_exhaustive]
pub struct Inspection {
    /// The BLAKE3 digest of the file, hex: the name of its compiled code in
    /// the cache (the same as [`Plugin::digest`]).
    pub digest: String,
    /// Its imports and exports; `None` when it is not a component this host
    /// can compile.
    pub interface: Option<ComponentInterface>,
    /// Where its compiled code is cached (whether or not it is there yet);
    /// `None` when caching is off.
    pub cache_entry: Option<PathBuf>,
    /// Whether the cache held its compiled code before this inspection.
    pub cached_before: bool,
    /// The file loaded as a plugin, as [`PluginHost::load_file`] loads it,
    /// or why it does not load.
    pub plugin: Result<Arc<Plugin>, PluginError>,
}

impl PluginHost {
    /// Compile the component at `path` (or load it from the cache), list
    /// its imports and exports, and try to load it as a plugin with the
    /// manifest beside it.
    ///
    /// Unlike [`load_file`](Self::load_file), a file that is a component but
    /// not a working plugin (wrong world, bad manifest, failing `describe`)
    /// still gets its digest, interface and cache state reported, with the
    /// reason in [`Inspection::plugin`].
    ///
    /// # Errors
    ///
    /// Only when the file cannot be read (missing, not a regular file, or
    /// larger than `plugins.max_component_mb`), the integrity policy
    /// refuses it (nothing is compiled then), or the compiler thread fails.
    pub async fn inspect(&self, path: &Path) -> Result<Inspection, PluginError> {
        let settings = self.settings(path);
        let manifest = ManifestState::of(settings.as_ref().ok());
        let compiled = self.compile_file(path, manifest).await?;
        let (interface, plugin) = match compiled.result {
            Ok((component, cache)) => {
                let interface = ComponentInterface::of(&component, self.sandbox.engine());
                let plugin = match settings {
                    Ok(settings) => {
                        self.instantiate(path, settings, compiled.digest, &component, cache)
                            .await
                    }
                    Err(e) => Err(e),
                };
                (Some(interface), plugin)
            }
            Err(error) => (
                None,
                Err(PluginError::Component {
                    path: path.to_owned(),
                    error,
                }),
            ),
        };
        Ok(Inspection {
            digest: compiled.digest.to_hex().to_string(),
            interface,
            cache_entry: compiled.cache_entry,
            cached_before: compiled.cached_before,
            plugin,
        })
    }
}
