//! The secrets the host sends a peer (a REST endpoint, an MCP server), and
//! the one step every text that comes back from that peer goes through
//! before the model, a log or a terminal sees it.
//!
//! A peer can quote what it was sent: an error page that echoes the
//! request's headers, a debugging endpoint, a server that logs its
//! `Authorization` header. So each value the host sent it from a secret
//! (a header value from the environment, a token) is replaced by
//! [`REDACTED`] in its results, error messages, tool listings and log
//! lines, and so are the forms a peer is likely to quote it in:
//! percent-encoded, JSON-escaped, base64 (as in `Basic` auth), and for a
//! value that is itself base64 of `user:pass`, the decoded pair and the
//! password.
//!
//! A short value would match ordinary text ("a", "on", a port number), so
//! values under [`MIN_SECRET_BYTES`] are not searched for at all and values
//! under [`ANYWHERE_BYTES`] only where they stand alone (not inside a
//! longer word).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::ToolError;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Values shorter than this are not redacted: they would match ordinary
/// text, and are no secret worth the name.
pub(crate) const MIN_SECRET_BYTES: usize = 4;

/// Values at least this long are redacted wherever they appear; shorter
/// ones only as a whole word.
pub(crate) const ANYWHERE_BYTES: usize = 8;

/// The secrets sent to one peer. Cheap to clone; `Debug` shows how many,
/// never what.
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    /// Every form searched for, longest first (so that a form containing
    /// another is replaced whole).
    needles: Arc<[String]>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} forms)", self.needles.len())
    }
}

impl Secrets {
    /// The secrets `values` (each as sent, without a `Bearer `-style
    /// prefix; a prefixed one works too).
    pub(crate) fn new<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut needles: Vec<String> = Vec::new();
        for value in values {
            for form in forms(value) {
                if form.len() >= MIN_SECRET_BYTES && !needles.contains(&form) {
                    needles.push(form);
                }
            }
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Self {
            needles: needles.into(),
        }
    }

    /// Whether there is nothing to redact.
    pub(crate) fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub(crate) fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for needle in self.needles.iter() {
            if !out.contains(needle.as_str()) {
                continue;
            }
            let replaced = if needle.len() >= ANYWHERE_BYTES {
                out.replace(needle.as_str(), REDACTED)
            } else {
                replace_words(&out, needle)
            };
            out = Cow::Owned(replaced);
        }
        out
    }

    /// `value` with every secret in its strings (and keys) replaced.
    pub(crate) fn redact_value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.redact(&s).into_owned()),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.redact_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.redact(&k).into_owned(), self.redact_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// `error` with its message redacted.
    pub(crate) fn redact_error(&self, mut error: ToolError) -> ToolError {
        if let Cow::Owned(message) = self.redact(&error.message) {
            error.message = message;
        }
        error
    }

    /// A call's whole output, redacted: its structured value, its text
    /// parts and its embedded text resources (bytes are left as they are).
    pub(crate) fn redact_output(
        &self,
        result: Result<crate::tools::ToolOutput, ToolError>,
    ) -> Result<crate::tools::ToolOutput, ToolError> {
        use crate::tools::{Content, ResourceContents};
        let mut output = result.map_err(|e| self.redact_error(e))?;
        if self.is_empty() {
            return Ok(output);
        }
        output.structured = output.structured.map(|v| self.redact_value(v));
        for part in &mut output.content {
            match part {
                Content::Text { text }
                | Content::Resource {
                    contents: ResourceContents::Text(text),
                    ..
                } => {
                    if let Cow::Owned(redacted) = self.redact(text) {
                        *text = redacted;
                    }
                }
                _ => {}
            }
        }
        Ok(output)
    }

    /// A call's outcome, redacted.
    pub(crate) fn redact_result(
        &self,
        result: Result<Value, ToolError>,
    ) -> Result<Value, ToolError> {
        match result {
            Ok(value) => Ok(self.redact_value(value)),
            Err(error) => Err(self.redact_error(error)),
        }
    }
}

