//! The on-disk cache of compiled components.
//!
//! An entry is named after the component's BLAKE3 digest and a hash of the
//! engine's compilation settings, so a changed plugin or a changed engine
//! never hits a stale entry. Each file starts with a magic tag and an XXH3
//! checksum of the rest; an entry whose checksum does not match is deleted
//! and rebuilt, because deserializing compiled code trusts its bytes.
//!
//! The checksum guards against damage (a torn write, a bad disk, a stray
//! edit), not against an attacker: whoever can write the cache directory can
//! write a matching checksum too, so the directory must be as trusted as the
//! host binary. That is why a fast non-cryptographic checksum is enough, and
//! why the cache refuses a directory that anyone but the user could write
//! (on Unix: owned by another user, or writable by group or others). It
//! creates its directory `0700` and its files `0600`, under random names
//! that it never follows through a symlink, and ignores (and rebuilds) an
//! entry that is not a regular file of its own.
//!
//! Beside an entry the cache keeps small *notes* about the component (the
//! tools its `describe` returned), checksummed the same way.
//!
//! On Linux a verified entry is copied into a sealed memfd and wasmtime maps
//! it from there, so loading copies the entry once and never maps the cache
//! file itself (a mapped file truncated by someone else kills the process
//! with SIGBUS; a sealed memfd cannot change at all). Elsewhere the entry is
//! read into memory and deserialized from there.

use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"THCWASM2";
/// Tags a note: a small record kept beside an entry (see [`CompileCache::read_note`]).
const NOTE_MAGIC: &[u8; 8] = b"THCNOTE1";
const HEADER: usize = MAGIC.len() + 16;

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

/// Why an existing entry was not used.
enum Unusable {
    /// Reading it failed.
    Io(io::Error),
    /// Wrong magic, short, or a checksum mismatch.
    Corrupt,
    /// wasmtime refused it (say, a different wasmtime version).
    Rejected(wasmtime::Error),
}

impl From<io::Error> for Unusable {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Unusable::Corrupt
        } else {
            Unusable::Io(e)
        }
    }
}

