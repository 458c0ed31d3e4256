//! Test fixture: attacks on the host through I/O, logs, errors and file
//! handles. The manifest grants `/data` read-only (holding `a.txt`) and
//! makes the plugin stateful (calls without a session are still fresh).
//!
//! - `hostile_io_open_many {"dir", "count", "hold_ms"}` opens the first
//!   regular file in `dir` `count` times, keeping every handle, then sleeps
//!   `hold_ms` with them open (logging `holding N handles`, info, once they
//!   are open). Returns `{"opened": N, "error": null|text}`:
//!   it stops at the first failed open. Expected: the host's per-store
//!   handle cap stops it (`opened` at most the cap, `error` set) while other
//!   calls and the host keep opening files.
//! - `hostile_io_read_fifo {"path"}` reads `path` (a FIFO the test made in
//!   the grant). Expected: an error at once (`permission_denied`), never a
//!   host thread blocked for good.
//! - `hostile_io_big_error {"bytes"}` fails with a message of `bytes` bytes.
//!   Expected: the message is cut to the plugin's budget and says so.
//! - `hostile_io_escape_error` fails with a message full of control
//!   characters (`ESC[2J`, `\r`, `\n[INFO] forged`, a bidi override).
//!   Expected: logs and terminals show them escaped; `--json` stays JSON.
//! - `hostile_io_log_inject` logs a line with a newline and escape sequences,
//!   then succeeds. Expected: one escaped log line, no forged line.
//! - `hostile_io_stderr_flood {"bytes"}` writes `bytes` bytes to stderr with
//!   `eprint!`, then succeeds. Expected: success (the host drops what it
//!   does not keep; it never fails the write, which would panic the guest).
//! - `hostile_io_stderr_note {"text"}` writes `text` to stderr, succeeds.
//! - `hostile_io_panic {"message"}` panics with `message`. Expected: a `trap`
//!   whose message holds this call's stderr only.

use std::fs::{self, File};
use std::io::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{NoInput, ToolError};

/// How many files to open, and how long to hold them.
#[derive(Deserialize, JsonSchema)]
struct OpenManyInput {
    /// A directory with at least one regular file.
    dir: String,
    /// How many times to open it.
    count: u32,
    /// Milliseconds to keep every handle open before returning.
    #[serde(default)]
    hold_ms: u64,
}

#[derive(Serialize)]
struct OpenMany {
    opened: u32,
    error: Option<String>,
}

fn open_many(input: OpenManyInput) -> Result<OpenMany, ToolError> {
    let io = |e| ToolError::from_io_at(&input.dir, e);
    let mut target = None;
    for entry in fs::read_dir(&input.dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_type().map_err(io)?.is_file() {
            target = Some(entry.path());
            break;
        }
    }
    let target = target.ok_or_else(|| ToolError::invalid_input("no regular file in `dir`"))?;
    let mut held = Vec::new();
    let mut error = None;
    for _ in 0..input.count {
        match File::open(&target) {
            Ok(f) => held.push(f),
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    // The event a test waits on: the handles are held from here on.
    toolhost_guest::log::info(format!("holding {} handles", held.len()));
    std::thread::sleep(std::time::Duration::from_millis(input.hold_ms));
    Ok(OpenMany {
        opened: u32::try_from(held.len()).unwrap_or(u32::MAX),
        error,
    })
}

/// A path to read.
#[derive(Deserialize, JsonSchema)]
struct PathInput {
    /// The path, as the guest sees it.
    path: String,
}

#[derive(Serialize)]
struct Read {
    bytes: usize,
}

fn read_fifo(input: PathInput) -> Result<Read, ToolError> {
    let bytes = fs::read(&input.path).map_err(|e| ToolError::from_io_at(&input.path, e))?;
    Ok(Read { bytes: bytes.len() })
}

/// A size in bytes.
#[derive(Deserialize, JsonSchema)]
struct BytesInput {
    /// How many bytes.
    bytes: usize,
}

fn big_error(input: BytesInput) -> Result<(), ToolError> {
    Err(ToolError::failed("E".repeat(input.bytes)))
}

fn escape_error(_: NoInput) -> Result<(), ToolError> {
    Err(ToolError::failed(
        "innocent\u{1b}[2J\u{1b}[31mred\r\n[INFO] forged line\u{202e}desrever",
    ))
}

#[derive(Serialize)]
struct Done {
    done: bool,
}

fn log_inject(_: NoInput) -> Result<Done, ToolError> {
    toolhost_guest::log::warn("first\n[ERROR] toolhost: forged line\u{1b}[2J\rend");
    Ok(Done { done: true })
}

fn stderr_flood(input: BytesInput) -> Result<Written, ToolError> {
    let chunk = "x".repeat(1023) + "\n";
    let mut left = input.bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        eprint!("{}", &chunk[..n]);
        left -= n;
    }
    let _ = std::io::stderr().flush();
    Ok(Written {
        written: input.bytes,
    })
}

#[derive(Serialize)]
struct Written {
    written: usize,
}

/// Text to write.
#[derive(Deserialize, JsonSchema)]
struct TextInput {
    /// The text.
    text: String,
}

fn stderr_note(input: TextInput) -> Result<Done, ToolError> {
    eprintln!("{}", input.text);
    Ok(Done { done: true })
}

/// A panic message.
#[derive(Deserialize, JsonSchema)]
struct PanicInput {
    /// The message.
    message: String,
}

fn panic(input: PanicInput) -> Result<(), ToolError> {
    panic!("{}", input.message);
}

toolhost_guest::export_tools! {
    hostile_io_open_many: "Test fixture: opens a file many times and keeps the handles." => open_many,
    hostile_io_read_fifo: "Test fixture: reads any path, a FIFO included." => read_fifo,
    hostile_io_big_error: "Test fixture: fails with a huge message." => big_error,
    hostile_io_escape_error: "Test fixture: fails with control characters in its message." => escape_error,
    hostile_io_log_inject: "Test fixture: logs a line with a newline and escape sequences." => log_inject,
    hostile_io_stderr_flood: "Test fixture: floods stderr, then succeeds." => stderr_flood,
    hostile_io_stderr_note: "Test fixture: writes a note to stderr, then succeeds." => stderr_note,
    hostile_io_panic: "Test fixture: panics with the given message." => panic,
}
