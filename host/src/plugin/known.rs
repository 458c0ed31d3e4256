//! Loading a plugin from what the compile cache knows of it, without its
//! compiled code (see `lazy`).

use std::sync::Arc;

use super::lazy::{LazyGuest, Make};
use crate::sandbox::PluginIdentity;

impl super::PluginHost {
    /// What the cache knows of the plugin at `path` under `settings`, when
    /// it knows all a load without the compiled code needs: the file
    /// unchanged since it was hashed (its stamp), a compiled entry for that
    /// digest that looks whole, and the tools and interface remembered
    /// under these manifest inputs. `None` otherwise, and when the
    /// integrity policy must read the bytes: then it loads the full way.
    pub(super) fn remembered(
        &self,
        path: &std::path::Path,
        settings: &super::Settings,
    ) -> Option<(blake3::Hash, super::catalog::Remembered)> {
        if self
            .integrity
            .needs_bytes(super::ManifestState::of(Some(settings)))
        {
            return None;
        }
        let resolved = &settings.resolved;
        let key = super::catalog::inputs_key(
            &settings.manifest.config,
            &resolved.limits,
            &resolved.permissions,
        )?;
        let max_bytes = self.max_component_bytes();
        let stamp = crate::sandbox::FileStamp::of(path).filter(|s| s.size() <= max_bytes)?;
        let digest = self
            .sandbox
            .known_digest(path, &stamp)
            .filter(|digest| self.sandbox.has_cached(digest))?;
        let remembered =
            super::catalog::recall_all(&self.sandbox, &digest, &key, &self.config.plugins)?;
        // `Sandbox::prepare` refuses a component that needs more.
        (remembered.slots <= self.config.max_instances).then_some((digest, remembered))
    }

    /// The plugin at `path`, loaded from what the cache [`remembered`]
    /// (Self::remembered) of it: its guest is made on its first call.
    pub(super) fn load_known(
        &self,
        path: &std::path::Path,
        settings: super::Settings,
        (digest, remembered): (blake3::Hash, super::catalog::Remembered),
    ) -> Arc<super::Plugin> {
        let resolved = &settings.resolved;
        let make = Make {
            sandbox: self.sandbox.clone(),
            path: path.to_owned(),
            digest,
            identity: Arc::new(PluginIdentity {
                name: super::plugin_name(path),
                config: settings.manifest.config.clone(),
            }),
            spares: self.config.spare_instances as usize,
            max_bytes: self.max_component_bytes(),
        };
        let guest = LazyGuest::later(make, resolved.limits, resolved.permissions.clone());
        let described = super::Described {
            tools: remembered.tools,
            extras: remembered.extras,
            from_cache: true,
            offers: None,
            // Only a plugin without `[ui]` loads this way.
            ui: Default::default(),
            interface: remembered.interface,
        };
        let cache = crate::sandbox::CacheStatus::Hit;
        self.assemble(path, settings, digest, cache, described, guest)
    }

    fn max_component_bytes(&self) -> u64 {
        self.config.plugins.max_component_mb.saturating_mul(1 << 20)
    }
}
