//! The text operations, independent of the plugin glue.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Counts over a text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Unicode scalar values.
    pub characters: usize,
    /// UTF-8 bytes.
    pub bytes: usize,
    /// Runs of non-whitespace.
    pub words: usize,
    /// Lines; a trailing newline does not start another one.
    pub lines: usize,
    /// Runs ending in `.`, `!` or `?`, plus unterminated trailing text.
    pub sentences: usize,
}

/// Counts characters, bytes, words, lines and sentences.
pub fn stats(text: &str) -> Stats {
    let mut sentences = 0;
    let mut open = false;
    for c in text.chars() {
        if matches!(c, '.' | '!' | '?') {
            if open {
                sentences += 1;
            }
            open = false;
        } else if !c.is_whitespace() {
            open = true;
        }
    }
    Stats {
        characters: text.chars().count(),
        bytes: text.len(),
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
        sentences: sentences + usize::from(open),
    }
}

/// A transformation of `text_transform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// UPPER CASE.
    Upper,
    /// lower case.
    Lower,
    /// Title Case: the first letter of each word upper, the rest lower.
    Title,
    /// The characters in reverse order.
    Reverse,
    /// a-url-slug: lower-case ASCII letters and digits joined by `-`.
    Slug,
}

/// Applies `mode` to `text`.
pub fn transform(text: &str, mode: Mode) -> String {
    match mode {
        Mode::Upper => text.to_uppercase(),
        Mode::Lower => text.to_lowercase(),
        Mode::Reverse => text.chars().rev().collect(),
        Mode::Title => {
            let mut out = String::with_capacity(text.len());
            let mut start = true;
            for c in text.chars() {
                if start {
                    out.extend(c.to_uppercase());
                } else {
                    out.extend(c.to_lowercase());
                }
                start = c.is_whitespace() || c == '-';
            }
            out
        }
        Mode::Slug => {
            let mut out = String::with_capacity(text.len());
            for c in text.chars() {
                if c.is_ascii_alphanumeric() {
                    out.push(c.to_ascii_lowercase());
                } else if !out.is_empty() && !out.ends_with('-') {
                    out.push('-');
                }
            }
            while out.ends_with('-') {
                out.pop();
            }
            out
        }
    }
}

/// Matches reported by `text_find`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// How many times the needle occurs (non-overlapping).
    pub count: usize,
    /// The first [`MAX_MATCHES`] occurrences.
    pub matches: Vec<Match>,
    /// Whether `matches` was cut at [`MAX_MATCHES`].
    pub truncated: bool,
}

/// One occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Match {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Most matches listed in one answer.
pub const MAX_MATCHES: usize = 100;

/// Finds non-overlapping occurrences of `needle`.
///
/// # Errors
///
/// A message for the model when `needle` is empty.
pub fn find(text: &str, needle: &str, ignore_case: bool) -> Result<Found, String> {
    if needle.is_empty() {
        return Err("`needle` must not be empty".to_owned());
    }
    let fold = |s: &str| -> Vec<char> {
        if ignore_case {
            s.chars().flat_map(char::to_lowercase).collect()
        } else {
            s.chars().collect()
        }
    };
    let needle = fold(needle);
    let mut found = Found {
        count: 0,
        matches: Vec::new(),
        truncated: false,
    };
    for (index, line) in text.lines().enumerate() {
        // Case folding can change lengths (e.g. `İ`), so columns are counted
        // in the folded line; for ASCII and most scripts they coincide.
        let hay = fold(line);
        let mut at = 0;
        while at + needle.len() <= hay.len() {
            if hay[at..at + needle.len()] == needle[..] {
                found.count += 1;
                if found.matches.len() < MAX_MATCHES {
                    found.matches.push(Match {
                        line: index + 1,
                        column: at + 1,
                    });
                } else {
                    found.truncated = true;
                }
                at += needle.len();
            } else {
                at += 1;
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_counts_words_lines_and_sentences() {
        let s = stats("Hello world. How are you?\nFine!\n");
        assert_eq!(s.words, 6);
        assert_eq!(s.lines, 2);
        assert_eq!(s.sentences, 3);
        assert_eq!(s.characters, 32);
        assert_eq!(stats("no end").sentences, 1);
        assert_eq!(stats("").lines, 0);
        assert_eq!(stats("...").sentences, 0);
    }

    #[test]
    fn stats_distinguishes_characters_from_bytes() {
        let s = stats("héllo");
        assert_eq!(s.characters, 5);
        assert_eq!(s.bytes, 6);
    }

    #[test]
    fn transforms() {
        assert_eq!(transform("Hello World", Mode::Upper), "HELLO WORLD");
        assert_eq!(transform("Hello World", Mode::Lower), "hello world");
        assert_eq!(
            transform("hELLO wide-world", Mode::Title),
            "Hello Wide-World"
        );
        assert_eq!(transform("abc", Mode::Reverse), "cba");
        assert_eq!(
            transform("  Hello, World! 2024 ", Mode::Slug),
            "hello-world-2024"
        );
        assert_eq!(transform("Crème brûlée", Mode::Slug), "cr-me-br-l-e");
    }

    #[test]
    fn find_reports_line_and_column() {
        let f = find("abcab\nxab", "ab", false).unwrap();
        assert_eq!(f.count, 3);
        assert_eq!(
            f.matches,
            vec![
                Match { line: 1, column: 1 },
                Match { line: 1, column: 4 },
                Match { line: 2, column: 2 }
            ]
        );
    }

    #[test]
    fn find_ignores_case_on_request() {
        assert_eq!(find("Rust rust RUST", "rust", false).unwrap().count, 1);
        assert_eq!(find("Rust rust RUST", "rust", true).unwrap().count, 3);
    }

    #[test]
    fn find_is_non_overlapping_and_caps_the_list() {
        assert_eq!(find("aaaa", "aa", false).unwrap().count, 2);
        let many = find(&"x".repeat(MAX_MATCHES + 5), "x", false).unwrap();
        assert_eq!(many.count, MAX_MATCHES + 5);
        assert_eq!(many.matches.len(), MAX_MATCHES);
        assert!(many.truncated);
    }

    #[test]
    fn find_rejects_an_empty_needle() {
        assert!(find("abc", "", false).is_err());
    }
}
