//! Component digests remembered by file stamp, so that an unchanged
//! `.wasm` is not read and hashed again at every start.
//!
//! A stamp is what the file system says about a file without reading it:
//! its device, inode, size, and modification and change times. The change
//! time moves on every write, and no one but the kernel sets it, so a file
//! with the same stamp holds the same bytes, with one exception git knows as
//! the "racy" file: a write in the same clock tick as the read that was
//! hashed leaves the times as they were. So a stamp is trusted only when the
//! file's times are older than the moment the stamp was taken (before the
//! read) by the settle time (`HostConfig::cache_stamp_settle_ms`, 2 s by
//! default: more than the coarsest file time granularity, FAT's); a file
//! changed just before a load is hashed again on the next one, until it
//! has been still for that long.
//!
//! Stamps live in the compile cache directory, one small file per plugin
//! path (named after the path's BLAKE3), checksummed like the cache's notes.
//! They only save reading and hashing: whoever can write them can write the
//! cache entries too. The integrity checks (pins, the lock file,
//! signatures) never use them: they hash the bytes they check.

use std::fs::Metadata;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::cache::{CompileCache, read_own, store_note, verified_payload};

/// Tags a stamp file.
const STAMP_MAGIC: &[u8; 8] = b"THCSTMP1";
const LEN: usize = 3 * 8 + 3 * 16 + 32;

/// A file's identity and times, as taken before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    /// When the stamp was taken (wall clock, ns since the epoch).
    taken_ns: i128,
}

impl FileStamp {
    /// The stamp of the regular file `path` names (through symlinks, as
    /// the read after it), or `None` if there is none or this platform does
    /// not say (stamps are kept on Unix only).
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let taken_ns = nanos(SystemTime::now())?;
        let meta = std::fs::metadata(path).ok()?;
        Self::from_meta(&meta, taken_ns)
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    #[cfg(unix)]
    fn from_meta(meta: &Metadata, taken_ns: i128) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() {
            return None;
        }
        let time = |secs: i64, ns: i64| i128::from(secs) * 1_000_000_000 + i128::from(ns);
        Some(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: time(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: time(meta.ctime(), meta.ctime_nsec()),
            taken_ns,
        })
    }

    #[cfg(not(unix))]
    fn from_meta(_meta: &Metadata, _taken_ns: i128) -> Option<Self> {
        None
    }

    /// Whether the file was still for `settle` before the stamp was taken,
    /// long enough for the stamp to pin its bytes.
    fn settled(&self, settle: Duration) -> bool {
        let margin = i128::try_from(settle.as_nanos()).unwrap_or(i128::MAX);
        self.mtime_ns.max(self.ctime_ns) + margin < self.taken_ns
    }

    fn same_file(&self, other: &Self) -> bool {
        (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
            == (
                other.dev,
                other.ino,
                other.size,
                other.mtime_ns,
                other.ctime_ns,
            )
    }

    fn encode(&self, digest: &blake3::Hash) -> [u8; LEN] {
        let mut out = [0; LEN];
        let fields = [self.dev, self.ino, self.size];
        for (i, v) in fields.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        let times = [self.mtime_ns, self.ctime_ns, self.taken_ns];
        for (i, v) in times.iter().enumerate() {
            out[24 + i * 16..40 + i * 16].copy_from_slice(&v.to_le_bytes());
        }
        out[72..].copy_from_slice(digest.as_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Option<(Self, blake3::Hash)> {
        let bytes: &[u8; LEN] = bytes.try_into().ok()?;
        let u = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        let t = |i: usize| i128::from_le_bytes(bytes[24 + i * 16..40 + i * 16].try_into().unwrap());
        let digest: [u8; 32] = bytes[72..].try_into().ok()?;
        let stamp = Self {
            dev: u(0),
            ino: u(1),
            size: u(2),
            mtime_ns: t(0),
            ctime_ns: t(1),
            taken_ns: t(2),
        };
        Some((stamp, blake3::Hash::from_bytes(digest)))
    }
}

fn nanos(time: SystemTime) -> Option<i128> {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    i128::try_from(since.as_nanos()).ok()
}

impl CompileCache {
    /// The digest of the file at `path` as it was when `stamp` was taken,
    /// if a settled stamp of the very same file is remembered.
    pub(crate) fn known_digest(&self, path: &Path, stamp: &FileStamp) -> Option<blake3::Hash> {
        let bytes = read_own(&self.stamp_path(path)?).ok()??;
        let (kept, digest) = FileStamp::decode(verified_payload(&bytes, STAMP_MAGIC)?)?;
        (kept.settled(self.settle) && kept.same_file(stamp)).then_some(digest)
    }

    /// Remember that the file at `path` with `stamp` (taken before it was
    /// read) hashed to `digest`; nothing is kept for a file that changed
    /// too recently to be told apart by its stamp.
    pub(crate) fn remember_digest(&self, path: &Path, stamp: &FileStamp, digest: &blake3::Hash) {
        if !stamp.settled(self.settle) {
            return;
        }
        if let Some(at) = self.stamp_path(path)
            && let Err(e) = store_note(&at, STAMP_MAGIC, &stamp.encode(digest))
        {
            tracing::debug!(path = %at.display(), "could not write a file stamp: {e}");
        }
    }

    fn stamp_path(&self, path: &Path) -> Option<std::path::PathBuf> {
        let dir = self.dir.as_ref()?;
        let path = std::path::absolute(path).ok()?;
        let key = blake3::hash(path.as_os_str().as_encoded_bytes());
        Some(dir.join(format!("{}.stamp", key.to_hex())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(changed_ns: i128, taken_ns: i128) -> FileStamp {
        FileStamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: changed_ns,
            ctime_ns: changed_ns,
            taken_ns,
        }
    }

    #[test]
    fn a_stamp_round_trips_and_only_a_settled_one_is_trusted() {
        let digest = blake3::hash(b"component");
        let s = stamp(1_000, 10_000_000_000);
        assert_eq!(FileStamp::decode(&s.encode(&digest)), Some((s, digest)));
        let settle = Duration::from_secs(2);
        assert!(s.settled(settle));
        // Changed within the margin of being read: could change again unseen.
        assert!(!stamp(9_000_000_000, 10_000_000_000).settled(settle));
        // Unless the file system's times are trusted to that fine a grain.
        assert!(stamp(9_000_000_000, 10_000_000_000).settled(Duration::from_millis(10)));
        assert!(!stamp(10_000_000_000, 10_000_000_000).settled(Duration::ZERO));
        let moved = FileStamp { ino: 9, ..s };
        assert!(!s.same_file(&moved));
        let touched = FileStamp {
            ctime_ns: 2_000,
            ..s
        };
        assert!(!s.same_file(&touched));
        // When it was taken is not part of what the file is.
        assert!(s.same_file(&FileStamp { taken_ns: 1, ..s }));
    }
}
