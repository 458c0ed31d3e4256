//! The `user.ask` import (contract 0.2): a tool's question for the person
//! using it, passed to the call's [`QuestionSink`] within budgets, with the
//! call's deadline stopped while the person thinks.
//!
//! The deadline is enforced in three places: the epoch callback (a guest
//! that computes), the async timeout around the call (a guest that waits
//! on the host) and the guest's HTTP requests. While a question waits, the
//! deadline moves to the question's own time limit past it; once the
//! answer is in, it moves to the old deadline plus the time waited. The
//! call's driver hears each move on a watch channel
//! ([`StoreState::deadline_moves`]), made only for calls that can ask.

use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;

use super::bindings::{UserHost, WitAnswer, WitAskError};
use super::state::StoreState;
use crate::text::untrusted;
use crate::tools::{Answer, MAX_QUESTIONS_PER_CALL, Question, check_answer, check_question_schema};

/// Most bytes of a question's schema text.
pub(crate) const MAX_QUESTION_SCHEMA: usize = 8 << 10;
/// Most bytes of a question's message; longer ones are cut.
pub(crate) const MAX_QUESTION_MESSAGE: usize = 2 << 10;

impl StoreState {
    /// A receiver of the call's deadline moves, when the call can ask
    /// questions (none otherwise: a call that cannot ask keeps a fixed
    /// deadline, at no cost).
    pub(crate) fn deadline_moves(&mut self) -> Option<watch::Receiver<Instant>> {
        self.asking.sink.as_ref()?;
        let deadline = self.deadline;
        let sender = self
            .asking
            .moves
            .get_or_insert_with(|| watch::channel(deadline).0);
        sender.send_replace(deadline);
        Some(sender.subscribe())
    }

    fn move_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.http.move_deadline(deadline);
        if let Some(moves) = &self.asking.moves {
            moves.send_replace(deadline);
        }
    }
}

impl UserHost for StoreState {
    async fn ask(&mut self, message: String, schema: String) -> Result<WitAnswer, WitAskError> {
        // The schema first, always: a question that could never be asked
        // is the plugin's error wherever it runs, not "no one to ask".
        if schema.len() > MAX_QUESTION_SCHEMA {
            return Err(WitAskError::InvalidSchema(format!(
                "the schema is {} bytes; the most is {MAX_QUESTION_SCHEMA}",
                schema.len()
            )));
        }
        let schema = serde_json::from_str::<Value>(&schema)
            .map_err(|e| format!("the schema is not JSON ({e})"))
            .and_then(|s| check_question_schema(&s).map_err(|e| e.to_string()))
            .map_err(|e| {
                WitAskError::InvalidSchema(format!(
                    "{e}; a question's schema is MCP elicitation's: a flat object of string, \
                     number, integer, boolean and string-enum fields"
                ))
            })?;
        let Some(sink) = self.asking.sink.clone() else {
            return Err(WitAskError::Unavailable(
                "no one can be asked here (no MCP client with elicitation, no terminal, no \
                 answerer in the program); go on without the answer, or fail saying what input \
                 the tool needs"
                    .to_owned(),
            ));
        };
        if self.asking.asked >= MAX_QUESTIONS_PER_CALL {
            return Err(WitAskError::OverBudget(format!(
                "this call has asked {MAX_QUESTIONS_PER_CALL} questions, the most one call may \
                 ask; ask for everything in one question, or go on without more answers"
            )));
        }
        self.asking.asked += 1;
        let question = Question {
            tool: self.asking.tool.clone(),
            message: untrusted(&message, MAX_QUESTION_MESSAGE),
            schema,
        };
        let schema = question.schema.clone();
        let deadline = self.deadline;
        let asked_at = Instant::now();
        // Until the answer is in, only the question's own limit holds.
        self.move_deadline(deadline + sink.time_limit());
        let answer = sink.ask(question).await;
        self.move_deadline(deadline + asked_at.elapsed());
        Ok(match answer {
            Answer::Accept(fields) => {
                let fields = Value::Object(fields);
                match check_answer(&schema, &fields) {
                    Ok(()) => WitAnswer::Accept(fields.to_string()),
                    Err(e) => {
                        tracing::warn!(plugin = %self.identity.name, tool = %self.asking.tool, "an answer did not match the question's schema ({e}); the tool is told the question was cancelled");
                        WitAnswer::Cancel
                    }
                }
            }
            Answer::Decline => WitAnswer::Decline,
            Answer::Cancel => WitAnswer::Cancel,
        })
    }
}