impl CompileCache {
    /// The cache in `dir` (created if missing), or no cache.
    ///
    /// # Errors
    ///
    /// `dir` cannot be created, or is not safe to load native code from: a
    /// message that says why and what to do.
    pub(crate) fn open(engine: &Engine, dir: Option<PathBuf>) -> Result<Self, String> {
        if let Some(dir) = &dir {
            prepare_dir(dir)?;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        Ok(Self {
            dir,
            engine_tag: format!("{:016x}", hasher.finish()),
        })
    }

    /// Where the entry for a component with `digest` lives.
    pub(crate) fn entry_path(&self, digest: &blake3::Hash) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}.cwasm", digest.to_hex(), self.engine_tag)))
    }

    /// The note called `name` kept beside the entry for `digest`, if there
    /// is one and its checksum matches. A damaged note is deleted and
    /// reported as missing, so the caller recomputes and rewrites it.
    ///
    /// Notes hold what is worth remembering about a component besides its
    /// code (the tools it describes); like entries, they are named after the
    /// component and the engine, so a changed plugin or host never reads a
    /// stale one.
    pub(crate) fn read_note(&self, digest: &blake3::Hash, name: &str) -> Option<Vec<u8>> {
        let path = self.note_path(digest, name)?;
        let bytes = match read_own(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), "cache note unreadable, ignoring it: {e}");
                return None;
            }
        };
        match verified_payload(&bytes, NOTE_MAGIC) {
            Some(payload) => Some(payload.to_vec()),
            None => {
                tracing::warn!(path = %path.display(), "cache note is corrupt, rebuilding it");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Keep `payload` as the note called `name` beside the entry for
    /// `digest`. Failing to write costs speed, never correctness, so it is
    /// only logged.
    pub(crate) fn write_note(&self, digest: &blake3::Hash, name: &str, payload: &[u8]) {
        if let Some(path) = self.note_path(digest, name)
            && let Err(e) = store(&path, NOTE_MAGIC, payload)
        {
            tracing::warn!(path = %path.display(), "could not write cache note: {e}");
        }
    }

    fn note_path(&self, digest: &blake3::Hash, name: &str) -> Option<PathBuf> {
        Some(self.entry_path(digest)?.with_extension(name))
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
        let status = match open_entry(engine, &path) {
            Ok(Some(component)) => return Ok((component, CacheStatus::Hit)),
            Ok(None) => CacheStatus::Compiled,
            Err(why) => {
                let path = path.display();
                match why {
                    Unusable::Io(e) => {
                        tracing::warn!(%path, "cache entry unreadable, recompiling: {e}");
                    }
                    Unusable::Corrupt => {
                        tracing::warn!(%path, "cache entry is corrupt, recompiling");
                    }
                    Unusable::Rejected(e) => {
                        tracing::warn!(%path, "cache entry rejected, recompiling: {e}");
                    }
                }
                CacheStatus::Rebuilt
            }
        };
        let component = Component::from_binary(engine, wasm)?;
        if let Err(e) = store(&path, MAGIC, &component.serialize()?) {
            // A cache that cannot be written costs speed, never correctness.
            tracing::warn!(path = %path.display(), "could not write cache entry: {e}");
        }
        Ok((component, status))
    }
}

fn checksum(payload: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes()
}

/// The entry at `path`, verified and deserialized; `None` if there is none.
#[cfg(target_os = "linux")]
fn open_entry(engine: &Engine, path: &Path) -> Result<Option<Component>, Unusable> {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    if !Path::new("/proc/self/fd").is_dir() {
        // No /proc to hand wasmtime the memfd by path.
        return read_entry(engine, path);
    }
    let Some(mut file) = open_own(path)? else {
        return Ok(None);
    };
    let mut header = [0; HEADER];
    file.read_exact(&mut header)?;
    let (magic, expected) = header.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(Unusable::Corrupt);
    }
    let memfd = memfd::MemfdOptions::new()
        .close_on_exec(true)
        .allow_sealing(true)
        .create("toolhost-cwasm")
        .map_err(|e| Unusable::Io(io::Error::other(e)))?;
    // Copy and checksum in one pass; the copy is what gets mapped, so the
    // bytes checked are the bytes run.
    let mut sum = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0; 64 << 10];
    let mut out = memfd.as_file();
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        sum.update(&buf[..n]);
        out.write_all(&buf[..n])?;
    }
    if sum.digest128().to_le_bytes() != expected {
        return Err(Unusable::Corrupt);
    }
    use memfd::FileSeal::{SealGrow, SealSeal, SealShrink, SealWrite};
    memfd
        .add_seals(&[SealShrink, SealGrow, SealWrite, SealSeal])
        .map_err(|e| Unusable::Io(io::Error::other(e)))?;
    // wasmtime maps the file it opens; the memfd's /proc link opens the
    // same sealed in-memory file.
    let sealed = format!("/proc/self/fd/{}", memfd.as_file().as_raw_fd());
    // SAFETY: the memfd holds exactly what `Component::serialize` wrote for
    // this engine configuration (its checksum matches the one stored when
    // the entry was written), and it is sealed: nobody, us included, can
    // change, shrink or grow it while wasmtime has it mapped.
    unsafe { Component::deserialize_file(engine, &sealed) }
        .map(Some)
        .map_err(Unusable::Rejected)
}

#[cfg(not(target_os = "linux"))]
fn open_entry(engine: &Engine, path: &Path) -> Result<Option<Component>, Unusable> {
    read_entry(engine, path)
}

/// Like `open_entry`, through a copy of the whole entry in memory.
fn read_entry(engine: &Engine, path: &Path) -> Result<Option<Component>, Unusable> {
    match read_own(path)? {
        Some(bytes) => deserialize_verified(engine, &bytes).map(Some),
        None => Ok(None),
    }
}

