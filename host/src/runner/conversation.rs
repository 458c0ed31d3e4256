//! [`Conversation`]: the message list and the tool-call invariant every
//! provider enforces.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::llm::{InvariantError, Message, ToolResult, check_messages};

/// The messages of one run.
///
/// The invariant (what every provider rejects otherwise): every tool call id
/// of an assistant message is unique within that message and is answered by
/// exactly one tool result, and the results directly follow it: no other
/// message comes between an assistant message and the last of its results,
/// and no result answers an id the assistant message before it did not use.
/// Ids only need to be unique per message, because local servers reuse
/// `call_0` on every turn.
///
/// The messages it starts with are the *history*: a run's answer is only
/// ever taken from what comes after them ([`added`](Self::added)), so a
/// run that stops before the model's first reply has no answer rather than
/// an old one. It is serialized as the plain array of messages; one read
/// back is all history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
    history_len: usize,
}

impl Conversation {
    /// A conversation whose history is `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            history_len: messages.len(),
            messages,
        }
    }

    /// All messages, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many of [`messages`](Self::messages) it started with.
    pub fn history_len(&self) -> usize {
        self.history_len
    }

    /// The messages appended since it started, oldest first.
    pub fn added(&self) -> &[Message] {
        self.messages.get(self.history_len..).unwrap_or_default()
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

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.messages.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(Self::new)
    }
}

impl Extend<Message> for Conversation {
    fn extend<T: IntoIterator<Item = Message>>(&mut self, iter: T) {
        self.messages.extend(iter);
    }
}

/// An error tool result for `call_id`.
pub(crate) fn error_result(call_id: &str, name: &str, content: String) -> ToolResult {
    ToolResult {
        tool_call_id: call_id.to_owned(),
        name: name.to_owned(),
        content,
        is_error: true,
        parts: Vec::new(),
    }
}