/// Replace `needle` where it is a whole word: not preceded or followed by
/// an ASCII letter or digit.
fn replace_words(text: &str, needle: &str) -> String {
    let bytes = text.as_bytes();
    let is_word = |i: Option<usize>| {
        i.and_then(|i| bytes.get(i))
            .is_some_and(u8::is_ascii_alphanumeric)
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, _) in text.match_indices(needle) {
        if start < last {
            continue;
        }
        let end = start + needle.len();
        if is_word(start.checked_sub(1)) || is_word(Some(end)) {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str(REDACTED);
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// HTTP authentication schemes put before a credential.
const SCHEMES: [&str; 6] = ["Bearer", "Basic", "Token", "Bot", "Digest", "ApiKey"];

/// The forms a peer may quote `value` in.
fn forms(value: &str) -> Vec<String> {
    // A prefixed header value (`Bearer x`, `Basic x`): the credential is
    // the secret, and the scheme stays readable (`Bearer [redacted]`).
    let mut forms = match value.split_once(' ') {
        Some((scheme, credential))
            if SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme))
                && !credential.trim().is_empty() =>
        {
            let mut forms = forms_of_one(credential.trim());
            forms.push(base64(value.as_bytes(), STANDARD));
            forms
        }
        _ => forms_of_one(value),
    };
    forms.sort();
    forms.dedup();
    forms
}

fn forms_of_one(value: &str) -> Vec<String> {
    let mut forms = vec![
        value.to_owned(),
        percent_encode(value, true),
        percent_encode(value, false),
        value.replace(' ', "+"),
        json_escape(value),
        base64(value.as_bytes(), STANDARD),
        base64(value.as_bytes(), URL_SAFE),
    ];
    forms.extend([STANDARD, URL_SAFE].iter().map(|alphabet| {
        base64(value.as_bytes(), alphabet)
            .trim_end_matches('=')
            .to_owned()
    }));
    // A base64 `user:pass` (what a `Basic` header carries): the pair and
    // the password may be quoted decoded.
    if let Some(decoded) = base64_decode(value)
        && let Ok(text) = String::from_utf8(decoded)
        && let Some((_, password)) = text.split_once(':')
    {
        forms.push(json_escape(&text));
        forms.push(percent_encode(&text, true));
        forms.push(password.to_owned());
        forms.push(percent_encode(password, true));
        forms.push(json_escape(password));
        forms.push(text);
    }
    forms
}

/// RFC 3986: everything but unreserved characters as `%XX`.
fn percent_encode(value: &str, upper: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// The text inside a JSON string literal for `value`.
fn json_escape(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_owned()
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `text` decoded as standard or URL-safe base64 (padding optional), if
/// it is that.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    if text.is_empty() || text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut n = 0u32;
    let mut bits = 0;
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        n = n << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
            n &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_form_of_a_secret_is_redacted() {
        let secrets = Secrets::new(["Bearer s3cr3t/tok+en"]);
        for text in [
            "Authorization: Bearer s3cr3t/tok+en",
            "token=s3cr3t%2Ftok%2Ben",
            "token=s3cr3t%2ftok%2ben",
            "{\"auth\":\"s3cr3t/tok+en\"}",
        ] {
            let out = secrets.redact(text);
            assert!(!out.contains("s3cr3t"), "{text} -> {out}");
        }
        assert_eq!(
            secrets.redact(&format!("x {} y", base64(b"s3cr3t/tok+en", STANDARD))),
            "x [redacted] y"
        );
        assert_eq!(secrets.redact("nothing here"), "nothing here");
    }

    #[test]
    fn basic_auth_is_redacted_encoded_and_decoded() {
        let value = format!("Basic {}", base64(b"alice:pa55word!", STANDARD));
        let secrets = Secrets::new([value.as_str()]);
        for text in [
            value.clone(),
            "user alice:pa55word!".to_owned(),
            "password pa55word!".to_owned(),
            "p=pa55word%21".to_owned(),
        ] {
            let out = secrets.redact(&text);
            assert!(!out.contains("pa55word"), "{text} -> {out}");
            assert!(
                !out.contains(&base64(b"alice:pa55word!", STANDARD)),
                "{out}"
            );
        }
    }

    #[test]
    fn short_values_are_left_or_redacted_only_as_words() {
        let secrets = Secrets::new(["a", "abc", "k3y9"]);
        assert_eq!(secrets.redact("a cat has abc"), "a cat has abc");
        assert_eq!(
            secrets.redact("key k3y9, not k3y99"),
            "key [redacted], not k3y99"
        );
    }

    #[test]
    fn values_are_walked_and_errors_redacted() {
        let secrets = Secrets::new(["topsecretvalue"]);
        let value =
            json!({"headers": {"x-token": "topsecretvalue"}, "list": ["a topsecretvalue b", 1]});
        assert_eq!(
            secrets.redact_value(value),
            json!({"headers": {"x-token": "[redacted]"}, "list": ["a [redacted] b", 1]})
        );
        let error = ToolError::failed("403: bad token topsecretvalue");
        assert_eq!(
            secrets.redact_error(error).message,
            "403: bad token [redacted]"
        );
        assert!(!format!("{secrets:?}").contains("topsecret"));
    }

    #[test]
    fn base64_round_trips() {
        for text in ["", "a", "ab", "abc", "abcd", "alice:pa55word!"] {
            let encoded = base64(text.as_bytes(), STANDARD);
            if !text.is_empty() {
                assert_eq!(base64_decode(&encoded).as_deref(), Some(text.as_bytes()));
            }
        }
        assert_eq!(base64(b"alice:pa55word!", STANDARD), "YWxpY2U6cGE1NXdvcmQh");
    }
}
