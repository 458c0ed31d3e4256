//! The on-disk cache of compiled components.
//!
//! An entry is named after the component's BLAKE3 digest and a hash of the
//! engine's compilation settings, so a changed plugin or a changed engine
//! never hits a stale entry. Each entry is what `Component::serialize`
//! wrote, followed by a trailer: a magic tag, the payload's length, the
//! component's digest and an XXH3 checksum of the trailer. An entry whose
//! trailer is missing, damaged or names another length or component (a
//! truncated entry, or another one renamed over it) is rebuilt, never
//! loaded, because deserializing compiled code trusts its bytes.
//!
//! The trailer guards against damage and mix-ups (a short write, a stray
//! copy), not against an attacker: whoever can write the cache directory can
//! write a matching trailer too, so the directory must be as trusted as the
//! host binary. That is why a fast non-cryptographic checksum is enough, and
//! why the cache refuses a directory that anyone but the user could write
//! (on Unix: owned by another user, or writable by group or others). It
//! creates its directory `0700` and its files `0600`, under random names
//! that it never follows through a symlink, and ignores (and rebuilds) an
//! entry that is not a regular file of its own.
//!
//! Beside an entry the cache keeps small *notes* about the component (the
//! tools its `describe` returned), each starting with a magic tag and an
//! XXH3 checksum of the rest (a note is small, so it is checked whole).
//!
//! On Linux a verified entry is mapped by wasmtime straight from the cache
//! file, so a warm load reads a trailer and maps the code, and only the
//! pages that run are ever read. Elsewhere the entry is read into memory
//! and deserialized from there. What makes mapping safe is in
//! [`open_entry`].

