//! What `toolhost run` writes as it goes and when it is done: progress
//! lines and streamed text on stderr, the `--json` summary, the
//! `--log-calls` file and the `--transcript` file.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;
use toolhost::runner::{CallRecord, RunOutcome, Transcript};
use toolhost::text::{escape_controls_keep_lines, escape_json_controls};
use toolhost::tools::CallLog;

use crate::UsageError;

/// What `run` writes on stderr as it goes: progress lines (none with
/// `-q`, which leaves errors only) and the streamed answer (`--stream`
/// asked for it, so it is shown with `-q` too). A line never starts where
/// streamed text left off: the text's line is ended first.
#[derive(Clone)]
pub(super) struct Progress {
    quiet: bool,
    /// Whether streamed text left the cursor mid-line.
    mid_line: Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    pub(super) fn new(quiet: bool) -> Self {
        Self {
            quiet,
            mid_line: Arc::default(),
        }
    }

    pub(super) fn line(&self, line: std::fmt::Arguments<'_>) {
        // Also with `-q`: the texts of two replies stay on lines of their own.
        self.end_line();
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    pub(super) fn text(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(escape_controls_keep_lines(text).as_bytes());
        let _ = err.flush();
        self.mid_line
            .store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
    }

    /// End the streamed text's line, if it left one open.
    pub(super) fn end_line(&self) {
        if self
            .mid_line
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!();
        }
    }
}

/// The `--json` object. `"final"` is this run's answer only: `null` when
/// the run stored no reply (never the resumed history's last answer).
pub(super) fn summary(outcome: &RunOutcome) -> serde_json::Value {
    json!({
        "final": outcome.final_message().map(|m| m.content.as_str()),
        "stop_reason": outcome.stop_reason.as_str(),
        "iterations": outcome.iterations,
        "tool_calls": outcome.tool_calls,
        "usage": outcome.usage,
    })
}

/// The `--log-calls` log: a small ring (the file is the record) whose sink
/// appends each entry to `path` as one JSON line.
pub(super) fn call_log(path: &Path, io: bool) -> anyhow::Result<CallLog> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(path)
        .with_context(|| format!("--log-calls: cannot open {}", path.display()))
        .map_err(UsageError)?;
    let file = std::sync::Mutex::new(file);
    let warned = std::sync::atomic::AtomicBool::new(false);
    let shown = path.display().to_string();
    let log = CallLog::new(256, 256 * 1024).with_sink(move |entry| {
        let Ok(line) = serde_json::to_string(entry) else {
            return;
        };
        let line = escape_json_controls(&line).into_owned() + "\n";
        let written = file
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written
            && !warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!("toolhost: cannot write the call log to {shown}: {e}");
        }
    });
    Ok(if io { log.with_io(4096) } else { log })
}

/// One entry of `--json`'s `"calls"`: what was called, how it went, and
/// the effective options it ran under (`null` when it was not run).
pub(super) fn call_summary(record: &CallRecord) -> serde_json::Value {
    json!({
        "name": record.call.name,
        "id": record.call.id,
        "status": record.status,
        "error_kind": record.error_kind,
        "duration_ms": u64::try_from(record.duration.as_millis()).unwrap_or(u64::MAX),
        "attempts": record.attempts,
        "options": record.options,
    })
}

/// The run's [`Transcript`], with the run's error: what `--resume` reads.
pub(super) fn write_transcript(
    path: &Path,
    outcome: &RunOutcome,
    error: Option<&str>,
) -> anyhow::Result<()> {
    let mut transcript = Transcript::from_outcome(outcome);
    transcript.error = error.map(str::to_owned);
    transcript
        .save(path)
        .with_context(|| format!("cannot write the transcript to {}", path.display()))
}
