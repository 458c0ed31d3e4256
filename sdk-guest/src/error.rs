//! The failure a tool reports to the model.

use std::fmt;
use std::io;
use std::path::Path;

/// What kind of failure a tool reports. Each kind is one case of the
/// contract's `tool-error` variant; the host turns it into a stable kind the
/// model and the operator see (`invalid_input`, `tool_failed`,
/// `permission_denied`, `unknown_tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The input's values make no sense; the model should fix its arguments.
    InvalidInput,
    /// The tool ran and could not do its job.
    Failed,
    /// The sandbox refused something the tool tried.
    Denied,
    /// `call` was asked for a tool this plugin does not offer.
    UnknownTool,
}

/// A failure the tool itself reports: the host hands it to the model as a
/// structured tool result, and the conversation goes on. A panic, by
/// contrast, traps the whole instance; return a `ToolError` instead.
///
/// # Examples
///
/// ```
/// use toolhost_guest::{ToolError, ToolErrorKind};
///
/// fn divide(a: f64, b: f64) -> Result<f64, ToolError> {
///     if b == 0.0 {
///         return Err(ToolError::invalid_input("division by zero: `b` must not be 0"));
///     }
///     Ok(a / b)
/// }
///
/// let err = divide(1.0, 0.0).unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
/// assert_eq!(err.message(), "division by zero: `b` must not be 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    kind: ToolErrorKind,
    message: String,
}

/// wasi-libc's `ENOTCAPABLE`: the host refused a path outside a preopen.
#[cfg(target_os = "wasi")]
const ENOTCAPABLE: i32 = 76;

impl ToolError {
    /// The input is valid against the schema but its values make no sense
    /// (division by zero, an unknown unit, ...). Say what to change.
    pub fn invalid_input(message: impl fmt::Display) -> Self {
        Self::new(ToolErrorKind::InvalidInput, message)
    }

    /// The tool ran and could not do its job. Takes anything that displays,
    /// so `.map_err(ToolError::failed)` works on most error types.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::new(ToolErrorKind::Failed, message)
    }

    /// The sandbox refused something the tool tried (a file outside its grant,
    /// an environment variable it was not given, ...).
    pub fn denied(message: impl fmt::Display) -> Self {
        Self::new(ToolErrorKind::Denied, message)
    }

    /// The plugin was asked for a tool `name` it does not offer.
    /// `export_tools!` reports this for you.
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(
            ToolErrorKind::UnknownTool,
            format!("this plugin has no tool named `{name}`"),
        )
    }

    /// A filesystem error on `path`, with the path in the message.
    ///
    /// Prefer this to the plain `From<io::Error>` conversion when you know the
    /// path: WASI reports a path outside every granted directory as "not
    /// found" (wasi-libc finds no preopen to resolve it against), which this
    /// tells apart from a missing file inside a grant and reports as
    /// [`ToolErrorKind::Denied`]. A `..` escape from a grant is refused by the
    /// host and is denied as well.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use toolhost_guest::ToolError;
    ///
    /// fn read(path: &str) -> Result<String, ToolError> {
    ///     std::fs::read_to_string(path).map_err(|e| ToolError::from_io_at(path, e))
    /// }
    /// ```
    pub fn from_io_at(path: impl AsRef<Path>, err: io::Error) -> Self {
        let path = path.as_ref();
        let shown = path.display();
        if is_denial(&err) {
            return Self::denied(format!(
                "access to `{shown}` was refused by the sandbox ({err}); \
                 use a path inside a directory this plugin was granted"
            ));
        }
        if err.kind() == io::ErrorKind::NotFound && !inside_a_grant(path) {
            return Self::denied(format!(
                "`{shown}` is not inside any directory this plugin was granted"
            ));
        }
        Self::failed(format!("`{shown}`: {err}"))
    }

    /// The kind of failure.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// What went wrong, written for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    fn new(kind: ToolErrorKind, message: impl fmt::Display) -> Self {
        Self {
            kind,
            message: message.to_string(),
        }
    }
}

/// Whether WASI refused the operation outright (as opposed to the file
/// simply not being there).
fn is_denial(err: &io::Error) -> bool {
    if err.kind() == io::ErrorKind::PermissionDenied {
        return true;
    }
    #[cfg(target_os = "wasi")]
    if err.raw_os_error() == Some(ENOTCAPABLE) {
        return true;
    }
    false
}

/// Whether some ancestor of `path` is reachable, i.e. the path lies under a
/// preopened directory and a "not found" really means the file is missing.
fn inside_a_grant(path: &Path) -> bool {
    let reachable = |p: &Path| std::fs::metadata(p).is_ok();
    path.ancestors()
        .skip(1)
        .any(|p| !p.as_os_str().is_empty() && reachable(p))
        || (path.is_relative() && reachable(Path::new(".")))
}

/// Maps an I/O error without knowing the path: a refusal by the sandbox is
/// [`ToolErrorKind::Denied`], anything else [`ToolErrorKind::Failed`]. When you
/// have the path, [`ToolError::from_io_at`] classifies more precisely.
impl From<io::Error> for ToolError {
    fn from(err: io::Error) -> Self {
        if is_denial(&err) {
            Self::denied(format!("refused by the sandbox: {err}"))
        } else {
            Self::failed(err)
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ToolErrorKind::InvalidInput => "invalid input",
            ToolErrorKind::Failed => "failed",
            ToolErrorKind::Denied => "denied",
            ToolErrorKind::UnknownTool => "unknown tool",
        };
        write!(f, "{kind}: {}", self.message)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_denied_io_error_is_denied() {
        let err = ToolError::from(io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(err.kind(), ToolErrorKind::Denied);
    }

    #[test]
    fn other_io_error_is_failed() {
        let err = ToolError::from(io::Error::other("disk on fire"));
        assert_eq!(err.kind(), ToolErrorKind::Failed);
        assert!(err.message().contains("disk on fire"), "{err}");
    }

    #[test]
    fn missing_file_under_a_reachable_dir_is_failed_not_denied() {
        let dir = std::env::temp_dir().join("toolhost-guest-no-such-file.txt");
        let err = ToolError::from_io_at(&dir, io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(err.kind(), ToolErrorKind::Failed, "{err}");
    }

    #[test]
    fn display_names_the_kind() {
        assert_eq!(
            ToolError::invalid_input("x must be positive").to_string(),
            "invalid input: x must be positive"
        );
        assert_eq!(
            ToolError::unknown_tool("nope").to_string(),
            "unknown tool: this plugin has no tool named `nope`"
        );
    }
}
