//! Opening files inside a grant: regular files and directories only, and a
//! bounded number of them per store.
//!
//! wasmtime-wasi opens a guest's file with a plain `open(2)` on tokio's
//! blocking pool. Opening a FIFO for reading blocks until a writer comes,
//! and reading a FIFO, socket or terminal blocks until data comes: a call
//! that does so times out, but the pool thread stays blocked for good and
//! the process cannot shut down. Nothing a tool needs lives in such a file,
//! so the host replaces `wasi:filesystem/types` `[method]descriptor.open-at`
//! with its own: the same flags, permission checks and sandboxed path
//! resolution (`cap-primitives`, the library wasmtime-wasi itself uses), but
//! the file is opened with `O_NONBLOCK | O_NOCTTY`, checked with `fstat` on
//! the handle it got (so a rename in between changes nothing), and refused
//! with `access` unless it is a regular file or a directory. Only then is
//! `O_NONBLOCK` cleared and the handle given to the guest.
//!
//! The same function counts the handles the guest holds. Each store may have
//! [`MAX_OPEN_HANDLES`] open at once; one more open fails with `quota`
//! (the guest's own `EDQUOT`; WASI has no `EMFILE`), so a guest that opens
//! files in a loop runs out of handles of its own, never the host's.

use std::path::Path;
use std::sync::Arc;

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::OpenMode;
use wasmtime_wasi::filesystem::{Descriptor, Dir, File};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, OpenFlags, PathFlags,
};

use super::state::StoreState;

/// Most files and directories one store may hold open at once (the
/// preopened grants not counted).
pub(crate) const MAX_OPEN_HANDLES: usize = 128;

/// The WASI interface whose `open-at` is replaced; the version
/// wasmtime-wasi 48 links (guests importing an older 0.2.x match it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Put the host's `open-at` in place of wasmtime-wasi's in `linker` (which
/// must already have WASI p2 linked).
pub(crate) fn link(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = linker.instance(FILESYSTEM_TYPES).and_then(|mut types| {
        types.func_wrap_async(
            "[method]descriptor.open-at",
            |mut store: StoreContextMut<'_, StoreState>,
             (fd, path_flags, path, oflags, flags): (
                Resource<Descriptor>,
                PathFlags,
                String,
                OpenFlags,
                DescriptorFlags,
            )| {
                Box::new(async move {
                    let opened =
                        open_at(store.data_mut(), fd, path_flags, path, oflags, flags).await?;
                    Ok((opened,))
                })
            },
        )
    });
    linker.allow_shadowing(false);
    result
}

/// What one open asks for, checked the way wasmtime-wasi checks it.
struct Request {
    options: cap_primitives::fs::OpenOptions,
    mode: OpenMode,
    writes: bool,
    directory: bool,
}

fn request(
    path_flags: PathFlags,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<Request, ErrorCode> {
    use cap_primitives::fs::{FollowSymlinks, OpenOptions};

    let mut options = OpenOptions::new();
    let mut mode = OpenMode::empty();
    let mut writes = false;
    if oflags.contains(OpenFlags::CREATE) {
        if oflags.contains(OpenFlags::EXCLUSIVE) {
            options.create_new(true);
        } else {
            options.create(true);
        }
        options.write(true);
        mode |= OpenMode::WRITE;
        writes = true;
    }
    if oflags.contains(OpenFlags::TRUNCATE) {
        options.truncate(true).write(true);
        mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::READ) {
        options.read(true);
        mode |= OpenMode::READ;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        options.write(true);
        mode |= OpenMode::WRITE;
    } else {
        // Opened for reading so the OS lets it be opened at all; the
        // descriptor's mode still refuses writes.
        options.read(true);
        mode |= OpenMode::READ;
    }
    // The hidden methods are what cap-fs-ext's `OpenOptionsFollowExt` and
    // `OpenOptionsSyncExt` call; cap-primitives is pinned to the version
    // wasmtime-wasi uses.
    options._cap_fs_ext_follow(if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    });
    options._cap_fs_ext_nonblock(true);
    #[cfg(windows)]
    options._cap_fs_ext_maybe_dir(true);
    #[cfg(unix)]
    {
        use cap_primitives::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOCTTY);
    }
    if flags.contains(DescriptorFlags::FILE_INTEGRITY_SYNC)
        || flags.contains(DescriptorFlags::DATA_INTEGRITY_SYNC)
        || flags.contains(DescriptorFlags::REQUESTED_WRITE_SYNC)
    {
        return Err(ErrorCode::Unsupported);
    }
    let directory = oflags.contains(OpenFlags::DIRECTORY);
    if directory
        && (oflags.contains(OpenFlags::CREATE)
            || oflags.contains(OpenFlags::EXCLUSIVE)
            || oflags.contains(OpenFlags::TRUNCATE))
    {
        return Err(ErrorCode::Invalid);
    }
    Ok(Request {
        writes: writes || mode.contains(OpenMode::WRITE),
        options,
        mode,
        directory,
    })
}

enum Opened {
    Dir(std::fs::File),
    File(std::fs::File),
}

/// `[method]descriptor.open-at`. An `Err` is a trap (a bad handle); the
/// inner `Err` is the error code the guest sees.
async fn open_at(
    state: &mut StoreState,
    fd: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Resource<Descriptor>, ErrorCode>> {
    let parent = match state.table.get(&fd)? {
        Descriptor::Dir(d) => d.clone(),
        Descriptor::File(_) => return Ok(Err(ErrorCode::NotDirectory)),
    };
    let request = match request(path_flags, oflags, flags) {
        Ok(r) => r,
        Err(code) => return Ok(Err(code)),
    };
    if parent.perms.write_not_permitted() && request.writes {
        return Ok(Err(ErrorCode::NotPermitted));
    }
    if state.handles.live() >= MAX_OPEN_HANDLES {
        return Ok(Err(ErrorCode::Quota));
    }
    let dir = Arc::clone(&parent.dir);
    let directory = request.directory;
    let opened = tokio::task::spawn_blocking(move || {
        open_checked(&dir, Path::new(&path), &request.options, directory)
    })
    .await?;
    let descriptor = match opened {
        Ok(Opened::Dir(d)) => Descriptor::Dir(Dir::new(d, parent.perms, request.mode, false)),
        Ok(Opened::File(f)) => Descriptor::File(File::new(f, parent.perms, request.mode, false)),
        Err(code) => return Ok(Err(code)),
    };
    let handle = match &descriptor {
        Descriptor::Dir(d) => Arc::downgrade(&d.dir),
        Descriptor::File(f) => Arc::downgrade(&f.file),
    };
    let pushed = state.table.push(descriptor)?;
    state.handles.open.push(handle);
    Ok(Ok(pushed))
}

/// Open `path` under `dir` without blocking, and keep it only if it is a
/// regular file or a directory.
fn open_checked(
    dir: &std::fs::File,
    path: &Path,
    options: &cap_primitives::fs::OpenOptions,
    directory: bool,
) -> Result<Opened, ErrorCode> {
    let file = cap_primitives::fs::open(dir, path, options)?;
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Ok(Opened::Dir(file));
    }
    if directory {
        return Err(ErrorCode::NotDirectory);
    }
    if !kind.is_file() {
        // A FIFO, socket or device: reading it could block a host thread
        // for good, so the guest never gets it.
        return Err(ErrorCode::Access);
    }
    clear_nonblocking(&file)?;
    Ok(Opened::File(file))
}

#[cfg(unix)]
fn clear_nonblocking(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open for as long as `file` lives; F_GETFL and F_SETFL
    // only read and set its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(unix))]
fn clear_nonblocking(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}
