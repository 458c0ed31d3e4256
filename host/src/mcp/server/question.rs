//! A tool's questions over MCP: each goes to the client's user through
//! elicitation, the way approvals do ([`super::approval`]).
//!
//! - 2025-11-25 (sessions): the server sends `elicitation/create` while
//!   the call waits, and hands the answer to the tool.
//! - 2026-07-28 (sessionless): a call that asks a question not answered yet
//!   is stopped and answered with an `input_required` result whose input
//!   request, under [`QUESTION_INPUT_KEY`], is the elicitation. The client
//!   asks its user and calls again with the answer in `inputResponses` and
//!   the answers so far in `requestState`; the call runs again from the
//!   start and its questions are answered from those, in order.
//!
//! A client that did not declare the elicitation capability (form mode)
//! gets no question sink: each question of the tool answers `unavailable`,
//! and the tool goes on without it. Never a hang.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequiredResult, InputResponses, ProtocolVersion, Request, ServerRequest,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::tools::{Answer, MAX_QUESTIONS_PER_CALL, Question, QuestionSink};

/// The key of a tool's question among a call's input requests
/// (2026-07-28), and of its answer among the retried call's input
/// responses.
pub const QUESTION_INPUT_KEY: &str = "toolhost.dev/question";

/// Most bytes of the `requestState` a retried call may carry (the answers
/// so far).
pub(crate) const MAX_REQUEST_STATE: usize = 64 << 10;

/// How a call's questions reach the client's user.
pub(super) struct Questions {
    /// What the call's context asks; none when the client cannot be asked.
    pub sink: Option<QuestionSink>,
    /// 2026-07-28: the first question not answered yet, once the tool asks
    /// it, and what the retried call must carry on (the approval, the
    /// answers so far), for the `input_required` result.
    unanswered: Option<(oneshot::Receiver<ElicitRequestParams>, RequestState)>,
}

/// What a retried call carries in its `requestState` (2026-07-28): the
/// approval its user gave, when the call needs one, and the answers to the
/// tool's questions so far: without them, a later round would ask again
/// what an earlier one was told. All of it is the client's own answers, so
/// a client that edits it only answers for its user.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RequestState {
    /// The approval's elicitation result, as the client sent it.
    pub approval: Option<Value>,
    /// The call (tool and arguments, [`super::approval::digest`]) the
    /// approval and the answers are for: a round with other arguments is
    /// asked again, from the start.
    pub call: Option<String>,
    /// The questions' elicitation results, in the order they were asked.
    pub answers: Vec<Value>,
}

impl RequestState {
    /// The state a retried call carries (none: a first call).
    ///
    /// # Errors
    ///
    /// A `requestState` that is not what this server sent.
    pub fn parse(state: Option<&str>) -> Result<Self, String> {
        let Some(state) = state else {
            return Ok(Self::default());
        };
        let wrong = || {
            "`requestState` is not what this server sent with its question; send it back as it \
             came"
                .to_owned()
        };
        if state.len() > MAX_REQUEST_STATE {
            return Err(wrong());
        }
        let (approval, call, answers) = match serde_json::from_str::<Value>(state) {
            // Only answers, naming no call (as before calls were named).
            Ok(Value::Array(answers)) => (None, None, answers),
            Ok(Value::Object(mut state)) => {
                let call = match state.remove("for") {
                    None => None,
                    Some(Value::String(call)) => Some(call),
                    Some(_) => return Err(wrong()),
                };
                match state.remove("answers") {
                    Some(Value::Array(answers)) => (state.remove("approval"), call, answers),
                    _ => return Err(wrong()),
                }
            }
            _ => return Err(wrong()),
        };
        if answers.len() >= MAX_QUESTIONS_PER_CALL {
            return Err(wrong());
        }
        Ok(Self {
            approval,
            call,
            answers,
        })
    }

    /// As the retried call is to carry it back: the answers alone when it
    /// names no call and no approval.
    pub fn encode(&mut self) -> String {
        let answers = Value::Array(std::mem::take(&mut self.answers));
        if self.approval.is_none() && self.call.is_none() {
            return answers.to_string();
        }
        let mut state = serde_json::Map::new();
        if let Some(approval) = self.approval.take() {
            state.insert("approval".to_owned(), approval);
        }
        if let Some(call) = self.call.take() {
            state.insert("for".to_owned(), Value::String(call));
        }
        state.insert("answers".to_owned(), answers);
        Value::Object(state).to_string()
    }
}

impl Questions {
    /// No one to ask: the call's questions answer `unavailable`.
    pub fn none() -> Self {
        Self {
            sink: None,
            unanswered: None,
        }
    }

