//! OpenAI Chat Completions JSON, request and response, as the API
//! documents it. Private: nothing outside `openai` sees these types.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ChatCompletions;
use crate::llm::convert::FunctionDeclaration;
use crate::llm::ids::{IdRules, WireIds};
use crate::llm::media::{self, MediaRules};
use crate::llm::{AssistantMessage, ChatRequest, FinishReason, Message, Usage};

#[derive(Debug, Serialize)]
pub struct ChatCompletionRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<Tool<'a>>,
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(super) enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the turn is only tool calls, as OpenAI sends it.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a str>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        /// Text only: images and audio become stand-ins.
        content: Cow<'a, str>,
    },
}

/// A user message's `content`: a string for text only, else a list of
/// `text` and `image_url` parts (a `data:` URL).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<UserPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum UserPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
pub(super) struct ImageUrl {
    url: String,
}

impl<'a> UserContent<'a> {
    fn of(content: &'a str, parts: &'a [crate::tools::Content]) -> Self {
        if parts.is_empty() {
            return Self::Text(content);
        }
        let parts = media::with_text(content, parts, MediaRules::USER)
            .map(|part| match part {
                media::Part::Text(text) => UserPart::Text { text },
                media::Part::Image { media_type, data } => UserPart::ImageUrl {
                    image_url: ImageUrl {
                        url: media::Part::data_url(media_type, data),
                    },
                },
            })
            .collect();
        Self::Parts(parts)
    }
}

#[derive(Debug, Serialize)]
pub(super) struct ToolCall<'a> {
    pub(super) id: Cow<'a, str>,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) function: FunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionCall<'a> {
    pub(super) name: &'a str,
    /// A JSON *string*, exactly as the model wrote it.
    pub(super) arguments: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct Tool<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) function: FunctionDeclaration<'a, &'a Value>,
}

impl<'a> ChatCompletionRequest<'a> {
    pub(super) fn new(format: &'a ChatCompletions, request: &ChatRequest<'a>) -> Self {
        let ids = WireIds::new(request.messages, IdRules::OPENAI);
        let messages = request
            .messages
            .iter()
            .map(|message| match message {
                Message::System { content } => ChatMessage::System { content },
                Message::User { content, parts } => ChatMessage::User {
                    content: UserContent::of(content, parts),
                },
                Message::Assistant(a) => assistant(a, format.send_reasoning, &ids),
                Message::Tool(result) => ChatMessage::Tool {
                    tool_call_id: ids.get(&result.tool_call_id),
                    content: media::text_only(&result.content, &result.parts, MediaRules::CHAT),
                },
            })
            .collect();
        let tools: Vec<Tool<'a>> = request
            .tools
            .iter()
            .map(|spec| Tool {
                kind: "function",
                function: FunctionDeclaration::new(spec, &spec.input_schema),
            })
            .collect();
        Self {
            model: &format.model,
            messages,
            tools,
            stream: request.stream,
            stream_options: request.stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

fn assistant<'a>(
    message: &'a AssistantMessage,
    send_reasoning: bool,
    ids: &WireIds<'a>,
) -> ChatMessage<'a> {
    let content = if message.content.is_empty() && !message.tool_calls.is_empty() {
        None
    } else {
        Some(message.content.as_str())
    };
    ChatMessage::Assistant {
        content,
        tool_calls: message
            .tool_calls
            .iter()
            .map(|call| ToolCall {
                id: ids.get(&call.id),
                kind: "function",
                function: FunctionCall {
                    name: &call.name,
                    arguments: &call.arguments,
                },
            })
            .collect(),
        reasoning_content: if send_reasoning {
            message.reasoning.as_deref()
        } else {
            None
        },
    }
}

/// A whole answer (`chat.completion`, with [`Choice`]s) or a streamed chunk
/// (`chat.completion.chunk`, with [`ChunkChoice`]s).
#[derive(Debug, Deserialize)]
#[serde(bound = "C: Deserialize<'de>")]
pub struct Completion<C> {
    #[serde(default)]
    pub(super) choices: Vec<C>,
    pub(super) usage: Option<WireUsage>,
    /// Some servers report a failure inside a stream.
    pub(super) error: Option<Value>,
}

pub type ChatCompletion = Completion<Choice>;
pub(super) type ChatCompletionChunk = Completion<ChunkChoice>;

#[derive(Debug, Deserialize)]
pub struct Choice {
    pub(super) message: AnswerMessage<AnswerToolCall<ResponseFunction>>,
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ChunkChoice {
    pub(super) delta: AnswerMessage<DeltaToolCall>,
    pub(super) finish_reason: Option<String>,
}

/// The assistant's message, whole (`choices[].message`) or a piece of it in
/// a stream (`choices[].delta`, with tool call fragments).
#[derive(Debug, Default, Deserialize)]
#[serde(bound = "C: Deserialize<'de>")]
pub(super) struct AnswerMessage<C> {
    pub(super) content: Option<String>,
    pub(super) reasoning_content: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<C>,
}

/// A tool call, whole (`F` = [`ResponseFunction`]) or a fragment of one
/// (`F` = `Option<`[`DeltaFunction`]`>`); only a fragment has an `index`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct AnswerToolCall<F> {
    pub(super) index: Option<usize>,
    pub(super) id: Option<String>,
    pub(super) function: F,
}

pub(super) type DeltaToolCall = AnswerToolCall<Option<DeltaFunction>>;

#[derive(Debug, Deserialize)]
pub(super) struct ResponseFunction {
    pub(super) name: String,
    /// A string per the documentation; some servers send an object.
    #[serde(default)]
    pub(super) arguments: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct DeltaFunction {
    pub(super) name: Option<String>,
    pub(super) arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Self {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

/// The argument text: a string as it is, anything else as its JSON.
pub(super) fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The neutral finish reason for OpenAI's `finish_reason`.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}
