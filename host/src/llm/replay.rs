//! Playing a recorded conversation: see [`ReplayProvider`].

use std::path::Path;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::history::{check_messages, repair_call_ids};
use super::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, LlmError, Message, Provider,
    ToolCall, ToolChoice, Usage,
};

const NAME: &str = "replay";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayFile {
    turns: Vec<ReplayTurn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayTurn {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ReplayCall>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    usage: Usage,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Value,
    #[serde(default)]
    signature: Option<String>,
}

/// A provider that plays a recorded conversation: for demos without an API
/// key, for reproducing a user's run, and for deterministic tests through
/// the real loop and the real tools.
///
/// # File format
///
/// ```json
/// {
///   "turns": [
///     {"content": "Let me look.",
///      "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
///     {"content": "The file says hello."}
///   ]
/// }
/// ```
///
/// Each turn is one assistant answer. `content`, `tool_calls`, `id`,
/// `reasoning` and `usage` (`{"input_tokens": n, "output_tokens": n}`) are
/// optional; a call without `id` gets `replay_{turn}_{position}`.
/// `arguments` is an object, or a string sent to the loop exactly as written
/// (so that malformed arguments can be replayed).
///
/// # Which turn answers
///
/// A request gets turn *k*, where *k* is the number of assistant messages
/// already in its history: the same history always gets the same answer,
/// like a deterministic model. A request with [`ToolChoice::None`] gets the
/// first turn at or after *k* without tool calls (a model told not to call
/// tools answers in text; this is how a capped run's final answer is
/// recorded). No turn left is an error naming the counts.
///
/// # Strictness
///
/// Before answering, the history is checked the way the strictest provider
/// checks it: every tool call id of an assistant message must be answered
/// by exactly one tool result before any other message, and no result may
/// answer an id that the preceding assistant message did not issue. A
/// violation is [`LlmError::Status`] 400, so demos verify the invariant too.
///
/// # Examples
///
/// ```
/// use toolhost::llm::{ChatRequest, GenerationParams, Message, Provider, ReplayProvider};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), toolhost::llm::LlmError> {
/// let replay = ReplayProvider::from_json(r#"{"turns": [{"content": "Hello!"}]}"#)?;
/// let messages = [Message::user("Hi")];
/// let request = ChatRequest {
///     messages: &messages,
///     tools: &[],
///     deferred: &[],
///     params: &GenerationParams::default(),
///     stream: false,
///     on_text: None,
/// };
/// assert_eq!(replay.complete(request).await?.message.content, "Hello!");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReplayProvider {
    turns: Vec<(AssistantMessage, Usage)>,
}

impl ReplayProvider {
    /// A provider that answers with `turns`, in order.
    pub fn new(turns: Vec<AssistantMessage>) -> Self {
        let mut turns: Vec<_> = turns.into_iter().map(|t| (t, Usage::default())).collect();
        for (index, (turn, _)) in turns.iter_mut().enumerate() {
            repair_call_ids(&mut turn.tool_calls, |p| format!("{NAME}_{index}_{p}"));
        }
        Self { turns }
    }

    /// Parse a recording (the format in the [type docs](ReplayProvider)).
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] naming what is wrong with the JSON.
    pub fn from_json(json: &str) -> Result<Self, LlmError> {
        let file: ReplayFile = serde_json::from_str(json)
            .map_err(|e| config(format!("the recording is not valid: {e}")))?;
        let turns = file
            .turns
            .into_iter()
            .enumerate()
            .map(|(index, turn)| {
                let mut calls: Vec<ToolCall> = turn
                    .tool_calls
                    .into_iter()
                    .map(|call| ToolCall {
                        id: call.id.unwrap_or_default(),
                        name: call.name,
                        arguments: match call.arguments {
                            Value::String(raw) => raw,
                            Value::Null => "{}".to_owned(),
                            other => other.to_string(),
                        },
                        signature: call.signature,
                    })
                    .collect();
                repair_call_ids(&mut calls, |p| format!("{NAME}_{index}_{p}"));
                let message = AssistantMessage {
                    content: turn.content,
                    tool_calls: calls,
                    reasoning: turn.reasoning,
                    provider_blocks: Vec::new(),
                };
                (message, turn.usage)
            })
            .collect();
        Ok(Self { turns })
    }

    /// Read and parse a recording file.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when the file cannot be read or parsed.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let text = crate::fsread::read_text(path, crate::fsread::RECORDING_MAX_BYTES, None)
            .map_err(|e| config(format!("cannot read the recording {}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| match e {
            LlmError::Config { message, .. } => config(format!("{}: {message}", path.display())),
            other => other,
        })
    }

    /// How many turns the recording holds.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether the recording is empty.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    fn answer(&self, request: &ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        // What every real provider rejects with HTTP 400, this one does too.
        check_messages(request.messages).map_err(|e| rejected(e.to_string()))?;
        let position = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant(_)))
            .count();
        // Sampling parameters change nothing in a recording; only a
        // request that forbids tools picks another turn.
        let text_only = request.params.tool_choice == ToolChoice::None;
        let found = if text_only {
            self.turns
                .iter()
                .skip(position)
                .find(|(t, _)| t.tool_calls.is_empty())
        } else {
            self.turns.get(position)
        };
        let Some((message, usage)) = found else {
            let wanted = if text_only {
                "a turn without tool calls (tools are disabled in this request)"
            } else {
                "a turn"
            };
            return Err(LlmError::InvalidResponse {
                provider: NAME.to_owned(),
                message: format!(
                    "the recording has {} turn(s) and the conversation asks for {wanted} at position {}; \
                     record more turns or lower the iteration cap",
                    self.turns.len(),
                    position + 1
                ),
            });
        };
        if request.stream
            && let Some(sink) = request.on_text
            && !message.content.is_empty()
        {
            sink(&message.content);
        }
        Ok(ChatResponse {
            message: message.clone(),
            finish_reason: if message.tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            usage: *usage,
        })
    }
}

fn config(message: String) -> LlmError {
    LlmError::Config {
        provider: NAME.to_owned(),
        message,
    }
}

fn rejected(message: String) -> LlmError {
    LlmError::Status {
        provider: NAME.to_owned(),
        status: 400,
        message,
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move { self.answer(&request) })
    }
}
