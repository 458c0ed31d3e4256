//! Showing text that came from outside the host: a plugin's tool names,
//! descriptions, log lines and error messages, a manifest's parse error.
//!
//! Such text is data with a budget of its own. Before it reaches a log line,
//! a terminal or an error message it is *clipped* (at most N bytes, cut on a
//! character boundary, with a note of how much was cut) and its control
//! characters are *escaped*, so that a newline cannot start a forged log
//! line and an escape sequence cannot repaint a terminal.
//!
//! ```
//! use toolhost::text::untrusted;
//!
//! assert_eq!(untrusted("ok\n[ERROR] forged\x1b[2J", 64), r"ok\n[ERROR] forged\u{1b}[2J");
//! assert_eq!(untrusted("abcdef", 3), "abc... [3 more bytes]");
//! ```

use std::borrow::Cow;
use std::fmt::Write;

/// `text` cut to at most `max_bytes` bytes (on a character boundary), with
/// `... [N more bytes]` appended when anything was cut.
pub fn clip(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}... [{} more bytes]",
        &text[..end],
        text.len() - end
    ))
}

/// Whether `c` must not reach a log or terminal as it is: C0 and C1
/// controls, DEL, and the Unicode bidirectional overrides and isolates
/// (which reorder what a reader sees).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character written as an escape (`\n`, `\t`,
/// `\r`, `\\u{1b}`, ...), so it stays on one line and prints as itself.
/// Backslashes are left alone: the result is for reading, not parsing.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text from outside the host, fit for a log line, a terminal or an error
/// message: clipped to `max_bytes` (before escaping), then escaped.
pub fn untrusted(text: &str, max_bytes: usize) -> String {
    escape_controls(&clip(text, max_bytes)).into_owned()
}

/// Like [`escape_controls`], but keeps newlines and tabs: for multi-line
/// text (a model's answer) shown on a terminal, where a line break is
/// meant but an escape sequence or a carriage return is not.
pub fn escape_controls_keep_lines(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_unsafe(c) && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&escape_controls(&c.to_string()));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text for a terminal or a log, shown as lines: newlines
/// stay, every other control character is escaped (as in
/// [`escape_controls`]), and each line after the first starts with
/// `indent`. A line of untrusted text (a TOML error quoting a manifest, a
/// plugin's traceback) then cannot pass for a line of its own: it never
/// starts at the left margin where `error:` and log lines do.
///
/// ```
/// use toolhost::text::escape_controls_indented;
///
/// assert_eq!(
///     escape_controls_indented("bad\n[ERROR] forged\x1b[2J", "  "),
///     "bad\n  [ERROR] forged\\u{1b}[2J"
/// );
/// ```
pub fn escape_controls_indented<'a>(text: &'a str, indent: &str) -> Cow<'a, str> {
    let text = text.trim_end_matches(['\n', '\r']);
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut lines = text.split('\n');
    if let Some(first) = lines.next() {
        out.push_str(&escape_controls_keep_lines(first.trim_end_matches('\r')));
    }
    for line in lines {
        out.push('\n');
        out.push_str(indent);
        out.push_str(&escape_controls_keep_lines(line.trim_end_matches('\r')));
    }
    Cow::Owned(out)
}

/// Text from outside the host kept as lines: clipped to `max_bytes`
/// (before escaping), then every control character but newline and tab
/// escaped. For a message that is read as lines (a TOML error with its
/// caret under the column); whoever prints it indents its lines with
/// [`escape_controls_indented`].
pub fn untrusted_lines(text: &str, max_bytes: usize) -> String {
    escape_controls_keep_lines(&clip(text, max_bytes)).into_owned()
}

/// The last lines a guest wrote to stderr, for a trap's message: blank
/// lines dropped, the rest joined with ` | `, the last `max_bytes` kept
/// (a panic's message and location come last). Rust's default panic hook
/// ends with "run with `RUST_BACKTRACE=1`", which cannot reach a plugin (no
/// environment variable does, and wasm has no unwinder): that note is
/// replaced by one that can be followed.
pub(crate) fn stderr_summary(stderr: &[u8], max_bytes: usize) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut backtrace_note = false;
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| {
            let note = line.contains("RUST_BACKTRACE");
            backtrace_note |= note;
            !line.is_empty() && !note
        })
        .collect();
    let text = lines.join(" | ");
    let mut start = text.len().saturating_sub(max_bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut summary = text[start..].to_owned();
    if backtrace_note {
        summary.push_str(
            " (a plugin has no backtrace: call the tool's function in a native `cargo test` for one)",
        );
    }
    summary
}

