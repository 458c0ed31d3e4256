//! What a plugin may touch, and the handles that hold it to exactly that.
//!
//! A directory grant is checked once, when the plugin is loaded (its
//! canonical path must lie under an allowed root), and opened once, then.
//! Every call maps *that* directory into its guest, not whatever the path
//! names at call time: a symlink swapped in later, say by a plugin with a
//! read-write grant on a parent, cannot widen the grant. On Linux the
//! handle is kept open and each call re-opens it through `/proc/self/fd`;
//! elsewhere each call checks the path still names the same directory
//! (device and inode) and refuses the call if it does not.
//!
//! Environment grants carry their values to the guest, and nowhere else:
//! [`EnvVar`]'s `Debug` hides the value and its `Serialize` writes the name
//! only, so no listing, log or JSON output can show a secret by accident.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::http::HttpGrant;

/// What a plugin may touch. Empty means nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Permissions {
    /// Host directories visible to the guest.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the guest sees (serialized as names only).
    pub env: Vec<EnvVar>,
    /// Where the guest may send HTTP requests (left out of JSON when empty).
    #[serde(skip_serializing_if = "HttpGrant::is_empty")]
    pub http: HttpGrant,
}

/// One environment variable passed to the guest. Its value is only ever
/// handed to the guest: `Debug` and `Serialize` show the name alone.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvVar {
    name: String,
    value: String,
}

impl EnvVar {
    /// The variable `name` with `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }

    /// The variable's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value, for the guest's environment. Never print it.
    pub(crate) fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for EnvVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=<redacted>", self.name)
    }
}

impl Serialize for EnvVar {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name)
    }
}

/// One host directory mapped into the guest, opened when it was granted.
#[derive(Clone, Serialize)]
pub struct DirGrant {
    /// The directory on the host (canonical, as checked when granted).
    pub host: PathBuf,
    /// Where the guest sees it, e.g. `/data`.
    pub guest: String,
    /// Whether the guest may create, change and delete files in it.
    pub writable: bool,
    #[serde(skip)]
    handle: Arc<Handle>,
}

/// The directory a grant was checked against.
struct Handle {
    /// Kept open for the grant's lifetime (Linux: an `O_PATH` handle).
    file: File,
    /// Device and inode, for platforms where calls re-check the path.
    id: (u64, u64),
}

impl DirGrant {
    /// Open `host` (a canonical path, already checked against the allowed
    /// roots) for mapping at `guest`.
    ///
    /// # Errors
    ///
    /// `host` cannot be opened, is not a directory, or is not what the path
    /// named when it was checked (a component was swapped for a symlink).
    pub fn open(host: PathBuf, guest: String, writable: bool) -> io::Result<Self> {
        let file = open_dir_nofollow(&host)?;
        let meta = file.metadata()?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory",
                host.display()
            )));
        }
        #[cfg(target_os = "linux")]
        if let Some(opened) = fd_path(&file)
            && let Ok(now) = std::fs::read_link(&opened)
            && now != host
        {
            return Err(io::Error::other(format!(
                "{} changed while it was being opened (it now leads to {}); refusing the grant",
                host.display(),
                now.display()
            )));
        }
        Ok(Self {
            host,
            guest,
            writable,
            handle: Arc::new(Handle {
                id: file_id(&meta),
                file,
            }),
        })
    }

    /// The path a call should preopen so the guest gets the very directory
    /// that was granted.
    ///
    /// # Errors
    ///
    /// (Without `/proc`.) The path no longer names the granted directory.
    pub(crate) fn preopen_path(&self) -> io::Result<PathBuf> {
        #[cfg(target_os = "linux")]
        if let Some(path) = fd_path(&self.handle.file) {
            return Ok(path);
        }
        let now = std::fs::symlink_metadata(&self.host)?;
        if !now.is_dir() || file_id(&now) != self.handle.id {
            return Err(io::Error::other(format!(
                "{} is no longer the directory that was granted (it was replaced or \
                 swapped for a symlink); reload the plugin to grant what is there now",
                self.host.display()
            )));
        }
        Ok(self.host.clone())
    }
}

impl fmt::Debug for DirGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirGrant")
            .field("host", &self.host)
            .field("guest", &self.guest)
            .field("writable", &self.writable)
            .finish_non_exhaustive()
    }
}

/// Two grants are equal when they map the same directory the same way.
impl PartialEq for DirGrant {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host
            && self.guest == other.guest
            && self.writable == other.writable
            && self.handle.id == other.handle.id
    }
}

impl Eq for DirGrant {}

#[cfg(unix)]
fn open_dir_nofollow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    #[cfg(target_os = "linux")]
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

#[cfg(not(unix))]
fn open_dir_nofollow(path: &Path) -> io::Result<File> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other(format!("{} is a symlink", path.display())));
    }
    File::open(path)
}

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// `/proc/self/fd/N` for `file`, when `/proc` is mounted: opening it opens
/// the file itself, whatever its path names now.
#[cfg(target_os = "linux")]
fn fd_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    path.symlink_metadata().is_ok().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_never_show() {
        let p = Permissions {
            dirs: Vec::new(),
            env: vec![EnvVar::new("TOKEN", "s3cr3t-value")],
            http: HttpGrant::default(),
        };
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"dirs":[],"env":["TOKEN"]}"#);
        let debug = format!("{p:?}");
        assert!(
            debug.contains("TOKEN") && !debug.contains("s3cr3t"),
            "{debug}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_swapped_directory_is_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let granted = root.path().join("granted");
        let outside = root.path().join("outside");
        std::fs::create_dir(&granted).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(granted.join("mine.txt"), "mine").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        let grant = DirGrant::open(granted.canonicalize().unwrap(), "/data".into(), false).unwrap();

        std::fs::rename(&granted, root.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, &granted).unwrap();

        match grant.preopen_path() {
            Ok(path) => {
                assert!(
                    path.join("mine.txt").exists(),
                    "still the granted directory"
                );
                assert!(!path.join("secret.txt").exists());
            }
            Err(e) => assert!(e.to_string().contains("no longer"), "{e}"),
        }
        // A symlink is never granted in the first place.
        assert!(DirGrant::open(granted, "/data".into(), false).is_err());
    }
}
