//! Loading only the plugin that owns one tool, for a process that makes
//! one call (`toolhost call NAME`).
//!
//! Which plugin owns a name depends on every plugin before it in the
//! directory (the first to load and offer it keeps it; a plugin offering a
//! name already owned is refused whole), so finding the owner means knowing
//! what a full load would make of every plugin. The compile cache knows that
//! without compiling or instantiating anything: each file's digest by its
//! stamp, and the tools each component described under each manifest's
//! inputs (`catalog`). The owner is then decided by the same [`Claims`] a
//! full load uses, and only it is loaded. Whenever a plugin's fate is not
//! known that way (not in the cache yet, a file changed, an integrity check
//! that has bytes to hash), the whole directory is loaded instead.

use std::path::Path;
use std::sync::Arc;

use super::integrity::ManifestState;
use super::{Claims, LoadReport, Plugin, PluginError, PluginHost, catalog, component_files};
use crate::sandbox::FileStamp;
use crate::tools::ToolSpec;

/// What [`PluginHost::load_dir_for_tool`] loaded.
#[derive(Debug)]
pub struct ToolLoad {
    /// What [`load_dir`](PluginHost::load_dir) would report, except that
    /// when [`partial`](Self::partial), `plugins` holds only the plugin that
    /// owns the tool.
    pub report: LoadReport,
    /// Every tool name the directory's plugins own, loaded or not, sorted.
    pub owned: Vec<String>,
    /// Whether only the owner was loaded.
    pub partial: bool,
}

/// What a full load would make of one plugin.
enum Foreseen {
    /// It loads, with these tools.
    Loads(Vec<ToolSpec>),
    /// It does not load, for this reason.
    Fails(PluginError),
}

impl PluginHost {
    /// Load from `dir` what a call of `tool` needs: the plugin that owns it
    /// under the rules of [`load_dir`](Self::load_dir), and no other, when
    /// what a full load would make of every plugin is known from the compile
    /// cache. Otherwise, or when no plugin offers `tool`, the whole directory
    /// is loaded, so that a report of what failed and what is available is
    /// complete.
    ///
    /// # Errors
    ///
    /// As [`load_dir`](Self::load_dir).
    pub async fn load_dir_for_tool(&self, dir: &Path, tool: &str) -> Result<ToolLoad, PluginError> {
        if let Some(load) = self.load_owner(dir, tool).await {
            return Ok(load);
        }
        let report = self.load_dir(dir).await?;
        let mut owned: Vec<String> = report
            .plugins
            .iter()
            .flat_map(|p| p.tool_specs().iter().map(|t| t.name.clone()))
            .collect();
        owned.sort();
        Ok(ToolLoad {
            report,
            owned,
            partial: false,
        })
    }

    async fn load_owner(&self, dir: &Path, tool: &str) -> Option<ToolLoad> {
        let files = component_files(dir).ok()?;
        let mut claims = Claims::default();
        let mut errors = Vec::new();
        let mut owner = None;
        for path in files {
            let tools = match self.foresee(&path)? {
                Foreseen::Loads(tools) => tools,
                Foreseen::Fails(e) => {
                    errors.push(e);
                    continue;
                }
            };
            match claims.claim(&path, &tools) {
                Ok(()) if tools.iter().any(|t| t.name == tool) => owner = Some((path, tools)),
                Ok(()) => {}
                Err(e) => errors.push(e),
            }
        }
        let (path, tools) = owner?;
        let plugin: Arc<Plugin> = self.load_file(&path).await.ok()?;
        // Foreseen from the same notes the load reads; anything else means
        // the cache changed under us: load everything.
        if plugin.tool_specs() != tools.as_slice() {
            return None;
        }
        let mut owned: Vec<String> = claims.0.into_keys().collect();
        owned.sort();
        Some(ToolLoad {
            report: LoadReport {
                plugins: vec![plugin],
                errors,
                deferred: Vec::new(),
            },
            owned,
            partial: true,
        })
    }

    /// What a full load would make of the plugin at `path`, if the cache
    /// knows without the component being read, compiled or instantiated.
    /// The steps are a full load's, in its order: the manifest, the file's
    /// size, the integrity policy, the component and its tools.
    fn foresee(&self, path: &Path) -> Option<Foreseen> {
        let settings = match self.settings(path) {
            Ok(settings) => settings,
            Err(e) => return Some(Foreseen::Fails(e)),
        };
        let stamp = FileStamp::of(path)?;
        let max = self.config.plugins.max_component_mb.saturating_mul(1 << 20);
        if stamp.size() > max
            || self
                .integrity
                .needs_bytes(ManifestState::of(Some(&settings)))
        {
            return None;
        }
        let digest = self.sandbox.known_digest(path, &stamp)?;
        let resolved = &settings.resolved;
        let key = catalog::inputs_key(
            &settings.manifest.config,
            &resolved.limits,
            &resolved.permissions,
        )?;
        let (tools, slots) =
            catalog::recall_with_slots(&self.sandbox, &digest, &key, &self.config.plugins)?;
        // `Sandbox::prepare` refuses a component that needs more slots.
        (slots <= self.config.max_instances).then_some(Foreseen::Loads(tools))
    }
}
