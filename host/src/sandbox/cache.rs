//! The on-disk cache of compiled components.
//!
//! An entry is named after the component's BLAKE3 digest and a hash of the
//! engine's compilation settings, so a changed plugin or a changed engine
//! never hits a stale entry. Each entry is two files: `KEY.cwasm`, exactly
//! what `Component::serialize` wrote, and `KEY.cwasm.sum`, a magic tag and
//! the BLAKE3 digest of the first. An entry whose digest does not match (or
//! has no sum) is rebuilt, because deserializing compiled code trusts its
//! bytes. Keeping the artifact bare lets wasmtime map it straight from the
//! page cache instead of copying it into fresh memory: that copy and its page
//! faults were most of a warm load.

use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"THCSUM02";
const SUM_LEN: usize = MAGIC.len() + 32;

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
        MAGIC.hash(&mut hasher);
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
        match verify(&path) {
            // SAFETY: the file is exactly what `Component::serialize` wrote
            // for this engine configuration: its digest matches the one
            // stored beside it. Entries are replaced by rename, never
            // rewritten in place, so the mapped file does not change under us.
            Ok(true) => match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, CacheStatus::Hit)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "cache entry rejected, recompiling: {e}");
                    status = CacheStatus::Rebuilt;
                }
            },
            Ok(false) => {
                tracing::warn!(path = %path.display(), "cache entry is corrupt, recompiling");
                status = CacheStatus::Rebuilt;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && !path.exists() => {}
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

fn sum_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_owned();
    name.push(".sum");
    PathBuf::from(name)
}

/// Whether the entry at `path` matches its stored digest. The artifact is
/// streamed through the hasher, not read into memory.
fn verify(path: &Path) -> io::Result<bool> {
    let sum = std::fs::read(sum_path(path))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(std::fs::File::open(path)?)?;
    Ok(sum_matches(&sum, &hasher.finalize()))
}

fn sum_matches(sum: &[u8], digest: &blake3::Hash) -> bool {
    sum.len() == SUM_LEN && &sum[..MAGIC.len()] == MAGIC && &sum[MAGIC.len()..] == digest.as_bytes()
}

/// Write atomically, artifact first: a reader sees the old entry, no entry,
/// an artifact without a matching sum (rebuilt), or the new entry.
fn store(path: &Path, payload: &[u8]) -> io::Result<()> {
    let mut sum = MAGIC.to_vec();
    sum.extend_from_slice(blake3::hash(payload).as_bytes());
    write_atomically(path, payload)?;
    write_atomically(&sum_path(path), &sum)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_byte_or_a_missing_sum_fails_verification() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.cwasm");
        store(&path, b"compiled code").unwrap();
        assert!(verify(&path).unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(!verify(&path).unwrap());
        std::fs::remove_file(sum_path(&path)).unwrap();
        assert!(verify(&path).is_err());
        assert!(!sum_matches(b"short", &blake3::hash(b"")));
    }
}
