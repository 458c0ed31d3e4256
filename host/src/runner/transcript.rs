//! Conversations that outlive the process: [`Transcript`].
//!
//! A transcript is the whole conversation of a run as provider-neutral JSON,
//! plus what the run reported (why it stopped, counts, its answer, its
//! error). Resuming needs only the messages: a later run starts from them
//! and adds its prompt. The tool state of stateful plugins is not in it; the
//! process that held it has ended.
//!
//! # The file
//!
//! ```json
//! {"format": 2, "digest": "sha256:…", "messages": [...], "stop_reason": "completed",
//!  "iterations": 1, "tool_calls": 0, "usage": {...}, "final": "…", "error"?: "…"}
//! ```
//!
//! **Versioned.** `"format"` says how to read the rest. A file of a format
//! this toolhost does not read is refused with [`TranscriptError::Version`]
//! rather than half-understood. Format 1 (written before transcripts carried
//! a digest, and files without `"format"`) is still read, unchecked: it has
//! no digest to check.
//!
//! **Paused runs.** A run that paused for approval (or on a task) saves
//! its waiting round in `"pending"` (the model's response and where each
//! of its calls stands), next to the messages before it, and the file says
//! format 3:
//! an older toolhost refuses it by its format rather than resuming the
//! conversation without the round. A transcript without a waiting round is
//! format 2, as before.
//!
//! **Images and audio.** A tool result, or a user message (a prompt's, an
//! attached resource's), may carry media parts (`"parts"`, base64 bytes;
//! see [`ToolResult::parts`](crate::llm::ToolResult)). A transcript with
//! any is format 4, with or without a waiting round: an
//! older toolhost refuses it by its format rather than resuming without
//! the images (it would ignore the field, then find the digest wrong).
//! Formats 1 to 3 are still read; they have no parts.
//!
//! **Sealed.** `"digest"` is the SHA-256 of the canonical JSON of everything
//! else (the typed content, re-serialized, so that key order and whitespace
//! do not matter). Load recomputes it and refuses a mismatch with
//! [`TranscriptError::Tampered`]. A resumed conversation is sent to a model
//! as if the model had said it: a file changed by a hand edit, a merge or
//! sync conflict, or a bad copy would otherwise put words in the model's
//! mouth without anyone noticing. The digest is no signature: whoever can
//! write the file can recompute it. It turns an accidental change into a
//! clear error and a deliberate one into a deliberate act: start from the
//! edited messages as plain input ([`Transcript::new`], or `--messages` in
//! the CLI).
//!
//! **Never half-written.** [`save`](Transcript::save) writes a temporary
//! file next to the target, flushes it to disk and renames it over the
//! target: a reader sees the old file or the new one, never part of one. A
//! file cut short anyway (a truncated copy) is not valid JSON and is refused
//! with [`TranscriptError::Json`].
//!
//! # Examples
//!
//! ```
//! use toolhost::llm::Message;
//! use toolhost::runner::Transcript;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("chat.json");
//! Transcript::new(vec![Message::user("What is 6*7?")]).save(&path)?;
//! let resumed = Transcript::load(&path)?;
//! assert_eq!(resumed.messages.len(), 1);
//! # Ok(())
//! # }
//! ```

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{PendingRound, RoundError, RunOutcome, StopReason};
use crate::fsread;
use crate::llm::{InvariantError, Message, Usage, check_messages};

/// The format [`Transcript::save`] writes.
pub const TRANSCRIPT_FORMAT: u64 = 2;

/// The format before transcripts were sealed; still read, unchecked.
const UNSEALED_FORMAT: u64 = 1;

/// The format of a transcript with a waiting round (`"pending"`), sealed
/// as format 2 is.
pub const PAUSED_TRANSCRIPT_FORMAT: u64 = 3;

/// The format of a transcript whose tool results carry images or audio
/// (`"parts"`), with or without a waiting round; sealed as format 2 is.
pub const MEDIA_TRANSCRIPT_FORMAT: u64 = 4;

/// Prefixed to the hashed content, so that the digest of a transcript is
/// never the digest of some other JSON document this project hashes.
const DIGEST_DOMAIN: &[u8] = b"toolhost transcript format 2\n";

/// A conversation saved to outlive the process that had it, and what its
/// run reported. The module docs in `runner/transcript.rs` describe the file and its checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Transcript {
    /// The whole conversation: what a resumed run starts from. It keeps the
    /// tool-call invariant ([`check_messages`]).
    pub messages: Vec<Message>,
    /// Why the run that wrote it ended; `None` when no run did.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// The run's rounds with tools enabled.
    #[serde(default)]
    pub iterations: u32,
    /// The run's admitted tool calls.
    #[serde(default)]
    pub tool_calls: u64,
    /// The run's tokens.
    #[serde(default)]
    pub usage: Usage,
    /// The run's own answer ([`RunOutcome::final_message`]); `None` when it
    /// ended before the model's first reply, never the history's answer.
    #[serde(default, rename = "final")]
    pub final_text: Option<String>,
    /// Why the run failed, for a failed run (it can be resumed: its
    /// messages keep the invariant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The round a paused run waits on
    /// ([`StopReason::AwaitingApproval`]): resume it with
    /// [`ToolRunner::resume`](super::ToolRunner::resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingRound>,
}