    /// The questions of a call made through rmcp's `context`, with the
    /// request's `inputResponses` and `requestState` (2026-07-28), and the
    /// approval the call was given in this round or an earlier one (for
    /// the next round to carry on).
    ///
    /// # Errors
    ///
    /// A `requestState` that is not what this server sent.
    pub fn of(
        context: &RequestContext<RoleServer>,
        input_responses: Option<&InputResponses>,
        request_state: Option<&str>,
        call: &str,
        approval: Option<Value>,
    ) -> Result<Self, String> {
        let form = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            // A capability that names neither mode is form mode (2025-06-18).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !form {
            return Ok(Self::none());
        }
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return Ok(Self::waiting(context));
        }
        Self::replayed(input_responses, request_state, call, approval)
    }

    /// 2025-11-25: each question goes to the client's user through rmcp's
    /// `context` (`elicitation/create`) while the call waits.
    fn waiting(context: &RequestContext<RoleServer>) -> Self {
        let peer = context.peer.clone();
        let sink = QuestionSink::new(move |question: Question| {
            let peer = peer.clone();
            async move {
                let Some(params) = params(question) else {
                    return Answer::Cancel;
                };
                match peer
                    .send_request(ServerRequest::ElicitRequest(Request::new(params)))
                    .await
                {
                    Ok(ClientResult::ElicitResult(result)) => answer(result),
                    Ok(_) | Err(_) => Answer::Cancel,
                }
            }
        });
        Self {
            sink: Some(sink),
            unanswered: None,
        }
    }

    /// 2026-07-28: the call's questions answered in order from the
    /// answers so far (`requestState`, and this round's `inputResponses`)
    /// when they are for `call`; the first question past them stops the
    /// call, to be answered with it ([`unanswered`](Self::unanswered)),
    /// the `approval` and the answers carried on.
    ///
    /// # Errors
    ///
    /// A `requestState` that is not what this server sent, or more answers
    /// than one call may have questions.
    fn replayed(
        input_responses: Option<&InputResponses>,
        request_state: Option<&str>,
        call: &str,
        approval: Option<Value>,
    ) -> Result<Self, String> {
        let state = RequestState::parse(request_state)?;
        // Answers count only for the call they were given for: with other
        // arguments (or no state naming them) the tool asks from the start.
        let same_call = state.call.as_deref() == Some(call);
        let mut answers = if same_call { state.answers } else { Vec::new() };
        if let Some(latest) = input_responses
            .and_then(|r| r.get(QUESTION_INPUT_KEY))
            .filter(|_| same_call)
        {
            if answers.len() >= MAX_QUESTIONS_PER_CALL {
                return Err(format!(
                    "more answers than the {MAX_QUESTIONS_PER_CALL} questions one call may ask"
                ));
            }
            answers.push(latest.clone());
        }
        let (ask, asked) = oneshot::channel();
        let ask = Arc::new(Mutex::new(Some(ask)));
        let next = Arc::new(AtomicUsize::new(0));
        let known = Arc::new(answers.clone());
        let sink = QuestionSink::new(move |question: Question| {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let known = Arc::clone(&known);
            let ask = Arc::clone(&ask);
            async move {
                if let Some(given) = known.get(n) {
                    return serde_json::from_value::<ElicitResult>(given.clone())
                        .map_or(Answer::Cancel, answer);
                }
                let Some(params) = params(question) else {
                    return Answer::Cancel;
                };
                let sender = ask.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(sender) = sender {
                    let _ = sender.send(params);
                }
                // The call is stopped and answered with the question.
                std::future::pending().await
            }
        });
        Ok(Self {
            sink: Some(sink),
            unanswered: Some((
                asked,
                RequestState {
                    approval,
                    call: Some(call.to_owned()),
                    answers,
                },
            )),
        })
    }

    /// 2026-07-28: the `input_required` result once the tool asks a
    /// question not answered yet; never for 2025-11-25 (the answer comes
    /// while the call waits).
    pub async fn unanswered(&mut self) -> InputRequiredResult {
        let Some((asked, state)) = &mut self.unanswered else {
            return std::future::pending().await;
        };
        let Ok(params) = asked.await else {
            return std::future::pending().await;
        };
        let requests = std::collections::BTreeMap::from([(
            QUESTION_INPUT_KEY.to_owned(),
            InputRequest::Elicitation(Request::new(params)),
        )]);
        let mut result = InputRequiredResult::from_input_requests(requests);
        result.request_state = Some(state.encode());
        result
    }
}