use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// Tags an entry's trailer.
const MAGIC: &[u8; 8] = b"THCWASM3";
/// The trailer after an entry's payload: [`MAGIC`], the payload's length
/// (u64, little-endian), the component's BLAKE3 digest, and the XXH3-128
/// checksum of those 48 bytes.
const TRAILER: usize = MAGIC.len() + 8 + 32 + 16;
/// Tags a note: a small record kept beside an entry (see [`CompileCache::read_note`]).
pub(super) const NOTE_MAGIC: &[u8; 8] = b"THCNOTE1";
/// A note's header: its magic, then the XXH3-128 checksum of the rest.
const HEADER: usize = NOTE_MAGIC.len() + 16;

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
    pub(super) dir: Option<PathBuf>,
    engine_tag: String,
    /// How long a file goes unwritten before its stamp is trusted
    /// (`stamps`).
    pub(super) settle: std::time::Duration,
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
    pub(crate) fn open(
        engine: &Engine,
        dir: Option<PathBuf>,
        settle: std::time::Duration,
    ) -> Result<Self, String> {
        if let Some(dir) = &dir {
            prepare_dir(dir)?;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        // The entry format: entries of another layout are never even found.
        MAGIC.hash(&mut hasher);
        Ok(Self {
            dir,
            engine_tag: format!("{:016x}", hasher.finish()),
            settle,
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
            && let Err(e) = store_note(&path, NOTE_MAGIC, payload)
        {
            tracing::warn!(path = %path.display(), "could not write cache note: {e}");
        }
    }

    fn note_path(&self, digest: &blake3::Hash, name: &str) -> Option<PathBuf> {
        Some(self.entry_path(digest)?.with_extension(name))
    }

    /// The component with `digest` if the cache holds a usable entry for
    /// it. Anything else (no cache, no entry, an unusable one) is `None`,
    /// and [`load`](Self::load) then says why and rebuilds it.
    pub(crate) fn hit(&self, engine: &Engine, digest: &blake3::Hash) -> Option<Component> {
        let path = self.entry_path(digest)?;
        open_entry(engine, &path, digest).ok().flatten()
    }

    /// Whether the cache holds an entry for `digest` that looks whole: a
    /// regular file of ours whose trailer names this component and the
    /// entry's exact length (what [`hit`](Self::hit) checks before it maps
    /// the entry), without mapping or deserializing it.
    pub(crate) fn looks_whole(&self, digest: &blake3::Hash) -> bool {
        self.entry_path(digest)
            .is_some_and(|path| trailer_ok(&path, digest))
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
        let status = match open_entry(engine, &path, digest) {
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
        let payload = component.serialize()?;
        let trailer = trailer(payload.len(), digest);
        if let Err(e) = store(&path, &[&payload, &trailer]) {
            // A cache that cannot be written costs speed, never correctness.
            tracing::warn!(path = %path.display(), "could not write cache entry: {e}");
        }
        Ok((component, status))
    }
}

fn checksum(payload: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes()
}

/// The trailer for a payload of `len` bytes compiled from `digest`.
fn trailer(len: usize, digest: &blake3::Hash) -> [u8; TRAILER] {
    let mut trailer = [0; TRAILER];
    let (fields, sum) = trailer.split_at_mut(TRAILER - 16);
    fields[..8].copy_from_slice(MAGIC);
    fields[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    fields[16..].copy_from_slice(digest.as_bytes());
    sum.copy_from_slice(&checksum(fields));
    trailer
}

/// The payload length an entry of `file_len` bytes ending in `trailer`
/// holds, if the trailer is intact, says exactly that length, and names
/// the component with `digest`.
fn payload_len(trailer: &[u8], file_len: u64, digest: &blake3::Hash) -> Option<usize> {
    let payload = usize::try_from(file_len.checked_sub(TRAILER as u64)?).ok()?;
    (trailer.len() == TRAILER && trailer[..] == self::trailer(payload, digest)[..])
        .then_some(payload)
}

/// The entry at `path` for the component with `digest`, checked and
/// deserialized; `None` if there is none.
///
/// The file is mapped, not copied, so what keeps the mapped bytes the ones
/// checked is how entries are made and opened: an entry is written under a
/// random name and renamed into place, never changed where it lies, so a
/// mapping keeps the file it was made from even when a new entry replaces
/// it (a new file); it is opened without following a symlink and used only
/// if it is a regular file of ours that only we can write; its trailer
/// says its exact length and the component it was compiled from, so a
/// truncated entry, or another component's entry renamed over it, is
/// rebuilt, never loaded; and wasmtime maps the very file checked (through
/// its `/proc/self/fd` link), not whatever the path names a moment later.
/// A process of this user that truncates an entry in place while it is
/// mapped can still crash this one; such a process can write the cache
/// directory, which is trusted like the host binary (see the module docs).
#[cfg(target_os = "linux")]
fn open_entry(
    engine: &Engine,
    path: &Path,
    digest: &blake3::Hash,
) -> Result<Option<Component>, Unusable> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    if !Path::new("/proc/self/fd").is_dir() {
        // No /proc to hand wasmtime the checked file by.
        return read_entry(engine, path, digest);
    }
    let Some((file, len)) = open_own(path)? else {
        return Ok(None);
    };
    let mut trailer = [0; TRAILER];
    let at = len.checked_sub(TRAILER as u64).ok_or(Unusable::Corrupt)?;
    file.read_exact_at(&mut trailer, at)?;
    payload_len(&trailer, len, digest).ok_or(Unusable::Corrupt)?;
    let checked = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: the file holds what `Component::serialize` wrote for this
    // engine configuration and this component (its trailer says so, and
    // says its exact length), and it is never modified in place: see above.
    // wasmtime ignores the trailer after the ELF image it parses.
    unsafe { Component::deserialize_file(engine, &checked) }
        .map(Some)
        .map_err(Unusable::Rejected)
}

/// Whether the entry at `path` is ours and its trailer is intact and names
/// `digest` (see [`open_entry`]).
#[cfg(unix)]
fn trailer_ok(path: &Path, digest: &blake3::Hash) -> bool {
    use std::os::unix::fs::FileExt;

    let Ok(Some((file, len))) = open_own(path) else {
        return false;
    };
    let mut trailer = [0; TRAILER];
    len.checked_sub(TRAILER as u64)
        .is_some_and(|at| file.read_exact_at(&mut trailer, at).is_ok())
        && payload_len(&trailer, len, digest).is_some()
}

#[cfg(not(unix))]
fn trailer_ok(_path: &Path, _digest: &blake3::Hash) -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
fn open_entry(
    engine: &Engine,
    path: &Path,
    digest: &blake3::Hash,
) -> Result<Option<Component>, Unusable> {
    read_entry(engine, path, digest)
}

/// Like `open_entry`, through a copy of the whole entry in memory.
fn read_entry(
    engine: &Engine,
    path: &Path,
    digest: &blake3::Hash,
) -> Result<Option<Component>, Unusable> {
    let Some(bytes) = read_own(path)? else {
        return Ok(None);
    };
    let at = bytes.len().checked_sub(TRAILER).ok_or(Unusable::Corrupt)?;
    let len = payload_len(&bytes[at..], bytes.len() as u64, digest).ok_or(Unusable::Corrupt)?;
    // SAFETY: the payload is what `Component::serialize` wrote for this
    // engine configuration and this component (its trailer says so).
    unsafe { Component::deserialize(engine, &bytes[..len]) }
        .map(Some)
        .map_err(Unusable::Rejected)
}

/// What follows `magic` and a matching checksum in `bytes`.
pub(super) fn verified_payload<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Option<&'a [u8]> {
    if bytes.len() < HEADER || &bytes[..magic.len()] != magic {
        return None;
    }
    let (sum, payload) = bytes[magic.len()..].split_at(HEADER - magic.len());
    (checksum(payload) == sum).then_some(payload)
}

/// `parts`, one after the other, as the file at `path`, written
/// atomically: a reader sees the old file, no file, or the new one, and a
/// file already open (or mapped) keeps its old contents.
pub(super) fn store(path: &Path, parts: &[&[u8]]) -> io::Result<()> {
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
    let written = parts
        .iter()
        .try_for_each(|part| file.write_all(part))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Note `payload` under `magic` with its checksum, as [`verified_payload`] reads it.
pub(super) fn store_note(path: &Path, magic: &[u8; 8], payload: &[u8]) -> io::Result<()> {
    store(path, &[magic, &checksum(payload), payload])
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
fn open_own(path: &Path) -> io::Result<Option<(std::fs::File, u64)>> {
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
    Ok(Some((file, meta.len())))
}

/// The whole of [`open_own`]'s file.
pub(super) fn read_own(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some((mut file, _)) = open_own(path)? else {
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
    fn a_flipped_byte_fails_a_notes_verification() {
        let payload = b"remembered tools".to_vec();
        let mut bytes = NOTE_MAGIC.to_vec();
        bytes.extend_from_slice(&checksum(&payload));
        bytes.extend_from_slice(&payload);
        assert_eq!(verified_payload(&bytes, NOTE_MAGIC), Some(&payload[..]));
        assert_eq!(verified_payload(&bytes, b"THCOTHER"), None);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(verified_payload(&bytes, NOTE_MAGIC), None);
        assert_eq!(verified_payload(b"short", NOTE_MAGIC), None);
    }

    #[test]
    fn a_trailer_names_its_entrys_exact_length_and_component() {
        let (ours, theirs) = (blake3::hash(b"ours"), blake3::hash(b"theirs"));
        let t = trailer(1000, &ours);
        let len = 1000 + TRAILER as u64;
        assert_eq!(payload_len(&t, len, &ours), Some(1000));
        // Another component's entry under our name.
        assert_eq!(payload_len(&t, len, &theirs), None);
        // Cut short or grown: the trailer read is not at the end it names.
        assert_eq!(payload_len(&t, len - 1, &ours), None);
        assert_eq!(payload_len(&t, len + 4096, &ours), None);
        assert_eq!(payload_len(&t, 10, &ours), None);
        // Any flipped bit.
        for i in 0..TRAILER {
            let mut bad = t;
            bad[i] ^= 0x10;
            assert_eq!(payload_len(&bad, len, &ours), None, "byte {i}");
        }
    }
}
