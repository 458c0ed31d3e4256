//! [`Conversation`]: the message list and the tool-call invariant every
//! provider enforces.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::llm::{AssistantMessage, Message, ToolResult};

/// A way the conversation breaks the tool-call invariant (see
/// [`Conversation::check_invariant`]). Every variant names the index of the
/// offending message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvariantError {
    /// One assistant message uses the same call id twice.
    #[error("assistant message {index} uses tool call id `{id}` more than once")]
    DuplicateCallId {
        /// Index of the assistant message.
        index: usize,
        /// The repeated id.
        id: String,
    },
    /// A call is not answered before the next non-tool message (or before
    /// the end of the conversation).
    #[error("tool call `{id}` of assistant message {index} has no tool result")]
    Unanswered {
        /// Index of the assistant message.
        index: usize,
        /// The unanswered id.
        id: String,
    },
    /// A call is answered twice.
    #[error("tool result {index} answers tool call `{id}` a second time")]
    DuplicateResult {
        /// Index of the second result.
        index: usize,
        /// The id.
        id: String,
    },
    /// A result answers no call of the assistant message before it.
    #[error(
        "tool result {index} answers `{id}`, which the assistant message before it did not call"
    )]
    UnknownResult {
        /// Index of the result.
        index: usize,
        /// The id.
        id: String,
    },
}

/// The messages of one run.
///
/// The invariant (what every provider rejects otherwise): every tool call id
/// of an assistant message is unique within that message and is answered by
/// exactly one tool result, and the results directly follow it: no other
/// message comes between an assistant message and the last of its results,
/// and no result answers an id the assistant message before it did not use.
/// Ids only need to be unique per message, because local servers reuse
/// `call_0` on every turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Conversation {
    messages: Vec<Message>,
}

impl Conversation {
    /// A conversation starting with `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        Self { messages }
    }

    /// All messages, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Append one message. Nothing is checked here; requests are checked.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// The messages, by value.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Check the tool-call invariant described on [`Conversation`].
    ///
    /// # Errors
    ///
    /// The first violation found, scanning from the start.
    pub fn check_invariant(&self) -> Result<(), InvariantError> {
        check_messages(&self.messages)
    }
}

impl Extend<Message> for Conversation {
    fn extend<T: IntoIterator<Item = Message>>(&mut self, iter: T) {
        self.messages.extend(iter);
    }
}

/// [`Conversation::check_invariant`] over any message slice.
///
/// # Errors
///
/// The first violation found.
pub fn check_messages(messages: &[Message]) -> Result<(), InvariantError> {
    // Ids of the last assistant message: `false` until answered.
    let mut open: BTreeMap<&str, bool> = BTreeMap::new();
    let mut open_index = 0;
    let unanswered = |open: &BTreeMap<&str, bool>, index: usize| {
        open.iter()
            .find(|(_, answered)| !**answered)
            .map(|(id, _)| InvariantError::Unanswered {
                index,
                id: (*id).to_owned(),
            })
    };
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Tool(result) => match open.get_mut(result.tool_call_id.as_str()) {
                Some(answered @ false) => *answered = true,
                Some(true) => {
                    return Err(InvariantError::DuplicateResult {
                        index,
                        id: result.tool_call_id.clone(),
                    });
                }
                None => {
                    return Err(InvariantError::UnknownResult {
                        index,
                        id: result.tool_call_id.clone(),
                    });
                }
            },
            other => {
                if let Some(e) = unanswered(&open, open_index) {
                    return Err(e);
                }
                open.clear();
                if let Message::Assistant(assistant) = other {
                    open_index = index;
                    for call in &assistant.tool_calls {
                        if open.insert(call.id.as_str(), false).is_some() {
                            return Err(InvariantError::DuplicateCallId {
                                index,
                                id: call.id.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    match unanswered(&open, open_index) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Make the call ids of one response unique and non-empty, in place.
///
/// Deterministic: calls are visited in order; the first use of an id keeps
/// it; a later duplicate `x` becomes `x_2` (`x_3`, ... for further
/// duplicates), skipping any suffix another call of the message already
/// uses; an empty id becomes `call_{position}` under the same rule. Returns
/// `(position, old id, new id)` for every renamed call.
pub fn dedupe_call_ids(message: &mut AssistantMessage) -> Vec<(usize, String, String)> {
    let mut taken: BTreeSet<String> = message
        .tool_calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !id.is_empty())
        .collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut renamed = Vec::new();
    for (position, call) in message.tool_calls.iter_mut().enumerate() {
        if !call.id.is_empty() && seen.insert(call.id.clone()) {
            continue;
        }
        let base = if call.id.is_empty() {
            format!("call_{position}")
        } else {
            call.id.clone()
        };
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        seen.insert(candidate.clone());
        renamed.push((
            position,
            std::mem::replace(&mut call.id, candidate.clone()),
            candidate,
        ));
    }
    renamed
}

/// An error tool result for `call_id`.
pub(crate) fn error_result(call_id: &str, name: &str, content: String) -> ToolResult {
    ToolResult {
        tool_call_id: call_id.to_owned(),
        name: name.to_owned(),
        content,
        is_error: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: "t".to_owned(),
            arguments: "{}".to_owned(),
            signature: None,
        }
    }

    fn assistant(ids: &[&str]) -> Message {
        Message::Assistant(AssistantMessage {
            tool_calls: ids.iter().map(|id| call(id)).collect(),
            ..Default::default()
        })
    }

    fn result(id: &str) -> Message {
        Message::Tool(ToolResult {
            tool_call_id: id.to_owned(),
            name: "t".to_owned(),
            content: "{}".to_owned(),
            is_error: false,
        })
    }

    #[test]
    fn valid_conversation_with_reused_ids_across_turns() {
        let c = Conversation::new(vec![
            Message::user("hi"),
            assistant(&["call_0", "call_1"]),
            result("call_1"),
            result("call_0"),
            assistant(&["call_0"]),
            result("call_0"),
            Message::user("more"),
            assistant(&[]),
        ]);
        assert_eq!(c.check_invariant(), Ok(()));
    }

    #[test]
    fn each_violation_is_found() {
        let cases = [
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
        ];
        for (messages, expected) in cases {
            assert_eq!(check_messages(&messages), Err(expected), "{messages:?}");
        }
    }

    #[test]
    fn dedupe_renames_later_duplicates_deterministically() {
        let mut m = AssistantMessage {
            tool_calls: vec![call("a"), call("a"), call("a_2"), call(""), call("a")],
            ..Default::default()
        };
        let renamed = dedupe_call_ids(&mut m);
        let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "a_3", "a_2", "call_3", "a_4"]);
        assert_eq!(
            renamed,
            vec![
                (1, "a".to_owned(), "a_3".to_owned()),
                (3, String::new(), "call_3".to_owned()),
                (4, "a".to_owned(), "a_4".to_owned()),
            ]
        );
        assert!(
            dedupe_call_ids(&mut m).is_empty(),
            "a second pass changes nothing"
        );
    }
}
