//! What the registry holds a source's resources, templates and prompts
//! to: how many, how long a URI, which schemes, how large a read or a
//! prompt, how many completion values, how long each may take.

use std::time::Duration;

use super::{OfferError, ToolOrigin};

/// The budgets on what sources offer besides tools (see
/// `docs/security.md`, "Resources and prompts"). A source that goes over
/// one gets a clear [`OfferError`]; the host serves on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OfferBudget {
    /// Resources (and, separately, templates and prompts) one source may
    /// register; the rest of a longer list is refused.
    pub max_entries: usize,
    /// The longest URI (or URI template), in bytes.
    pub max_uri_bytes: usize,
    /// The most bytes one read may return (all its parts together).
    pub max_read_bytes: usize,
    /// The most bytes one prompt's messages may hold together.
    pub max_prompt_bytes: usize,
    /// The most bytes of a name, description or MIME type.
    pub max_text_bytes: usize,
    /// The most completion values one answer may have (MCP's cap: 100).
    pub max_completions: usize,
    /// How long one read, prompt or completion may take.
    pub timeout: Duration,
}

impl Default for OfferBudget {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_uri_bytes: 2048,
            max_read_bytes: 16 << 20,
            max_prompt_bytes: 16 << 20,
            max_text_bytes: 4096,
            max_completions: 100,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Schemes no source but the program's own (native) code may use: a
/// client may open them itself, outside the server.
const LOCAL_SCHEMES: [&str; 2] = ["file", "jar"];

impl OfferBudget {
    /// Check a URI (or a URI template, `template`) a source offers or a
    /// client asks for: within [`max_uri_bytes`](Self::max_uri_bytes), a
    /// scheme (`scheme:`), no whitespace or control characters, no `..`
    /// path segment, and no local scheme (`file:`, `jar:`) unless `owner`
    /// is native.
    pub(crate) fn check_uri(
        &self,
        uri: &str,
        owner: Option<&ToolOrigin>,
    ) -> Result<(), OfferError> {
        let invalid = |why: String| OfferError::InvalidUri {
            uri: crate::text::untrusted(uri, 256),
            why,
        };
        if uri.len() > self.max_uri_bytes {
            return Err(invalid(format!(
                "it has {} bytes, more than the {} a URI may have",
                uri.len(),
                self.max_uri_bytes
            )));
        }
        let Some((scheme, rest)) = uri.split_once(':') else {
            return Err(invalid("it has no scheme (`scheme:...`)".into()));
        };
        let scheme_ok = scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
        if !scheme_ok {
            return Err(invalid(format!("`{scheme}` is not a URI scheme")));
        }
        if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("it has whitespace or control characters".into()));
        }
        let path = rest.split(['?', '#']).next().unwrap_or_default();
        if path
            .split('/')
            .any(|segment| segment == ".." || segment.eq_ignore_ascii_case("%2e%2e"))
        {
            return Err(invalid("it has a `..` path segment".into()));
        }
        let local = LOCAL_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme));
        if local && !matches!(owner, None | Some(ToolOrigin::Native)) {
            return Err(invalid(format!(
                "only the program's own resources may use `{scheme}:` URIs"
            )));
        }
        Ok(())
    }

    /// Check a name, description, MIME type or title's size.
    pub(crate) fn check_text(&self, what: &str, text: &str) -> Result<(), OfferError> {
        if text.len() > self.max_text_bytes {
            return Err(OfferError::OverBudget {
                what: format!("{what} of {} bytes", text.len()),
                limit: format!("{} bytes", self.max_text_bytes),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp() -> ToolOrigin {
        ToolOrigin::Mcp {
            server: "up".into(),
        }
    }

    #[test]
    fn uris_are_held_to_the_rules() {
        let budget = OfferBudget::default();
        let ok = |uri: &str, owner: &ToolOrigin| budget.check_uri(uri, Some(owner)).is_ok();
        assert!(ok("demo://resource/static/document/a.md", &mcp()));
        assert!(ok("ui://chart/view.html", &mcp()));
        assert!(ok("urn:isbn:0451450523", &mcp()));
        assert!(ok("file:///srv/notes.txt", &ToolOrigin::Native));
        assert!(!ok("file:///etc/passwd", &mcp()));
        assert!(!ok("FILE:///etc/passwd", &mcp()));
        assert!(!ok("demo://x/../../etc/passwd", &mcp()));
        assert!(!ok("demo://x/%2E%2E/y", &mcp()));
        assert!(!ok("no-scheme", &mcp()));
        assert!(!ok("1x://a", &mcp()));
        assert!(!ok("demo://a b", &mcp()));
        assert!(!ok("demo://a\u{7}", &mcp()));
        assert!(!ok(&format!("demo://{}", "a".repeat(3000)), &mcp()));
        // `..` in a query is no path segment.
        assert!(ok("demo://x?q=..", &mcp()));
    }

    #[test]
    fn long_text_is_refused_with_the_limit() {
        let budget = OfferBudget::default();
        let err = budget
            .check_text("description", &"d".repeat(5000))
            .unwrap_err()
            .to_string();
        assert!(err.contains("5000 bytes") && err.contains("4096"), "{err}");
    }
}