/// The elicitation of `question`, when its schema is one rmcp takes (the
/// sandbox checked its shape already).
pub(super) fn params(question: Question) -> Option<ElicitRequestParams> {
    let schema = serde_json::from_value::<ElicitationSchema>(Value::Object(question.schema))
        .map_err(|e| tracing::warn!(tool = %question.tool, "a question's schema could not be sent as an elicitation ({e}); the tool is told it was cancelled"))
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message,
        requested_schema: schema,
    })
}

pub(super) fn answer(result: ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => match result.content {
            Some(Value::Object(fields)) => Answer::Accept(fields),
            None => Answer::Accept(serde_json::Map::new()),
            Some(_) => Answer::Cancel,
        },
        ElicitationAction::Decline => Answer::Decline,
        // Cancel, and any action a later revision adds.
        _ => Answer::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_request_state_carries_the_approval_and_the_answers_back_as_sent() {
        let approval = serde_json::json!({"action": "accept"});
        let answers = vec![serde_json::json!({"action": "decline"})];
        let mut state = RequestState {
            approval: Some(approval.clone()),
            call: Some("c0ffee".to_owned()),
            answers: answers.clone(),
        };
        let sent = state.encode();
        assert_eq!(
            RequestState::parse(Some(&sent)).unwrap(),
            RequestState {
                approval: Some(approval),
                call: Some("c0ffee".to_owned()),
                answers: answers.clone(),
            }
        );
        // Without an approval, the answers alone, as a list.
        let mut plain = RequestState {
            approval: None,
            call: None,
            answers,
        };
        assert_eq!(plain.encode(), r#"[{"action":"decline"}]"#);
        assert_eq!(RequestState::parse(None).unwrap(), RequestState::default());
        for wrong in [
            "{}",
            r#"{"answers": 3}"#,
            r#"{"for": 3, "answers": []}"#,
            r#""x""#,
            "not json",
        ] {
            assert!(RequestState::parse(Some(wrong)).is_err(), "{wrong}");
        }
    }

    /// A number in an answer is the number the client sent, round after
    /// round: read as the nearest `f64` (as Rust's own parser reads it) and
    /// sent back as text that reads as that same `f64` again.
    #[test]
    fn numbers_in_the_answers_come_back_exactly_round_after_round() {
        for number in [
            // The fuzzer's: read one unit in the last place off, it was
            // sent back as 4.4444444400000004e+52 and read next as 4.44444444e+52.
            "4444444440000000014400000444440000000000001440000000000000",
            "0.1",
            "2.2250738585072011e-308",
            "9007199254740993",
            "1.7976931348623157e308",
            "123456789012345678901234567890e-20",
        ] {
            let exact: f64 = number.parse().unwrap();
            let mut sent = format!("[{number}]");
            for round in 0..3 {
                let mut state = RequestState::parse(Some(&sent)).unwrap();
                assert_eq!(
                    state.answers[0].as_f64(),
                    Some(exact),
                    "{number}, round {round}"
                );
                sent = state.encode();
            }
        }
    }
    use crate::tools::check_question_schema;

    /// Every field kind the sandbox lets through is one rmcp sends as it
    /// came (the conformance suite's schemas among them).
    #[test]
    fn every_accepted_schema_goes_out_unchanged() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe", "format": "email", "minLength": 1},
                "age": {"type": "integer", "default": 30, "minimum": 0},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "titledSingle": {"type": "string", "oneOf": [{"const": "v1", "title": "One"}]},
                "legacyEnum": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["o1", "o2"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "v1", "title": "One"}]}}
            },
            "required": ["name"]
        });
        let checked = check_question_schema(&schema).expect("accepted");
        let question = Question {
            tool: "t".into(),
            message: "m".into(),
            schema: checked,
        };
        let Some(ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        }) = params(question)
        else {
            panic!("rmcp refused the schema");
        };
        assert_eq!(serde_json::to_value(requested_schema).unwrap(), schema);
    }

    /// Issue 36 (class 8): the forms the sandbox normalizes SDK schemas to
    /// (no `properties`, a typeless enum, a nullable field) all go out as
    /// elicitations; none becomes a cancel nobody was asked.
    #[test]
    fn normalized_schemas_go_out_as_elicitations() {
        for schema in [
            json!({"type": "object"}),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "pick": {"enum": ["a", "b"]},
                "maybe": {"type": ["boolean", "null"]},
                "c": {"anyOf": [{"type": "string", "enum": ["red"]}, {"type": "null"}]}
            }}),
        ] {
            let checked = check_question_schema(&schema).expect("accepted");
            let sent = Value::Object(checked.clone());
            let question = Question {
                tool: "t".into(),
                message: "m".into(),
                schema: checked,
            };
            let Some(ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            }) = params(question)
            else {
                panic!("rmcp refused {schema}");
            };
            assert_eq!(serde_json::to_value(requested_schema).unwrap(), sent);
        }
    }
}
