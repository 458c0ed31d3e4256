//! Asking a person before a tool call runs: which calls need it
//! ([`ApprovalPolicy`], [`ToolPattern`]), what is asked
//! ([`ApprovalRequest`]), what comes back ([`Decision`], [`Denial`]) and who
//! answers ([`Approver`]).
//!
//! The policy is data: the operator's host config (`[approval] require`),
//! a tool's own declaration (`needs_approval = true` in a plugin manifest's
//! `[exec]`, a `[[rest]]` or `[[mcp]]` declaration), and the run's own
//! patterns. The default needs no approval for anything.
//!
//! Who answers depends on where toolhost runs, and the same types serve
//! each: a program's async callback (an [`Approver`]; a closure returning a
//! future is one), the terminal prompt of `toolhost run`, the MCP client's
//! user through elicitation in `toolhost serve`. An approver that cannot
//! answer now returns [`Decision::Defer`]: the run pauses, is saved, and is
//! resumed with the decisions later, in this process or another
//! ([`ToolRunner::resume`](crate::runner::ToolRunner::resume)).
//!
//! # Examples
//!
//! ```
//! use toolhost::approval::{ApprovalPolicy, ToolPattern};
//!
//! let policy = ApprovalPolicy::requiring([ToolPattern::new("delete_*").unwrap()]);
//! assert!(policy.requires("delete_file"));
//! assert!(!policy.requires("read_file"));
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A tool name pattern: `*` stands for any run of characters (none
/// included), everything else for itself. It matches a tool's plain name or
/// its `name@version`.
///
/// # Examples
///
/// ```
/// use toolhost::approval::ToolPattern;
///
/// let fs = ToolPattern::new("fs_*").unwrap();
/// assert!(fs.matches("fs_write"));
/// assert!(fs.matches("fs_write@1.0.0"));
/// assert!(!fs.matches("http_get"));
/// assert!(ToolPattern::new("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ToolPattern(String);

/// A pattern that cannot name a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is empty.
    #[error("an empty tool pattern matches nothing; write a tool name, or `*` for every tool")]
    Empty,
    /// The pattern has characters no tool name has.
    #[error(
        "tool pattern `{0}` has characters no tool name has: use a-z, A-Z, 0-9, `_`, `-`, `.`, `@`, `+` and `*`"
    )]
    Characters(String),
}

impl ToolPattern {
    /// The pattern `text`.
    ///
    /// # Errors
    ///
    /// [`PatternError`] for an empty pattern or one with characters no tool
    /// name or version has (spaces, quotes, control characters).
    pub fn new(text: impl Into<String>) -> Result<Self, PatternError> {
        let text = text.into();
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.len() > 200
            || !text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.@+*".contains(&b))
        {
            return Err(PatternError::Characters(
                crate::text::escape_controls(&text).into_owned(),
            ));
        }
        Ok(Self(text))
    }

