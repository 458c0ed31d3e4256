//! Message builders and history tables for the host's unit tests, here and
//! in `runner`.

use super::{AssistantMessage, InvariantError, Message, ToolCall, ToolResult};

/// A call `id` to tool `t` with arguments `{}`.
pub(crate) fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: "t".to_owned(),
        arguments: "{}".to_owned(),
        signature: None,
    }
}

/// An assistant turn that only calls `t`, once per id.
fn assistant(ids: &[&str]) -> Message {
    Message::Assistant(AssistantMessage {
        tool_calls: ids.iter().map(|id| call(id)).collect(),
        ..AssistantMessage::default()
    })
}

/// A successful result `{}` answering call `id`.
fn result(id: &str) -> Message {
    Message::Tool(ToolResult {
        tool_call_id: id.to_owned(),
        name: "t".to_owned(),
        content: "{}".to_owned(),
        is_error: false,
        parts: Vec::new(),
    })
}

/// A history every provider accepts: results out of order, ids reused by a
/// later turn, a final turn without calls.
pub(crate) fn valid_history() -> Vec<Message> {
    vec![
        Message::user("hi"),
        assistant(&["call_0", "call_1"]),
        result("call_1"),
        result("call_0"),
        assistant(&["call_0"]),
        result("call_0"),
        Message::user("more"),
        assistant(&[]),
    ]
}

/// Histories that break the tool-call invariant, each with the first
/// violation in it.
pub(crate) fn invalid_histories() -> Vec<(Vec<Message>, InvariantError)> {
    vec![
        (
            vec![assistant(&["a", "a"]), result("a"), result("a")],
            InvariantError::DuplicateCallId {
                index: 0,
                id: "a".into(),
            },
        ),
        (
            vec![assistant(&["a", "b"]), result("a"), assistant(&[])],
            InvariantError::Unanswered {
                index: 0,
                id: "b".into(),
            },
        ),
        (
            vec![Message::user("x"), assistant(&["a"])],
            InvariantError::Unanswered {
                index: 1,
                id: "a".into(),
            },
        ),
        (
            vec![assistant(&["a"]), Message::user("x"), result("a")],
            InvariantError::Unanswered {
                index: 0,
                id: "a".into(),
            },
        ),
        (
            vec![assistant(&["a"]), result("a"), result("a")],
            InvariantError::DuplicateResult {
                index: 2,
                id: "a".into(),
            },
        ),
        (
            vec![assistant(&["a"]), result("a"), result("b")],
            InvariantError::UnknownResult {
                index: 2,
                id: "b".into(),
            },
        ),
        (
            vec![Message::user("x"), result("a")],
            InvariantError::UnknownResult {
                index: 1,
                id: "a".into(),
            },
        ),
        (
            vec![
                assistant(&["a"]),
                result("a"),
                assistant(&["b"]),
                result("a"),
            ],
            InvariantError::UnknownResult {
                index: 3,
                id: "a".into(),
            },
        ),
    ]
}
