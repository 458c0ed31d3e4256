//! A tool's questions for the person using it (contract 0.2 `user.ask`):
//! what is asked ([`Question`]), what comes back ([`Answer`]) and who
//! answers ([`QuestionSink`]).
//!
//! The shape of a question is MCP elicitation's: a message and the JSON
//! Schema of a flat object whose properties are strings, numbers,
//! integers, booleans, or enums of strings (single or multiple choice).
//! [`check_question_schema`] holds a schema to that shape and to a budget;
//! [`check_answer`] holds an accepted answer to its schema, so a tool only
//! ever sees an answer of the shape it asked for.
//!
//! # Examples
//!
//! ```
//! use serde_json::json;
//! use toolhost::tools::{check_answer, check_question_schema};
//!
//! let schema = check_question_schema(&json!({
//!     "type": "object",
//!     "properties": {
//!         "name": {"type": "string", "maxLength": 40},
//!         "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"}
//!     },
//!     "required": ["name"]
//! }))
//! .unwrap();
//! assert!(check_answer(&schema, &json!({"name": "Ada", "size": "L"})).is_ok());
//! assert!(check_answer(&schema, &json!({"size": "XL"})).is_err());
//! assert!(check_question_schema(&json!({"type": "array"})).is_err());
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool's question for the person using it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The tool that asks.
    pub tool: String,
    /// What the tool asks (plugin text: clipped, control characters
    /// escaped).
    pub message: String,
    /// The JSON Schema of the answer, as [`check_question_schema`] accepts
    /// it. Its titles, descriptions and choices are plugin text: escape
    /// them before showing them on a terminal.
    pub schema: Map<String, Value>,
}

impl Question {
    /// The answer's fields, in the schema's order: each name with its
    /// schema.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Map<String, Value>)> {
        self.schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, field)| Some((name.as_str(), field.as_object()?)))
    }

    /// Whether the answer must have the field `name`.
    pub fn requires(&self, name: &str) -> bool {
        self.schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n == name))
    }
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
pub enum Answer {
    /// The answer: an object of the question's schema.
    Accept(Map<String, Value>),
    /// The person said no.
    Decline,
    /// The person dismissed the question, or no answer came in time.
    Cancel,
}

/// Who answers a call's questions: an MCP client's user, the person at a
/// terminal, a program's own UI. Set it on the
/// [`CallContext`](super::CallContext) of a call; a call without one gets
/// `unavailable` for each question, saying that no one can be asked.
///
/// Each question has a time limit ([`TIME_LIMIT`](Self::TIME_LIMIT)
/// unless set with [`with_time_limit`](Self::with_time_limit)); when it
/// passes the tool gets [`Answer::Cancel`]. The time spent waiting does not
/// count against the call's deadline.
///
/// # Examples
///
/// ```
/// use toolhost::tools::{Answer, Question, QuestionSink};
///
/// // A program that answers every question with the schema's defaults.
/// let sink = QuestionSink::new(|question: Question| async move {
///     let defaults = question
///         .fields()
///         .filter_map(|(name, field)| Some((name.to_owned(), field.get("default")?.clone())))
///         .collect();
///     Answer::Accept(defaults)
/// });
/// # let _ = sink;
/// ```
#[derive(Clone)]
pub struct QuestionSink {
    answer: Arc<dyn Fn(Question) -> BoxFuture<'static, Answer> + Send + Sync>,
    time_limit: Duration,
}

impl QuestionSink {
    /// How long a question waits for its answer unless set otherwise.
    pub const TIME_LIMIT: Duration = Duration::from_secs(300);

    /// A sink whose answers come from `f`. It may take as long as a person
    /// takes (the call waits without blocking a thread), up to the time
    /// limit.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Question) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        Self {
            answer: Arc::new(move |q| -> BoxFuture<'static, Answer> { Box::pin(f(q)) }),
            time_limit: Self::TIME_LIMIT,
        }
    }

    /// The same sink with each question waiting at most `limit`.
    #[must_use]
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// How long a question waits for its answer.
    pub fn time_limit(&self) -> Duration {
        self.time_limit
    }

    /// Ask `question`; [`Answer::Cancel`] once the time limit passes.
    pub async fn ask(&self, question: Question) -> Answer {
        tokio::time::timeout(self.time_limit, (self.answer)(question))
            .await
            .unwrap_or(Answer::Cancel)
    }
}

impl fmt::Debug for QuestionSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuestionSink")
            .field("time_limit", &self.time_limit)
            .finish_non_exhaustive()
    }
}

mod schema;

pub use schema::{
    MAX_QUESTION_CHOICES, MAX_QUESTION_FIELDS, MAX_QUESTIONS_PER_CALL, QuestionError, check_answer,
    check_question_schema,
};

#[cfg(test)]
mod tests;
