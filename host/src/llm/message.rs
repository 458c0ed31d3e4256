//! The provider-neutral conversation model.
//!
//! Every wire format converts to and from these types; nothing above `llm/`
//! sees a provider's JSON. One neutral message may become several wire
//! messages (OpenAI sends one `tool` message per result) or be merged into
//! one (Anthropic and Gemini put all results of a turn in one user message).

use serde::{Deserialize, Serialize};

use crate::tools::Content;

/// One message in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// What the user said: text, then images and audio (a prompt's
    /// messages, an attached resource: see `runner::opening`).
    User {
        /// The text.
        content: String,
        /// Images and audio after the text, in order. Each wire format
        /// sends the images it takes in a user message and a text
        /// stand-in naming the media type and size for the others (audio
        /// everywhere, for now). Empty (nothing in JSON) for text only.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<Content>,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant(AssistantMessage),
    /// The answer to one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
            parts: Vec::new(),
        }
    }

    /// A user message of `content` and then `parts` (images, audio).
    pub fn user_with_parts(content: impl Into<String>, parts: Vec<Content>) -> Self {
        Self::User {
            content: content.into(),
            parts,
        }
    }
}

/// A model's turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Text for the user (may be empty when the model only calls tools).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// Tools the model wants called, in the order it gave them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text (DeepSeek's `reasoning_content`), sent back to
    /// providers that require it and dropped for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The blocks of the provider's own server-side tools in this turn, as
    /// JSON objects in the provider's format and order: Anthropic's tool
    /// search (`server_tool_use` and `tool_search_tool_result`). Only the
    /// wire format they came from sends them back (it must, for the
    /// history to stay valid); the others drop them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_blocks: Vec<serde_json::Value>,
}

/// One tool call from the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the provider gave the call (or a stable synthetic one for
    /// providers that give none); its result must carry the same id.
    pub id: String,
    /// Which tool.
    pub name: String,
    /// The arguments exactly as the model wrote them: JSON text, which may
    /// be malformed. The registry parses and validates them.
    pub arguments: String,
    /// Opaque provider state that must be sent back with this call:
    /// Gemini's `thoughtSignature` (base64), or the OpenAI Responses API's
    /// item id and the reasoning items before the call (a JSON object).
    /// Each wire format sends back only its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub tool_call_id: String,
    /// The tool's name (Gemini matches results by name).
    pub name: String,
    /// The output (JSON text) or, when `is_error`, a message the model can
    /// act on.
    pub content: String,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Images and audio the tool returned besides its text, in order (and
    /// the text stand-ins of those the loop would not send: see
    /// [`RunnerConfig::max_media_bytes`](crate::runner::RunnerConfig)).
    /// Each wire format sends the parts it accepts in a tool result and a
    /// text stand-in naming the media type and size for the others. Empty
    /// (no allocation, nothing in JSON) for a result of text only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Content>,
}

impl ToolResult {
    /// A result of text only: `content` answers call `tool_call_id` of tool
    /// `name`.
    pub fn text(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
            parts: Vec::new(),
        }
    }
}

/// Token counts, summed over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// Why the model stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model wants tools called.
    ToolCalls,
    /// The output token limit cut the answer.
    Length,
    /// The provider filtered the answer.
    ContentFilter,
    /// Anything else the provider said.
    Other,
}