/// Why a transcript could not be saved or loaded. Like `std::fs`'s errors,
/// none names the file: the caller knows it, and says it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// The file could not be read (missing, not a regular file, over
    /// [`fsread::TRANSCRIPT_MAX_BYTES`], not UTF-8).
    #[error("cannot read the transcript file")]
    Read(#[source] std::io::Error),
    /// The file could not be written; a file already there is unchanged.
    #[error("cannot write the transcript file (a file already there is left as it was)")]
    Write(#[source] std::io::Error),
    /// The text is not JSON: typically a file cut short.
    #[error("the transcript is not valid JSON (cut short or corrupted?); restore it from a copy")]
    Json(#[source] serde_json::Error),
    /// JSON, but not a transcript.
    #[error("not a transcript: {0}")]
    NotATranscript(&'static str),
    /// A field does not have the documented shape.
    #[error("the transcript's fields do not have the documented shape; restore it from a copy")]
    Shape(#[source] serde_json::Error),
    /// A format this toolhost does not read.
    #[error(
        "transcript format {found}, this toolhost reads {TRANSCRIPT_FORMAT}, {PAUSED_TRANSCRIPT_FORMAT}, {MEDIA_TRANSCRIPT_FORMAT} (and {UNSEALED_FORMAT}): use the toolhost version that wrote it"
    )]
    Version {
        /// The file's `"format"`.
        found: u64,
    },
    /// The content does not match the digest it was saved with.
    #[error(
        "the transcript was changed after it was saved (its content does not match its digest {expected}): \
         restore it from a copy, or, if the change is intended, start from its messages as plain input \
         (`--messages` in the CLI, `Transcript::new` in a program)"
    )]
    Tampered {
        /// The digest in the file.
        expected: String,
        /// The digest of the content as it is.
        actual: String,
    },
    /// The waiting round does not fit its message.
    #[error("the transcript's waiting round is not well formed: {0}; restore it from a copy")]
    Pending(RoundError),
    /// The messages break the tool-call invariant.
    #[error(
        "the transcript's messages break the tool-call invariant (every tool call is answered by one tool result right after it)"
    )]
    Invariant(#[source] InvariantError),
    /// The transcript could not be turned into JSON (a bug: every message
    /// is plain data).
    #[error("cannot encode the transcript as JSON")]
    Encode(#[source] serde_json::Error),
}

impl Transcript {
    /// A transcript of `messages` alone, as a program starts one (no run
    /// has reported on it yet).
    #[must_use]
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// The transcript of a finished run: its whole conversation (the
    /// history it started from included) and its report. Set
    /// [`error`](Self::error) for a failed run.
    #[must_use]
    pub fn from_outcome(outcome: &RunOutcome) -> Self {
        Self {
            messages: outcome.messages.clone(),
            stop_reason: Some(outcome.stop_reason),
            iterations: outcome.iterations,
            tool_calls: outcome.tool_calls,
            usage: outcome.usage,
            final_text: outcome.final_message().map(|m| m.content.clone()),
            error: None,
            pending: outcome.pending.clone(),
        }
    }

    /// The transcript as a sealed JSON object: `"format"`, `"digest"` and
    /// the fields.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Encode`], which plain messages never cause.
    pub fn to_value(&self) -> Result<Value, TranscriptError> {
        let content = serde_json::to_value(self).map_err(TranscriptError::Encode)?;
        let digest = digest_of(&content)?;
        let Value::Object(fields) = content else {
            unreachable!("a struct serializes to an object")
        };
        let mut sealed = serde_json::Map::new();
        let format = if self.has_media() {
            MEDIA_TRANSCRIPT_FORMAT
        } else if self.pending.is_some() {
            PAUSED_TRANSCRIPT_FORMAT
        } else {
            TRANSCRIPT_FORMAT
        };
        sealed.insert("format".into(), format.into());
        sealed.insert("digest".into(), digest.into());
        sealed.extend(fields);
        Ok(Value::Object(sealed))
    }

    /// Read a transcript from a JSON value, checking its format, its digest
    /// and the tool-call invariant, in that order.
    ///
    /// # Errors
    ///
    /// [`NotATranscript`](TranscriptError::NotATranscript),
    /// [`Version`](TranscriptError::Version),
    /// [`Shape`](TranscriptError::Shape),
    /// [`Tampered`](TranscriptError::Tampered),
    /// [`Invariant`](TranscriptError::Invariant).
    pub fn from_value(value: Value) -> Result<Self, TranscriptError> {
        let Value::Object(mut fields) = value else {
            return Err(TranscriptError::NotATranscript(
                "a transcript is a JSON object with \"format\" and \"messages\"",
            ));
        };
        let format = match fields.remove("format") {
            None => UNSEALED_FORMAT,
            Some(Value::Number(n)) => n.as_u64().ok_or(TranscriptError::NotATranscript(
                "\"format\" is not a whole number",
            ))?,
            Some(_) => {
                return Err(TranscriptError::NotATranscript(
                    "\"format\" is not a number",
                ));
            }
        };
        if ![
            TRANSCRIPT_FORMAT,
            PAUSED_TRANSCRIPT_FORMAT,
            MEDIA_TRANSCRIPT_FORMAT,
            UNSEALED_FORMAT,
        ]
        .contains(&format)
        {
            return Err(TranscriptError::Version { found: format });
        }
        let digest = fields.remove("digest");
        if !fields.contains_key("messages") {
            return Err(TranscriptError::NotATranscript(
                "it has no \"messages\" (save one with `Transcript::save`, or `--transcript FILE` in the CLI)",
            ));
        }
        let transcript: Self =
            serde_json::from_value(Value::Object(fields)).map_err(TranscriptError::Shape)?;
        if format != UNSEALED_FORMAT {
            let Some(Value::String(expected)) = digest else {
                return Err(TranscriptError::NotATranscript(
                    "a sealed transcript (format 2, 3 or 4) has a \"digest\" string, and this one has none",
                ));
            };
            let actual =
                digest_of(&serde_json::to_value(&transcript).map_err(TranscriptError::Encode)?)?;
            if actual != expected {
                return Err(TranscriptError::Tampered { expected, actual });
            }
        }
        check_messages(&transcript.messages).map_err(TranscriptError::Invariant)?;
        if transcript.has_media() && format != MEDIA_TRANSCRIPT_FORMAT {
            return Err(TranscriptError::NotATranscript(
                "only a format 4 transcript has images or audio in tool results or user messages (\"parts\")",
            ));
        }
        match &transcript.pending {
            Some(_) if ![PAUSED_TRANSCRIPT_FORMAT, MEDIA_TRANSCRIPT_FORMAT].contains(&format) => {
                return Err(TranscriptError::NotATranscript(
                    "only a format 3 or 4 transcript has a waiting round (\"pending\")",
                ));
            }
            Some(round) => round.check().map_err(TranscriptError::Pending)?,
            None if format == PAUSED_TRANSCRIPT_FORMAT => {
                return Err(TranscriptError::NotATranscript(
                    "a format 3 transcript has a waiting round (\"pending\"), and this one has none",
                ));
            }
            None => {}
        }
        Ok(transcript)
    }

    /// Whether a tool result or user message carries images or audio.
    fn has_media(&self) -> bool {
        let in_round = self.pending.as_ref().is_some_and(|round| {
            round.calls.iter().any(
                |c| matches!(c, super::PendingCall::Answered { parts, .. } if !parts.is_empty()),
            )
        });
        in_round
            || self.messages.iter().any(|m| match m {
                Message::Tool(result) => !result.parts.is_empty(),
                Message::User { parts, .. } => !parts.is_empty(),
                _ => false,
            })
    }

    /// Write the transcript to `path` atomically (a temporary file in the
    /// same directory, flushed, then renamed over `path`), readable by its
    /// owner only where the platform has modes: it may hold secrets a model
    /// or a tool saw.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Write`]; whatever was at `path` is unchanged.
    pub fn save(&self, path: &Path) -> Result<(), TranscriptError> {
        let mut text =
            serde_json::to_string_pretty(&self.to_value()?).map_err(TranscriptError::Encode)?;
        text.push('\n');
        write_atomically(path, text.as_bytes()).map_err(TranscriptError::Write)
    }

    /// Read the transcript at `path` (at most
    /// [`fsread::TRANSCRIPT_MAX_BYTES`], a regular file) and check it as
    /// [`from_value`](Self::from_value) does.
    ///
    /// # Errors
    ///
    /// [`Read`](TranscriptError::Read), [`Json`](TranscriptError::Json),
    /// and those of [`from_value`](Self::from_value).
    pub fn load(path: &Path) -> Result<Self, TranscriptError> {
        let text = fsread::read_text(path, fsread::TRANSCRIPT_MAX_BYTES, None)
            .map_err(TranscriptError::Read)?;
        let value = serde_json::from_str(&text).map_err(TranscriptError::Json)?;
        Self::from_value(value)
    }
}

/// `"sha256:HEX"` of the canonical JSON of `content`.
fn digest_of(content: &Value) -> Result<String, TranscriptError> {
    let canonical = serde_json::to_vec(content).map_err(TranscriptError::Encode)?;
    let mut hasher = Sha256::new();
    hasher.update(DIGEST_DOMAIN);
    hasher.update(&canonical);
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

/// Replace `path` with `bytes`, all or nothing.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // Created 0600 on Unix; dropped (and removed) on any error below.
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
