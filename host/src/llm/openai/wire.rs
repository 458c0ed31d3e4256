//! OpenAI Chat Completions JSON, request and response, as the API
//! documents it. Private: nothing outside `openai` sees these types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::{AssistantMessage, FinishReason, Message, ToolChoice, Usage};
use crate::tools::ToolSpec;

#[derive(Debug, Serialize)]
pub struct ChatCompletionRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
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
        content: &'a str,
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
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct ToolCall<'a> {
    pub(super) id: &'a str,
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
    pub(super) function: FunctionDef<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionDef<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters: &'a Value,
}

impl<'a> ChatCompletionRequest<'a> {
    pub(super) fn new(
        model: &'a str,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
        tool_choice: ToolChoice,
        stream: bool,
        send_reasoning: bool,
        max_tokens: Option<u32>,
    ) -> Self {
        let messages = messages
            .iter()
            .map(|message| match message {
                Message::System { content } => ChatMessage::System { content },
                Message::User { content } => ChatMessage::User { content },
                Message::Assistant(a) => assistant(a, send_reasoning),
                Message::Tool(result) => ChatMessage::Tool {
                    tool_call_id: &result.tool_call_id,
                    content: &result.content,
                },
            })
            .collect();
        let tools: Vec<Tool<'a>> = tools
            .iter()
            .map(|spec| Tool {
                kind: "function",
                function: FunctionDef {
                    name: &spec.name,
                    description: &spec.description,
                    parameters: &spec.input_schema,
                },
            })
            .collect();
        // `tool_choice` without `tools` is a 400, and "auto" is the default.
        let tool_choice = match tool_choice {
            ToolChoice::None if !tools.is_empty() => Some("none"),
            _ => None,
        };
        Self {
            model,
            messages,
            tools,
            tool_choice,
            max_tokens,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

fn assistant(message: &AssistantMessage, send_reasoning: bool) -> ChatMessage<'_> {
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
                id: &call.id,
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

#[derive(Debug, Deserialize)]
pub struct ChatCompletion {
    #[serde(default)]
    pub(super) choices: Vec<Choice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    pub(super) message: ResponseMessage,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseMessage {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) reasoning_content: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<ResponseToolCall>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseToolCall {
    #[serde(default)]
    pub(super) id: Option<String>,
    pub(super) function: ResponseFunction,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseFunction {
    pub(super) name: String,
    /// A string per the documentation; some servers send an object.
    #[serde(default)]
    pub(super) arguments: Value,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) prompt_tokens: u64,
    #[serde(default)]
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

/// A streamed chunk (`chat.completion.chunk`).
#[derive(Debug, Deserialize)]
pub(super) struct ChatCompletionChunk {
    #[serde(default)]
    pub(super) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChunkChoice {
    #[serde(default)]
    pub(super) delta: Delta,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) reasoning_content: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<DeltaToolCall>,
}

#[derive(Debug, Deserialize)]
pub(super) struct DeltaToolCall {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<DeltaFunction>,
}

#[derive(Debug, Deserialize)]
pub(super) struct DeltaFunction {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<Value>,
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