fn deserialize_verified(engine: &Engine, bytes: &[u8]) -> Result<Component, Unusable> {
    let payload = verified_payload(bytes, MAGIC).ok_or(Unusable::Corrupt)?;
    // SAFETY: the payload is exactly what `Component::serialize` wrote for
    // this engine configuration: its checksum matches the one stored when it
    // was written, so no byte changed.
    unsafe { Component::deserialize(engine, payload) }.map_err(Unusable::Rejected)
}

/// What follows `magic` and a matching checksum in `bytes`.
fn verified_payload<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Option<&'a [u8]> {
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != magic {
        return None;
    }
    let (sum, payload) = bytes[MAGIC.len()..].split_at(HEADER - MAGIC.len());
    (checksum(payload) == sum).then_some(payload)
}

/// Write atomically: a reader sees the old entry, no entry, or the new one.
fn store(path: &Path, magic: &[u8; 8], payload: &[u8]) -> io::Result<()> {
    use std::io::Write;

    let dir = path.parent().unwrap_or(Path::new("."));
    // A random name, created exclusively and never through a symlink: no
    // one can guess it ahead of us, and no two writers share it.
    let tmp = dir.join(format!(
        ".{}.{:032x}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        rand::random::<u128>()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let mut file = options.open(&tmp)?;
    let written = file
        .write_all(magic)
        .and_then(|()| file.write_all(&checksum(payload)))
        .and_then(|()| file.write_all(payload))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Create `dir` (owner-only) if missing, and check nobody else can write it.
fn prepare_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| {
        format!(
            "cannot create the compile cache directory {}: {e}; create it yourself \
             (owned by you, mode 0700), choose another with --cache-dir or `cache_dir`, \
             or pass --no-cache",
            dir.display()
        )
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(dir).map_err(|e| {
            format!(
                "cannot read the compile cache directory {}: {e}",
                dir.display()
            )
        })?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let why = if !meta.is_dir() {
            Some("it is not a directory".to_owned())
        } else if meta.uid() != me {
            Some(format!(
                "it is owned by uid {}, not by you (uid {me})",
                meta.uid()
            ))
        } else if meta.mode() & 0o022 != 0 {
            Some(format!(
                "it is writable by {} (mode {:o})",
                if meta.mode() & 0o002 != 0 {
                    "everyone"
                } else {
                    "its group"
                },
                meta.mode() & 0o7777
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!(
                "refusing the compile cache directory {}: {why}, and its entries are \
                 loaded as native code, so whoever else can write there could run code \
                 as you; run `chmod 700 {}` if it is yours, or choose another directory \
                 with --cache-dir or `cache_dir`, or pass --no-cache",
                dir.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Open the cache file at `path` for reading if it is a regular file of
/// ours that only we can write; `None` if there is none. Never follows a
/// symlink and never blocks on a FIFO. A file that fails the check is an
/// error, so the caller rebuilds it.
fn open_own(path: &Path) -> io::Result<Option<std::fs::File>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let mut own = meta.is_file();
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        own &= meta.uid() == unsafe { libc::geteuid() } && meta.mode() & 0o022 == 0;
    }
    if !own {
        return Err(io::Error::other(
            "not a regular file owned by this user and writable only by it",
        ));
    }
    Ok(Some(file))
}

/// The whole of [`open_own`]'s file.
fn read_own(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(mut file) = open_own(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_byte_fails_verification() {
        let payload = b"compiled code".to_vec();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&checksum(&payload));
        bytes.extend_from_slice(&payload);
        assert_eq!(verified_payload(&bytes, MAGIC), Some(&payload[..]));
        assert_eq!(verified_payload(&bytes, NOTE_MAGIC), None);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(verified_payload(&bytes, MAGIC), None);
        assert_eq!(verified_payload(b"short", MAGIC), None);
    }
}
