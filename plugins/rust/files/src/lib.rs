//! toolhost plugin `files`: reads text files from the directory its manifest
//! grants.
//!
//! The manifest maps the host directory `files.data` (beside the manifest)
//! to `/data` in the guest, read-only; nothing else on the host is visible.
//! Relative paths are resolved against the `root` config value (`/data`).
//! A path outside the grant, including a `..` escape from it, is `denied`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{ToolError, config, log};

/// Default and largest number of bytes `files_read` returns.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024;
/// Largest `max_bytes` accepted (stays under the manifest's output cap).
pub const MAX_BYTES_LIMIT: u64 = 192 * 1024;

/// Input of `files_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The file: absolute (e.g. `/data/hello.txt`) or relative to `/data`.
    pub path: String,
    /// Return at most this many bytes (default 65536, at most 196608).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// A file's text.
#[derive(Debug, Serialize)]
pub struct FileText {
    /// The path that was read, as the plugin sees it.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The text (the first `max_bytes` bytes of it).
    pub content: String,
    /// Whether `content` stops before the end of the file.
    pub truncated: bool,
}

/// Input of `files_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// The directory: absolute or relative to `/data`. Default: `/data`.
    #[serde(default)]
    pub dir: Option<String>,
}

/// A directory listing.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// The directory that was listed.
    pub dir: String,
    /// Its entries, sorted by name.
    pub entries: Vec<Entry>,
}

/// One directory entry.
#[derive(Debug, Serialize)]
pub struct Entry {
    /// The entry's name.
    pub name: String,
    /// `file`, `dir` or `other`.
    pub kind: &'static str,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

fn root() -> PathBuf {
    PathBuf::from(config("root").unwrap_or_else(|| "/data".to_owned()))
}

fn resolve(path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_owned()
    } else {
        root().join(path)
    }
}

/// Reads a text file.
///
/// # Errors
///
/// `denied` outside the grant, `invalid_input` for a `max_bytes` over the
/// limit, `failed` for a missing file, a directory or text that is not UTF-8.
pub fn read(input: ReadInput) -> Result<FileText, ToolError> {
    let max = input.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if max > MAX_BYTES_LIMIT {
        return Err(ToolError::invalid_input(format!(
            "`max_bytes` is {max}; the limit is {MAX_BYTES_LIMIT}"
        )));
    }
    let path = resolve(&input.path);
    let io = |e| ToolError::from_io_at(&path, e);
    let file = fs::File::open(&path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).map_err(io)?;
    let content = String::from_utf8(bytes).map_err(|e| {
        ToolError::failed(format!(
            "`{}` is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    log::info(format!(
        "read {} of {size} bytes from {}",
        content.len(),
        path.display()
    ));
    Ok(FileText {
        path: path.display().to_string(),
        size,
        truncated: (content.len() as u64) < size,
        content,
    })
}

/// Lists a directory.
///
/// # Errors
///
/// `denied` outside the grant, `failed` for a missing directory or a file.
pub fn list(input: ListInput) -> Result<Listing, ToolError> {
    let dir = input.dir.as_deref().map_or_else(root, resolve);
    let io = |e| ToolError::from_io_at(&dir, e);
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let meta = entry.metadata().map_err(io)?;
        let kind = if meta.is_file() {
            "file"
        } else if meta.is_dir() {
            "dir"
        } else {
            "other"
        };
        entries.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size: meta.is_file().then_some(meta.len()),
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    log::debug(format!(
        "listed {} entries of {}",
        entries.len(),
        dir.display()
    ));
    Ok(Listing {
        dir: dir.display().to_string(),
        entries,
    })
}

toolhost_guest::export_tools! {
    files_read: "Read a text file from the plugin's data directory (/data). \
                 Paths may be relative to /data." => read,
    files_list: "List the files and directories in the plugin's data directory (/data) \
                 or a subdirectory of it." => list,
}