/// JSON text (as `serde_json` writes it) with every character that must not
/// reach a terminal written as a JSON `\uXXXX` escape. `serde_json` escapes
/// C0 controls but leaves DEL, C1 controls and bidi overrides as they are;
/// those can only sit inside strings, so the result is the same JSON value.
/// Newlines and tabs are left alone: outside strings they are the
/// whitespace of pretty-printed JSON, inside strings `serde_json` escaped
/// them already.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_unsafe(c) && c != '\n' && c != '\t';
    if !json.chars().any(unsafe_char) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if unsafe_char(c) {
            // Every unsafe character is in the Basic Multilingual Plane.
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_respects_character_boundaries() {
        assert_eq!(clip("héllo", 2), "h... [5 more bytes]");
        assert_eq!(clip("héllo", 3), "hé... [3 more bytes]");
        assert_eq!(clip("short", 5), "short");
    }

    #[test]
    fn every_control_and_bidi_override_is_escaped() {
        assert_eq!(escape_controls("a\r\n\tb"), r"a\r\n\tb");
        assert_eq!(
            escape_controls("\x1b[31m\x7f\u{85}"),
            r"\u{1b}[31m\u{7f}\u{85}"
        );
        assert_eq!(escape_controls("x\u{202e}y"), r"x\u{202e}y");
        assert!(matches!(escape_controls("plain ü"), Cow::Borrowed(_)));
        for c in (0u32..0x100).filter_map(char::from_u32) {
            let shown = escape_controls(&c.to_string()).into_owned();
            assert!(!shown.chars().any(is_unsafe), "{c:?} shown as {shown:?}");
        }
    }

    #[test]
    fn indented_lines_never_start_at_the_margin() {
        let toml = "TOML parse error at line 1, column 5\n  |\n1 | a =\n  |     ^\nstring values must be quoted\n";
        let shown = escape_controls_indented(toml, "    ");
        assert_eq!(shown.lines().count(), 5, "{shown}");
        assert!(
            shown.lines().skip(1).all(|l| l.starts_with("    ")),
            "{shown}"
        );
        assert!(!shown.contains("\\n"), "newlines stay newlines: {shown}");
        let forged = escape_controls_indented("x\r\nerror: forged\u{1b}[2J\u{202e}", "  ");
        assert_eq!(forged, "x\n  error: forged\\u{1b}[2J\\u{202e}");
        assert!(matches!(
            escape_controls_indented("one line", "  "),
            Cow::Borrowed(_)
        ));
        // Unsafe characters never survive, whatever the input.
        for c in (0u32..0x100).filter_map(char::from_u32) {
            let shown = escape_controls_indented(&format!("a{c}b"), " ").into_owned();
            assert!(
                !shown
                    .chars()
                    .any(|c| is_unsafe(c) && c != '\n' && c != '\t'),
                "{c:?}"
            );
        }
        assert_eq!(untrusted_lines("a\nb\x1bc", 64), "a\nb\\u{1b}c");
        assert_eq!(untrusted_lines("abcdef", 3), "abc... [3 more bytes]");
    }

    #[test]
    fn a_guest_panic_never_suggests_rust_backtrace() {
        let default_hook = b"thread '<unnamed>' panicked at src/lib.rs:12:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        let shown = stderr_summary(default_hook, 500);
        assert!(
            shown.starts_with("thread '<unnamed>' panicked at src/lib.rs:12:5: | boom"),
            "{shown}"
        );
        assert!(!shown.contains("RUST_BACKTRACE=1"), "{shown}");
        assert!(shown.contains("cargo test"), "{shown}");
        let go = b"panicked at plugin/plugin.go:31: index out of range [3] with length 1\n";
        assert_eq!(
            stderr_summary(go, 500),
            "panicked at plugin/plugin.go:31: index out of range [3] with length 1"
        );
        // The end is kept: that is where a panic's message is.
        let long = format!("{}\npanicked at a.rs:1:1: last", "x".repeat(2000));
        assert!(stderr_summary(long.as_bytes(), 100).ends_with("panicked at a.rs:1:1: last"));
        assert_eq!(stderr_summary(b"", 100), "");
    }

    #[test]
    fn line_breaks_survive_where_asked_and_json_stays_json() {
        assert_eq!(
            escape_controls_keep_lines("a\n\tb\r\x1b[2J"),
            "a\n\tb\\r\\u{1b}[2J"
        );
        let value = serde_json::json!({"m": "x\u{7f}\u{9b}\u{202e}\n"});
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let shown = escape_json_controls(&text);
            assert!(!shown.chars().any(|c| is_unsafe(c) && c != '\n'), "{shown}");
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
                value
            );
        }
    }
}
