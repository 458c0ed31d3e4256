//! The operator's lock file (`toolhost.lock`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{FormatError, Sha256Digest};
use crate::fsread::read_regular;
use crate::plugin::{PluginError, component_files, plugin_name};
use crate::text;
use crate::tools::PluginBudget;

/// What an operator's lock file pins for one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// The SHA-256 of `NAME.wasm`.
    pub wasm: Sha256Digest,
    /// The SHA-256 of `NAME.toml`; `None` (no `manifest` key): the plugin
    /// must have no manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Sha256Digest>,
}

/// An operator's lock file (`toolhost.lock`): the plugins this host may
/// load, each by the SHA-256 of its component and of its manifest.
///
/// ```toml
/// version = 1
///
/// [plugins.calc]
/// wasm = "<64 hex digits>"
/// manifest = "<64 hex digits>"   # absent: the plugin must have no manifest
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    plugins: BTreeMap<String, LockEntry>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default)]
    plugins: BTreeMap<String, LockEntry>,
}

const LOCK_VERSION: u32 = 1;

impl Lock {
    /// The lock for the plugins in `dir` as they are now: every `NAME.wasm`
    /// that [`PluginHost::load_dir`](crate::plugin::PluginHost::load_dir) would
    /// load, with its manifest if it has one. Files are read within
    /// `budget`, as a load reads them.
    ///
    /// # Errors
    ///
    /// `dir` cannot be listed, or a component or manifest cannot be read
    /// (a lock with a plugin missing would refuse it later).
    pub fn of_dir(dir: &Path, budget: &PluginBudget) -> Result<Self, PluginError> {
        let files = component_files(dir).map_err(|error| PluginError::ReadDir {
            path: dir.to_owned(),
            error,
        })?;
        let mut plugins = BTreeMap::new();
        for wasm_path in files {
            let max = budget.max_component_mb.saturating_mul(1 << 20);
            let read = |path: &Path, max, key| {
                read_regular(path, max, key).map_err(|error| PluginError::Read {
                    path: path.to_owned(),
                    error,
                })
            };
            let wasm = read(&wasm_path, max, "plugins.max_component_mb")?;
            let manifest_path = wasm_path.with_extension("toml");
            let manifest = match read(
                &manifest_path,
                budget.max_manifest_bytes,
                "plugins.max_manifest_bytes",
            ) {
                Ok(bytes) => Some(Sha256Digest::of(&bytes)),
                Err(PluginError::Read { error, .. })
                    if error.kind() == std::io::ErrorKind::NotFound =>
                {
                    None
                }
                Err(e) => return Err(e),
            };
            let entry = LockEntry {
                wasm: Sha256Digest::of(&wasm),
                manifest,
            };
            plugins.insert(plugin_name(&wasm_path), entry);
        }
        Ok(Self { plugins })
    }

    /// Parse the text of a lock file.
    ///
    /// # Errors
    ///
    /// The text is not a lock file of version 1.
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let file: LockFile = toml::from_str(text).map_err(|e| {
            FormatError::new(format!(
                "not a toolhost lock file: {}",
                text::untrusted(e.message(), 256)
            ))
        })?;
        if file.version != LOCK_VERSION {
            return Err(FormatError::new(format!(
                "lock file version {} is not supported (this host reads version {LOCK_VERSION}); re-create it with `toolhost lock`",
                file.version
            )));
        }
        Ok(Self {
            plugins: file.plugins,
        })
    }

    /// The text of its lock file.
    pub fn to_toml(&self) -> String {
        let file = LockFile {
            version: LOCK_VERSION,
            plugins: self.plugins.clone(),
        };
        let body = toml::to_string(&file).expect("a lock file is plain strings and tables");
        format!(
            "# toolhost.lock: the plugins this host may load, by SHA-256 of NAME.wasm and NAME.toml.\n\
             # Written by `toolhost lock`; used only where the host config (integrity.lock_file)\n\
             # or --lock names it.\n{body}"
        )
    }

    /// What the lock pins for the plugin called `name`.
    pub fn get(&self, name: &str) -> Option<&LockEntry> {
        self.plugins.get(name)
    }

    /// Every plugin it lists, by name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &LockEntry)> {
        self.plugins
            .iter()
            .map(|(name, entry)| (name.as_str(), entry))
    }

    /// Pin `entry` for the plugin called `name` (replacing what was there).
    pub fn insert(&mut self, name: impl Into<String>, entry: LockEntry) {
        self.plugins.insert(name.into(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_round_trips() {
        let mut lock = Lock::default();
        let entry = |manifest| LockEntry {
            wasm: Sha256Digest::of(b"wasm"),
            manifest,
        };
        lock.insert("calc", entry(Some(Sha256Digest::of(b"toml"))));
        lock.insert("odd name\n", entry(None));
        let text = lock.to_toml();
        assert_eq!(Lock::parse(&text).unwrap(), lock);
        let err = Lock::parse(&text.replace("version = 1", "version = 2")).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
    }
}
