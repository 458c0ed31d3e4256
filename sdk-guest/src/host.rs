//! The host's imports: logging, manifest config, progress and questions.

use crate::bindings::toolhost::plugin::host as wit;

/// Log lines through the host's logger, tagged with the plugin's name.
///
/// The host cuts long messages and cuts off a call that logs too much, so log
/// what helps an operator, not every step. Outside a toolhost (a native unit
/// test) these functions panic: keep them out of the logic you unit-test.
///
/// # Examples
///
/// ```no_run
/// toolhost_guest::log::info(format!("read {} bytes", 42));
/// ```
pub mod log {
    use super::wit;

    /// Log at trace level.
    pub fn trace(message: impl AsRef<str>) {
        wit::log(wit::Level::Trace, message.as_ref());
    }

    /// Log at debug level.
    pub fn debug(message: impl AsRef<str>) {
        wit::log(wit::Level::Debug, message.as_ref());
    }

    /// Log at info level.
    pub fn info(message: impl AsRef<str>) {
        wit::log(wit::Level::Info, message.as_ref());
    }

    /// Log at warn level.
    pub fn warn(message: impl AsRef<str>) {
        wit::log(wit::Level::Warn, message.as_ref());
    }

    /// Log at error level.
    pub fn error(message: impl AsRef<str>) {
        wit::log(wit::Level::Error, message.as_ref());
    }
}

/// The value of `key` in the `[config]` table of the plugin's manifest
/// (`NAME.toml` beside `NAME.wasm`), or `None` when the manifest does not set
/// it. Config is plain data for the plugin; it grants nothing.
///
/// # Examples
///
/// ```no_run
/// let greeting = toolhost_guest::config("greeting").unwrap_or_else(|| "hello".to_owned());
/// ```
pub fn config(key: &str) -> Option<String> {
    wit::config(key)
}

/// Reports how far the running call is: `done` out of `total` when known,
/// in the tool's own units, with what it is doing now.
///
/// The report reaches whoever is waiting on the call: an MCP client that
/// asked for progress, the program running the loop, a terminal. With no
/// one listening it costs next to nothing; reports past the host's rate
/// budget are dropped. `done` should not go down between reports. Outside a
/// toolhost (a native unit test) this panics, as [`log`] does.
///
/// # Examples
///
/// ```no_run
/// let files = ["a", "b", "c"];
/// for (i, file) in files.iter().enumerate() {
///     toolhost_guest::progress(i as f64, Some(files.len() as f64), Some(&format!("indexing {file}")));
/// }
/// ```
pub fn progress(done: f64, total: Option<f64>, message: Option<&str>) {
    crate::bindings::toolhost::plugin::progress::report(done, total, message);
}

/// What the person answered to [`ask`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// They answered; the answer has the question's shape.
    Accept(T),
    /// They said no.
    Decline,
    /// They dismissed the question without answering (or it timed out).
    Cancel,
}

/// Why [`ask`] got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskError {
    /// No one can be asked here: an MCP client without elicitation, no
    /// terminal, a program with no one to ask. Go on without the answer, or
    /// fail saying what input the tool needs.
    Unavailable(String),
    /// The call already asked as many questions as the host allows.
    OverBudget(String),
    /// The question's type is not a flat object of strings, numbers,
    /// booleans and string enums (what MCP elicitation can ask), or its
    /// schema is too large.
    InvalidSchema(String),
    /// The answer did not fit the question's type.
    BadAnswer(String),
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(m) => write!(f, "no one to ask: {m}"),
            Self::OverBudget(m) => write!(f, "too many questions: {m}"),
            Self::InvalidSchema(m) => write!(f, "the question cannot be asked: {m}"),
            Self::BadAnswer(m) => write!(f, "the answer does not fit the question: {m}"),
        }
    }
}

impl std::error::Error for AskError {}

/// Asks the person behind the call a question and waits for the answer.
/// `T` is the answer's shape: a struct of strings, numbers, booleans and
/// unit-variant enums, whose doc comments become the form's help text.
///
/// The time spent waiting does not count against the call's deadline; the
/// question has its own time limit, after which the answer is
/// [`Answer::Cancel`].
///
/// # Errors
///
/// [`AskError`] when no one can be asked, the call asked too many questions,
/// `T` is not a form MCP can ask, or the answer does not fit `T`.
///
/// # Examples
///
/// ```no_run
/// use toolhost_guest::{Answer, ToolError};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     /// Type the branch name to confirm.
///     branch: String,
/// }
///
/// # fn f() -> Result<(), ToolError> {
/// match toolhost_guest::ask::<Confirm>("Force-push over `main`?") {
///     Ok(Answer::Accept(c)) if c.branch == "main" => { /* go on */ }
///     Ok(_) => return Err(ToolError::failed("the user did not confirm the force-push")),
///     Err(e) => return Err(ToolError::failed(format!("cannot confirm: {e}"))),
/// }
/// # Ok(()) }
/// ```
pub fn ask<T>(message: &str) -> Result<Answer<T>, AskError>
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema,
{
    use crate::bindings::toolhost::plugin::user as wit;
    let schema = crate::input_schema::<T>();
    match wit::ask(message, &schema) {
        Ok(wit::Answer::Accept(json)) => serde_json::from_str(&json)
            .map(Answer::Accept)
            .map_err(|e| AskError::BadAnswer(e.to_string())),
        Ok(wit::Answer::Decline) => Ok(Answer::Decline),
        Ok(wit::Answer::Cancel) => Ok(Answer::Cancel),
        Err(wit::AskError::Unavailable(m)) => Err(AskError::Unavailable(m)),
        Err(wit::AskError::OverBudget(m)) => Err(AskError::OverBudget(m)),
        Err(wit::AskError::InvalidSchema(m)) => Err(AskError::InvalidSchema(m)),
    }
}
