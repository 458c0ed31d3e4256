//! What a plugin's files hold, told apart by digest: what hot reload
//! compares to know whether anything changed.

use std::path::Path;

use super::super::{Plugin, PluginError};
use crate::fsread::read_regular;
use crate::sandbox::Sandbox;
use crate::signing::Sha256Digest;
use crate::tools::PluginBudget;

/// What tells one version of a plugin's files from the next: digests of
/// the component's bytes and of its manifest's, the very ones the loader
/// computes. Size and time of change are not enough: `touch` changes the
/// time and nothing else, and a copy can keep both while changing bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Content {
    wasm: blake3::Hash,
    manifest: Option<Sha256Digest>,
}

/// A plugin's files as found.
pub(super) enum Found {
    /// No `NAME.wasm` in the directory (not even a dangling link).
    Absent,
    /// Something is there but it cannot be read as a plugin file.
    Unreadable(PluginError),
    /// The component (and its manifest, if any) as read.
    Present(Content),
}

impl Content {
    /// The content a loaded plugin was loaded from.
    pub(super) fn loaded(plugin: &Plugin) -> Self {
        Self {
            wasm: plugin.digest,
            manifest: plugin.manifest_sha256,
        }
    }

    /// Read the files of the plugin at `wasm` within `budget`, as a load
    /// reads them.
    pub(super) fn of(wasm: &Path, budget: &PluginBudget) -> Found {
        match std::fs::symlink_metadata(wasm) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Absent,
            _ => {}
        }
        let read = |path: &Path, max: u64, key: &str| {
            read_regular(path, max, key).map_err(|error| PluginError::Read {
                path: path.to_owned(),
                error,
            })
        };
        let max = budget.max_component_mb.saturating_mul(1 << 20);
        let bytes = match read(wasm, max, "plugins.max_component_mb") {
            Ok(bytes) => bytes,
            Err(e) => return Found::Unreadable(e),
        };
        let manifest = wasm.with_extension("toml");
        let manifest = match read(
            &manifest,
            budget.max_manifest_bytes,
            "plugins.max_manifest_bytes",
        ) {
            Ok(bytes) => Some(Sha256Digest::of(&bytes)),
            Err(PluginError::Read { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                None
            }
            Err(e) => return Found::Unreadable(e),
        };
        Found::Present(Self {
            wasm: Sandbox::digest(&bytes),
            manifest,
        })
    }
}
