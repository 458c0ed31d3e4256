//! The on-disk cache of compiled components.
//!
//! An entry is named after the component's BLAKE3 digest and a hash of the
//! engine's compilation settings, so a changed plugin or a changed engine
//! never hits a stale entry. Each file starts with a magic tag and the BLAKE3
//! digest of the rest; an entry whose digest does not match is deleted and
//! rebuilt, because deserializing compiled code trusts its bytes.

use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"THCWASM1";
const HEADER: usize = MAGIC.len() + 32;

/// Whether a load compiled the component or found it in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Loaded from a valid cache entry.
    Hit,
    /// Compiled (no entry yet) and stored.
    Compiled,
    /// An entry existed but was corrupt or unreadable; compiled again.
    Rebuilt,
    /// No cache directory is configured.
    Disabled,
}

pub(crate) struct CompileCache {
    dir: Option<PathBuf>,
    engine_tag: String,
}

impl CompileCache {
    pub(crate) fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        Self {
            dir,
            engine_tag: format!("{:016x}", hasher.finish()),
        }
    }

    /// Where the entry for a component with `digest` lives.
    pub(crate) fn entry_path(&self, digest: &blake3::Hash) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}.cwasm", digest.to_hex(), self.engine_tag)))
    }

    /// The compiled component for `wasm`, from the cache or freshly compiled.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &blake3::Hash,
    ) -> wasmtime::Result<(Component, CacheStatus)> {
        let Some(path) = self.entry_path(digest) else {
            return Ok((Component::from_binary(engine, wasm)?, CacheStatus::Disabled));
        };
        let mut status = CacheStatus::Compiled;
        match std::fs::read(&path) {
            Ok(bytes) => match verified_payload(&bytes) {
                // SAFETY: the payload is exactly what `Component::serialize`
                // wrote for this engine configuration: its digest matches
                // the one stored when it was written, so no byte changed.
                Some(payload) => match unsafe { Component::deserialize(engine, payload) } {
                    Ok(component) => return Ok((component, CacheStatus::Hit)),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "cache entry rejected, recompiling: {e}");
                        status = CacheStatus::Rebuilt;
                    }
                },
                None => {
                    tracing::warn!(path = %path.display(), "cache entry is corrupt, recompiling");
                    status = CacheStatus::Rebuilt;
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "cache entry unreadable, recompiling: {e}");
                status = CacheStatus::Rebuilt;
            }
        }
        let component = Component::from_binary(engine, wasm)?;
        if let Err(e) = store(&path, &component.serialize()?) {
            // A cache that cannot be written costs speed, never correctness.
            tracing::warn!(path = %path.display(), "could not write cache entry: {e}");
        }
        Ok((component, status))
    }
}

fn verified_payload(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    let (digest, payload) = bytes[MAGIC.len()..].split_at(32);
    (blake3::hash(payload).as_bytes() == digest).then_some(payload)
}

/// Write atomically: a reader sees the old entry, no entry, or the new one.
fn store(path: &Path, payload: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(blake3::hash(payload).as_bytes());
    bytes.extend_from_slice(payload);
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_byte_fails_verification() {
        let payload = b"compiled code".to_vec();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(blake3::hash(&payload).as_bytes());
        bytes.extend_from_slice(&payload);
        assert_eq!(verified_payload(&bytes), Some(&payload[..]));
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(verified_payload(&bytes), None);
        assert_eq!(verified_payload(b"short"), None);
    }
}
