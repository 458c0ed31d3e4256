//! The message history every provider checks: each tool call id of an
//! assistant message is unique within it and answered by exactly one tool
//! result right after it. One definition here, used by the runner before
//! each request, by the replay provider (which rejects what real providers
//! reject), and by every wire format to repair the ids of an answer.

use std::collections::{BTreeMap, BTreeSet};

use super::{AssistantMessage, ChatResponse, FinishReason, Message, ToolCall};

/// A way the conversation breaks the tool-call invariant (see
/// [`Conversation::check_invariant`](crate::runner::Conversation::check_invariant)). Every variant names the index of the
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

/// [`Conversation::check_invariant`](crate::runner::Conversation::check_invariant) over any message slice.
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
/// duplicates), skipping any id another call of the message already uses;
/// an empty id becomes `call_{position}` under the same rule. Returns
/// `(position, old id, new id)` for every renamed call.
pub fn dedupe_call_ids(message: &mut AssistantMessage) -> Vec<(usize, String, String)> {
    repair_call_ids(&mut message.tool_calls, |position| {
        format!("call_{position}")
    })
}

/// [`dedupe_call_ids`] with `fresh(position)` naming a call that has no id.
pub(crate) fn repair_call_ids(
    calls: &mut [ToolCall],
    fresh: impl Fn(usize) -> String,
) -> Vec<(usize, String, String)> {
    let mut taken: BTreeSet<String> = calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !id.is_empty())
        .collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut renamed = Vec::new();
    for (position, call) in calls.iter_mut().enumerate() {
        if !call.id.is_empty() && seen.insert(call.id.clone()) {
            continue;
        }
        let base = if call.id.is_empty() {
            fresh(position)
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

/// How many assistant turns `messages` holds: the index the next turn
/// will have, used for deterministic synthetic call ids.
pub(crate) fn next_turn_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count()
}

/// What every wire format does to an answer before returning it, so that
/// the rest of the host sees one shape whatever the server:
/// - a call without an id gets `{prefix}_{turn}_{position}` (`turn` from
///   [`next_turn_index`], so the same conversation always gets the same
///   ids) and repeated ids are made unique ([`repair_call_ids`]);
/// - an answer with tool calls that says it stopped (some servers send
///   `stop`/`end_turn`/`STOP` next to calls) finishes with
///   [`FinishReason::ToolCalls`]: the calls decide.
pub(crate) fn normalize_answer(answer: &mut ChatResponse, prefix: &str, turn: usize) {
    repair_call_ids(&mut answer.message.tool_calls, |position| {
        format!("{prefix}_{turn}_{position}")
    });
    if !answer.message.tool_calls.is_empty() && answer.finish_reason == FinishReason::Stop {
        answer.finish_reason = FinishReason::ToolCalls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::fixtures::{call, invalid_histories, valid_history};

    #[test]
    fn valid_conversation_with_reused_ids_across_turns() {
        assert_eq!(check_messages(&valid_history()), Ok(()));
    }

    #[test]
    fn each_violation_is_found() {
        for (messages, expected) in invalid_histories() {
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

    #[test]
    fn every_answer_gets_unique_ids_whatever_the_server_sent() {
        let mut answer = ChatResponse {
            message: AssistantMessage {
                tool_calls: vec![call("a_2"), call("a"), call("a"), call(""), call("")],
                ..Default::default()
            },
            finish_reason: FinishReason::Stop,
            usage: Default::default(),
        };
        normalize_answer(&mut answer, "call", 4);
        let ids: Vec<&str> = answer
            .message
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["a_2", "a", "a_3", "call_4_3", "call_4_4"]);
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        let before = answer.clone();
        normalize_answer(&mut answer, "call", 4);
        assert_eq!(answer, before, "a second pass changes nothing");
    }
}