    /// The pattern that matches every tool.
    pub fn any() -> Self {
        Self("*".to_owned())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` (a plain name or `name@version`) matches. A pattern
    /// without `@` matches `name@version` by its name part.
    pub fn matches(&self, name: &str) -> bool {
        if glob(self.0.as_bytes(), name.as_bytes()) {
            return true;
        }
        match name.split_once('@') {
            Some((plain, _)) if !self.0.contains('@') => glob(self.0.as_bytes(), plain.as_bytes()),
            _ => false,
        }
    }
}

impl std::fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ToolPattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for ToolPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(serde::de::Error::custom)
    }
}

/// `*`-only glob, iterative (no recursion on pattern input): the last `*`
/// seen is where a mismatch backtracks to.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Which tools' calls need approval, by name: the operator's host config
/// (`[approval] require`) and a run's own patterns. A tool can also ask
/// for it itself (`needs_approval` in its `[exec]`); either is enough.
/// The default requires nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    /// Calls of tools matching any of these need approval.
    #[serde(default)]
    pub require: Vec<ToolPattern>,
}

impl ApprovalPolicy {
    /// A policy that requires approval for tools matching `patterns`.
    pub fn requiring(patterns: impl IntoIterator<Item = ToolPattern>) -> Self {
        Self {
            require: patterns.into_iter().collect(),
        }
    }

    /// Whether a call of `tool` (a plain name or `name@version`) needs
    /// approval under this policy alone.
    pub fn requires(&self, tool: &str) -> bool {
        self.require.iter().any(|p| p.matches(tool))
    }

    /// Both policies: a tool either requires needs approval.
    #[must_use]
    pub fn and(&self, other: &Self) -> Self {
        let mut require = self.require.clone();
        require.extend(other.require.iter().cloned());
        Self { require }
    }

    /// Whether it requires nothing.
    pub fn is_empty(&self) -> bool {
        self.require.is_empty()
    }
}

/// One call waiting for a decision: what a person is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The call's id (unique within its model response).
    pub call_id: String,
    /// The tool the model wants to call.
    pub tool: String,
    /// Its arguments, JSON text as the model wrote them. Untrusted: escape
    /// and clip before showing them (the terminal prompt does).
    pub arguments: String,
}

/// Who refused a call, and why: what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// Who refused, e.g. `"the user at the terminal"`, `"the host"`.
    pub by: String,
    /// Why, in a few words the model can act on.
    pub reason: String,
}

impl Denial {
    /// A denial by `by` for `reason`.
    pub fn new(by: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            by: by.into(),
            reason: reason.into(),
        }
    }

    /// The text of the error result the model sees, prefixed by the stable
    /// kind: `permission_denied: {by} refused this call: {reason}`.
    pub fn to_result_text(&self) -> String {
        format!(
            "permission_denied: {} refused this call: {}",
            self.by, self.reason
        )
    }
}

/// What an [`Approver`] decides about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Run it.
    Approve,
    /// Do not run it; the model gets a `permission_denied` result.
    Deny(Denial),
    /// Not decided now: the run pauses, reports the call as pending, and
    /// is resumed with a decision later.
    Defer,
}

impl Decision {
    /// A denial by `by` for `reason`.
    pub fn deny(by: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Deny(Denial::new(by, reason))
    }
}

/// Decides about calls that need approval. Asked once per call, in call
/// order, before any call of the response runs; it may take as long as a
/// person takes (the run waits without blocking a thread).
///
/// A closure `Fn(ApprovalRequest) -> impl Future<Output = Decision>` is an
/// approver.
///
/// # Examples
///
/// ```
/// use toolhost::approval::{ApprovalRequest, Approver, Decision};
///
/// fn only_reads() -> impl Approver {
///     |request: ApprovalRequest| async move {
///         if request.tool.starts_with("read") {
///             Decision::Approve
///         } else {
///             Decision::deny("the program", "only reads are allowed")
///         }
///     }
/// }
/// # let _ = only_reads();
/// ```
pub trait Approver: Send + Sync {
    /// The decision about `request`.
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Decision>;
}

impl<F, Fut> Approver for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Decision> + Send + 'static,
{
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        Box::pin(self(request))
    }
}

impl<T: Approver + ?Sized> Approver for Arc<T> {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        (**self).decide(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ToolPattern {
        ToolPattern::new(s).expect("a pattern")
    }

    #[test]
    fn patterns_match_names_and_versions() {
        assert!(p("*").matches("anything"));
        assert!(p("delete").matches("delete"));
        assert!(!p("delete").matches("delete_all"));
        assert!(p("*_file").matches("delete_file"));
        assert!(p("a*b*c").matches("aXXbYYc"));
        assert!(!p("a*b*c").matches("aXXbYY"));
        assert!(p("calc").matches("calc@1.2.0"));
        assert!(p("calc@1.*").matches("calc@1.2.0"));
        assert!(!p("calc@2.*").matches("calc@1.2.0"));
        assert!(!p("fs_*").matches("xfs_write"));
    }

    #[test]
    fn patterns_with_foreign_characters_are_refused() {
        assert_eq!(ToolPattern::new(""), Err(PatternError::Empty));
        assert!(ToolPattern::new("a b").is_err());
        assert!(ToolPattern::new("rm\u{1b}[2J").is_err());
        let error = toml::from_str::<ApprovalPolicy>("require = [\"\"]").expect_err("empty");
        assert!(error.to_string().contains("empty tool pattern"), "{error}");
    }
}
