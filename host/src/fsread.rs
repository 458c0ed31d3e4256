//! Reading a file the host was pointed at: one reader for every file it
//! reads (a plugin's component, manifest and signature, the lock file, the
//! host config, a key, a transcript, a recording, a REST declaration).
//!
//! A path names whatever is there when it is opened, and anyone who can
//! write its directory decides what that is. So a file is opened without
//! blocking (a FIFO must not stall the host), must be a regular file (not
//! a FIFO, a device such as `/dev/zero`, a socket or a directory; through a
//! symlink too), and is read up to a cap for its kind and no further (a
//! file that grows while it is read is refused, not read without end).
//!
//! ```
//! use toolhost::fsread::{self, HOST_CONFIG_MAX_BYTES};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("toolhost.toml");
//! std::fs::write(&path, "max_instances = 8\n").unwrap();
//! let text = fsread::read_text(&path, HOST_CONFIG_MAX_BYTES, None).unwrap();
//! assert_eq!(text, "max_instances = 8\n");
//!
//! let error = fsread::read_bytes(dir.path(), 1024, None).unwrap_err();
//! assert!(error.to_string().starts_with("not a regular file"), "{error}");
//! ```

use std::io::{self, Read};
use std::path::Path;

/// The most of a host config (`toolhost.toml`) that is read: 1 MiB.
pub const HOST_CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The most of a lock file (`toolhost.lock`) that is read: 4 MiB, some
/// 20 000 plugins.
pub const LOCK_FILE_MAX_BYTES: u64 = 4 << 20;

/// The most of a signing key file that is read: 4 KiB (a key is one line).
pub const KEY_FILE_MAX_BYTES: u64 = 4 << 10;

/// The most of a transcript or a message history (`run --resume`,
/// `--history`) that is read: 64 MiB.
pub const TRANSCRIPT_MAX_BYTES: u64 = 64 << 20;

/// The most of a recorded provider conversation (replay) that is read:
/// 64 MiB.
pub const RECORDING_MAX_BYTES: u64 = 64 << 20;

/// The whole of the regular file at `path`, at most `max` bytes. `setting`
/// names the host config setting that raises the cap, if one does (it is
/// part of the error).
///
/// # Errors
///
/// The file cannot be opened (`NotFound` when it is not there), it is not
/// a regular file (`not a regular file ...`), or it has more than `max`
/// bytes (`over N bytes ...`), also when it grew past them while being
/// read.
pub fn read_bytes(path: &Path, max: u64, setting: Option<&str>) -> io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(
            "not a regular file (a FIFO, device, socket or directory); replace it with a file",
        ));
    }
    let raise = match setting {
        Some(key) => format!("make it smaller or raise `{key}` in the host config"),
        None => "make it smaller".to_owned(),
    };
    if meta.len() > max {
        return Err(io::Error::other(format!(
            "over {max} bytes (it has {}), the most read of such a file; {raise}",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::other(format!(
            "over {max} bytes: it grew past them while being read; {raise}"
        )));
    }
    Ok(bytes)
}

/// Like [`read_bytes`], as UTF-8 text.
///
/// # Errors
///
/// As [`read_bytes`], and `InvalidData` when the bytes are not UTF-8.
pub fn read_text(path: &Path, max: u64, setting: Option<&str>) -> io::Result<String> {
    String::from_utf8(read_bytes(path, max, setting)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not UTF-8 text; save it as UTF-8",
        )
    })
}

/// [`read_bytes`] with the cap set by host config setting `key`: what
/// plugin files (components, manifests, signatures, REST declarations)
/// are read with.
///
/// # Errors
///
/// As [`read_bytes`].
pub fn read_regular(path: &Path, max: u64, key: &str) -> io::Result<Vec<u8>> {
    read_bytes(path, max, Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_bytes(dir.path(), 1 << 20, None).unwrap_err();
        assert!(
            error.to_string().starts_with("not a regular file"),
            "{error}"
        );
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let error = read_text(&fifo, 1 << 20, None).unwrap_err();
            assert!(
                error.to_string().starts_with("not a regular file"),
                "{error}"
            );
            let zero = dir.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            let error = read_bytes(&zero, 1 << 20, Some("plugins.max_manifest_bytes")).unwrap_err();
            assert!(
                error.to_string().starts_with("not a regular file"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_file_over_its_cap_is_refused_naming_the_cap_and_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'a'; 2048]).unwrap();
        let error = read_bytes(&path, 1024, Some("plugins.max_manifest_bytes")).unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("over 1024 bytes"), "{text}");
        assert!(text.contains("plugins.max_manifest_bytes"), "{text}");
        assert_eq!(read_bytes(&path, 2048, None).unwrap().len(), 2048);
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let error = read_text(&path, 1024, None).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let missing = read_bytes(&dir.path().join("none"), 1, None).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
