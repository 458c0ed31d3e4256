//! Test fixture: tries to reach outside its grants. The manifest grants
//! `/data` read-only (holding `allowed.txt`) and no environment variables.
//!
//! - `hostile_read {"path": P}` reads P and returns `{"path", "content"}`.
//!   Expected: `/data/allowed.txt` succeeds; `/etc/passwd`,
//!   `/data/../../etc/passwd`, `../etc/passwd` and `/` paths outside `/data`
//!   end with `permission_denied` (the guest reports `denied`), never with
//!   the host file's content.
//! - `hostile_list {"dir": D}` lists D: `{"entries": [names]}`; `/data` works,
//!   `/` and `/etc` are `permission_denied`.
//! - `hostile_write {"path": P}` tries to create P. Expected:
//!   `permission_denied` for `/data/new.txt` (the grant is read-only) and
//!   for paths outside the grant.
//! - `hostile_env {"key": K}` reads env var K and lists every variable it can
//!   see: `{"key", "value": null|string, "visible": [names]}`. It succeeds;
//!   with no env grant, expect `value: null` and `visible: []` even when the
//!   host process has K set.

use std::fs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::ToolError;

/// A path to try.
#[derive(Deserialize, JsonSchema)]
struct PathInput {
    /// The path, as the guest sees it.
    path: String,
}

#[derive(Serialize)]
struct FileContent {
    path: String,
    content: String,
}

fn read(input: PathInput) -> Result<FileContent, ToolError> {
    let content =
        fs::read_to_string(&input.path).map_err(|e| ToolError::from_io_at(&input.path, e))?;
    Ok(FileContent {
        path: input.path,
        content,
    })
}

/// A directory to try.
#[derive(Deserialize, JsonSchema)]
struct DirInput {
    /// The directory, as the guest sees it.
    dir: String,
}

#[derive(Serialize)]
struct Listing {
    entries: Vec<String>,
}

fn list(input: DirInput) -> Result<Listing, ToolError> {
    let io = |e| ToolError::from_io_at(&input.dir, e);
    let mut entries = Vec::new();
    for entry in fs::read_dir(&input.dir).map_err(io)? {
        entries.push(
            entry
                .map_err(io)?
                .file_name()
                .to_string_lossy()
                .into_owned(),
        );
    }
    entries.sort();
    Ok(Listing { entries })
}

#[derive(Serialize)]
struct Written {
    path: String,
}

fn write(input: PathInput) -> Result<Written, ToolError> {
    fs::write(&input.path, "written by hostile_write\n")
        .map_err(|e| ToolError::from_io_at(&input.path, e))?;
    Ok(Written { path: input.path })
}

/// An environment variable to try.
#[derive(Deserialize, JsonSchema)]
struct EnvInput {
    /// The variable's name.
    key: String,
}

#[derive(Serialize)]
struct EnvSeen {
    key: String,
    value: Option<String>,
    visible: Vec<String>,
}

fn env(input: EnvInput) -> Result<EnvSeen, ToolError> {
    let mut visible: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    visible.sort();
    Ok(EnvSeen {
        value: std::env::var(&input.key).ok(),
        key: input.key,
        visible,
    })
}

toolhost_guest::export_tools! {
    hostile_read: "Test fixture: reads any path it is given." => read,
    hostile_list: "Test fixture: lists any directory it is given." => list,
    hostile_write: "Test fixture: writes any path it is given." => write,
    hostile_env: "Test fixture: reads any environment variable." => env,
}
