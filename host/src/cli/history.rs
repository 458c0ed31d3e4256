//! The messages `toolhost run` starts from: `--resume FILE` (a transcript
//! written by `--transcript`) or `--messages FILE` (a JSON array of
//! messages: a system prompt, few-shot examples), then the prompt.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;
use toolhost::fsread;
use toolhost::llm::{Message, check_messages};

/// The `"format"` written in every transcript. A transcript without the
/// field is read as this format.
pub(super) const TRANSCRIPT_FORMAT: u64 = 1;

/// The messages before the prompt: the transcript's for `resume`, else
/// `system` then the file's for `messages`.
///
/// # Errors
///
/// A file that cannot be read, is not of the documented shape, or whose
/// messages break the tool-call invariant (a call without its result).
pub(super) fn starting_messages(
    system: Option<&str>,
    messages: Option<&Path>,
    resume: Option<&Path>,
) -> anyhow::Result<Vec<Message>> {
    if let Some(path) = resume {
        return read_transcript(path).with_context(|| format!("--resume {}", path.display()));
    }
    let mut start: Vec<Message> = system.map(Message::system).into_iter().collect();
    if let Some(path) = messages {
        let from_file = read_json(path)
            .and_then(|value| parse_messages(value, "a JSON array of messages"))
            .with_context(|| format!("--messages {}", path.display()))?;
        start.extend(from_file);
    }
    Ok(start)
}

fn read_transcript(path: &Path) -> anyhow::Result<Vec<Message>> {
    let Value::Object(mut transcript) = read_json(path)? else {
        bail!("not a transcript: a transcript (written by --transcript) is a JSON object");
    };
    match transcript.get("format") {
        None => {}
        Some(Value::Number(n)) if n.as_u64() == Some(TRANSCRIPT_FORMAT) => {}
        Some(other) => bail!(
            "transcript format {other} is not one this toolhost reads (format {TRANSCRIPT_FORMAT}); \
             use the toolhost version that wrote it"
        ),
    }
    let Some(messages) = transcript.remove("messages") else {
        bail!("not a transcript: it has no \"messages\" (write one with --transcript FILE)");
    };
    let messages = parse_messages(messages, "\"messages\": an array of messages")?;
    if messages.is_empty() {
        bail!("the transcript has no messages: there is nothing to resume");
    }
    Ok(messages)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        fsread::read_text(path, fsread::TRANSCRIPT_MAX_BYTES, None).context("cannot open it")?;
    serde_json::from_str(&text).context("not valid JSON")
}

/// `value` as neutral messages (`{"role": "system" | "user" | "assistant" |
/// "tool", ...}`) that keep the tool-call invariant.
fn parse_messages(value: Value, shape: &str) -> anyhow::Result<Vec<Message>> {
    let messages: Vec<Message> =
        serde_json::from_value(value).with_context(|| format!("expected {shape}"))?;
    check_messages(&messages).context(
        "the messages break the tool-call invariant (every tool call is answered by one tool \
         result right after it); fix the file",
    )?;
    Ok(messages)
}
