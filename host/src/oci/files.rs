//! Writing a pulled plugin so that hot reload never sees half of it, and
//! the sink a blob streams into (capped, hashed as it comes).

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use sha2::Digest as _;

use crate::signing::Sha256Digest;

/// A blob in memory: at most `max` bytes (more is an error the moment it
/// arrives, so a registry cannot make us hold more), hashed as it streams.
pub(super) struct CappedSink {
    pub bytes: Vec<u8>,
    max: u64,
    hasher: sha2::Sha256,
}

impl CappedSink {
    pub fn new(max: u64) -> Self {
        Self {
            bytes: Vec::new(),
            max,
            hasher: sha2::Sha256::new(),
        }
    }

    pub fn finish(self) -> (Vec<u8>, Sha256Digest) {
        let digest: [u8; 32] = self.hasher.finalize().into();
        let digest = hex::encode(digest)
            .parse()
            .expect("64 hex digits are a digest");
        (self.bytes, digest)
    }
}

/// The message of the error a [`CappedSink`] returns when full; the pull
/// recognises it in the I/O error the client hands back.
pub(super) const OVER_CAP: &str = "blob larger than its cap";

impl tokio::io::AsyncWrite for CappedSink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.bytes.len() as u64 + buf.len() as u64 > self.max {
            return Poll::Ready(Err(io::Error::other(OVER_CAP)));
        }
        self.hasher.update(buf);
        self.bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same
/// directory (a name no loader picks up), synced, then renamed over it.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("plugin");
    let temp = dir.join(format!(
        ".{file_name}.{:016x}.partial",
        rand::random::<u64>()
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// The files of one plugin, written into `dir` as `NAME.toml`,
/// `NAME.wasm.sig` and, last, `NAME.wasm`: a watcher that reacts to the
/// component sees its manifest and signature already there. A manifest or
/// signature the artifact lacks is removed, so a stale one is not paired
/// with the new component.
pub(super) fn write_plugin(
    dir: &Path,
    name: &str,
    component: &[u8],
    manifest: Option<&[u8]>,
    signature: Option<&[u8]>,
) -> io::Result<PathBuf> {
    let wasm = dir.join(format!("{name}.wasm"));
    let sidecars = [
        (dir.join(format!("{name}.toml")), manifest),
        (crate::signing::signature_path(&wasm), signature),
    ];
    for (path, bytes) in sidecars {
        match bytes {
            Some(bytes) => write_atomic(&path, bytes)?,
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
        }
    }
    write_atomic(&wasm, component)?;
    Ok(wasm)
}
