//! Reading a provider's answer within its caps, and what an error body
//! says.

use super::LlmError;

/// Which cap of [`ResponseLimits`] an answer passed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Cap {
    Body,
    Event,
    Stream,
}

pub(super) fn too_large(provider: String, cap: Cap, limit: usize) -> LlmError {
    let (what, setting) = match cap {
        Cap::Body => ("a response body", "max_body_bytes"),
        Cap::Event => ("a stream event (or line)", "max_event_bytes"),
        Cap::Stream => ("a stream", "max_stream_bytes"),
    };
    LlmError::TooLarge {
        provider,
        what,
        limit,
        setting,
    }
}

/// A body read up to a cap.
pub(super) enum Body {
    /// All of it.
    Whole(Vec<u8>),
    /// The first `limit` bytes; more followed (and were not read).
    Cut(Vec<u8>),
}

/// Read `response`'s body, holding at most `limit` bytes: a longer body
/// (by its `Content-Length`, or as it arrives) is [`Body::Cut`].
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> reqwest::Result<Body> {
    let declared = response
        .content_length()
        .and_then(|n| usize::try_from(n).ok());
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(limit).min(1 << 20));
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body::Cut(bytes));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body::Whole(bytes))
}

pub(super) fn with_note(error: LlmError, note: &str) -> LlmError {
    match error {
        LlmError::Status {
            provider,
            status,
            message,
        } => LlmError::Status {
            provider,
            status,
            message: format!("{message} ({note})"),
        },
        other => other,
    }
}

/// The first 300 characters of a body, for error messages.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.push('…');
    }
    out
}

/// The provider's own message from an error body: `error.message`
/// (OpenAI, Anthropic, Gemini, DeepSeek all use it), else `message`, else
/// the start of the body.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let value = match &value {
            // Gemini's streaming endpoint wraps errors in an array.
            serde_json::Value::Array(items) => items.first().cloned().unwrap_or_default(),
            _ => value,
        };
        let error = &value["error"];
        let message = error["message"]
            .as_str()
            .or_else(|| error.as_str())
            .or_else(|| value["message"].as_str());
        if let Some(message) = message {
            let kind = error["type"].as_str().or_else(|| error["status"].as_str());
            return match kind {
                Some(kind) => format!("{kind}: {message}"),
                None => message.to_owned(),
            };
        }
    }
    if body.trim().is_empty() {
        "(empty body)".to_owned()
    } else {
        snippet(body.trim().as_bytes())
    }
}
