//! Anthropic Messages JSON. Private to `anthropic`.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Messages;
use crate::llm::convert::arguments_object;
use crate::llm::ids::{IdRules, WireIds};
use crate::llm::media::{self, MediaRules};
use crate::llm::{ChatRequest, FinishReason, Message, ToolResult, Usage};

#[derive(Debug, Serialize)]
pub struct MessagesRequest<'a> {
    pub(super) model: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) system: String,
    pub(super) messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<ToolEntry<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct WireMessage<'a> {
    pub(super) role: &'static str,
    pub(super) content: Vec<Block<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A call of a server tool (the tool search tool), sent back as it came.
    ServerToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The tool search tool's answer, sent back as it came but for
    /// references to tools this request no longer defines.
    ToolSearchToolResult {
        tool_use_id: String,
        content: Value,
    },
    /// A text or image block of a user message with parts, as in a tool
    /// result.
    #[serde(untagged)]
    Part(ResultBlock<'a>),
}

/// `tool_result.content`: a string for a result of text only (as before
/// results had parts), else a list of `text` and `image` blocks.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ResultBlock<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResultBlock<'a> {
    Text { text: Cow<'a, str> },
    Image { source: ImageSource<'a> },
}

#[derive(Debug, Serialize)]
pub(super) struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: String,
}

impl<'a> ResultContent<'a> {
    /// The text first (unless empty: the API rejects empty text blocks),
    /// then each part as a block or a stand-in.
    fn of(result: &'a ToolResult) -> Self {
        if result.parts.is_empty() {
            return Self::Text(&result.content);
        }
        let blocks = ResultBlock::all(&result.content, &result.parts, MediaRules::ANTHROPIC);
        Self::Blocks(blocks.collect())
    }
}

impl<'a> ResultBlock<'a> {
    /// `text` (unless empty), then each part as a block or a stand-in:
    /// a tool result's content, or a user message's.
    fn all(
        text: &'a str,
        parts: &'a [crate::tools::Content],
        rules: MediaRules,
    ) -> impl Iterator<Item = Self> {
        media::with_text(text, parts, rules).map(|part| match part {
            media::Part::Text(text) => ResultBlock::Text { text },
            media::Part::Image { media_type, data } => ResultBlock::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type,
                    data: media::Part::base64(data),
                },
            },
        })
    }
}

#[derive(Debug, Serialize)]
pub(super) struct Tool<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) input_schema: &'a Value,
    /// Held back until the tool search tool finds it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) defer_loading: bool,
}

/// An entry of `tools`: a tool of ours, or the API's tool search tool.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolEntry<'a> {
    Search {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
    },
    Tool(Tool<'a>),
}

/// The tool search tool's type (the BM25 variant: it takes the model's
/// words, as ours does).
pub(super) const SEARCH_TOOL_TYPE: &str = "tool_search_tool_bm25_20251119";
/// Its name.
pub(super) const SEARCH_TOOL_NAME: &str = "tool_search_tool_bm25";
/// The beta a request with the tool search tool must name in
/// `anthropic-beta`.
pub(super) const SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

/// The wire block of one of [`AssistantMessage::provider_blocks`]
/// (`crate::llm::AssistantMessage`), or `None` for one this format does
/// not know. A `tool_search_tool_result` keeps only its references to tools
/// in `defined`: the API rejects a reference to a tool the request does not
/// define (one removed from the registry since it was found).
fn provider_block(block: &Value, defined: &HashSet<&str>) -> Option<Block<'static>> {
    let text = |key: &str| block[key].as_str().map(str::to_owned);
    match block["type"].as_str()? {
        "server_tool_use" => Some(Block::ServerToolUse {
            id: text("id")?,
            name: text("name")?,
            input: match &block["input"] {
                Value::Object(_) => block["input"].clone(),
                _ => json!({}),
            },
        }),
        "tool_search_tool_result" => {
            let mut content = block["content"].clone();
            if let Some(references) = content
                .get_mut("tool_references")
                .and_then(Value::as_array_mut)
            {
                references.retain(|r| {
                    r["tool_name"]
                        .as_str()
                        .is_some_and(|name| defined.contains(name))
                });
            }
            Some(Block::ToolSearchToolResult {
                tool_use_id: text("tool_use_id")?,
                content,
            })
        }
        _ => None,
    }
}

impl<'a> MessagesRequest<'a> {
    /// The request body. System messages, wherever they are, join the
    /// top-level `system` (separated by a blank line). Consecutive messages
    /// of one role merge into one wire message, and within a user message
    /// every `tool_result` block comes before any text, so that the results
    /// of a turn are "first in the very next user message" even when the
    /// loop appended a user message after them. Empty messages are skipped:
    /// the API rejects empty text blocks.
    pub(super) fn new(format: &'a Messages, request: &ChatRequest<'a>) -> Self {
        let mut system: Vec<&str> = Vec::new();
        let mut out: Vec<WireMessage<'a>> = Vec::new();
        let ids = WireIds::new(request.messages, IdRules::ANTHROPIC);
        let defined: HashSet<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        for message in request.messages {
            match message {
                Message::System { content } => system.push(content),
                Message::User { content, parts } if parts.is_empty() => {
                    let text = (!content.is_empty()).then_some(Block::Text { text: content });
                    push(&mut out, "user", None, text);
                }
                Message::User { content, parts } => {
                    for block in ResultBlock::all(content, parts, MediaRules::USER) {
                        push(&mut out, "user", None, Some(Block::Part(block)));
                    }
                }
                Message::Tool(result) => {
                    let block = Block::ToolResult {
                        tool_use_id: ids.get(&result.tool_call_id),
                        content: ResultContent::of(result),
                        is_error: result.is_error,
                    };
                    push(&mut out, "user", Some(block), None);
                }
                Message::Assistant(a) => {
                    if !a.content.is_empty() {
                        push(
                            &mut out,
                            "assistant",
                            None,
                            Some(Block::Text { text: &a.content }),
                        );
                    }
                    for block in &a.provider_blocks {
                        let block = provider_block(block, &defined);
                        push(&mut out, "assistant", None, block);
                    }
                    for call in &a.tool_calls {
                        let block = Block::ToolUse {
                            id: ids.get(&call.id),
                            name: &call.name,
                            input: arguments_object(&call.arguments),
                        };
                        push(&mut out, "assistant", None, Some(block));
                    }
                }
            }
        }
        let search = (!request.deferred.is_empty()).then_some(ToolEntry::Search {
            kind: SEARCH_TOOL_TYPE,
            name: SEARCH_TOOL_NAME,
        });
        let tools: Vec<ToolEntry<'a>> = search
            .into_iter()
            .chain(request.tools.iter().map(|spec| {
                ToolEntry::Tool(Tool {
                    name: &spec.name,
                    description: &spec.description,
                    input_schema: &spec.input_schema,
                    defer_loading: request.deferred.contains(&spec.name),
                })
            }))
            .collect();
        Self {
            model: &format.model,
            system: system.join("\n\n"),
            messages: out,
            tools,
            stream: request.stream,
        }
    }
}

/// Add a result block (kept ahead of other blocks) or another block to the
/// last message when it has `role`, else start a new message.
fn push<'a>(
    out: &mut Vec<WireMessage<'a>>,
    role: &'static str,
    result: Option<Block<'a>>,
    other: Option<Block<'a>>,
) {
    if result.is_none() && other.is_none() {
        return;
    }
    if out.last().is_none_or(|last| last.role != role) {
        out.push(WireMessage {
            role,
            content: Vec::new(),
        });
    }
    let Some(last) = out.last_mut() else { return };
    if let Some(result) = result {
        let first_other = last
            .content
            .iter()
            .position(|b| !matches!(b, Block::ToolResult { .. }))
            .unwrap_or(last.content.len());
        last.content.insert(first_other, result);
    }
    if let Some(other) = other {
        last.content.push(other);
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MessagesResponse {
    pub(super) content: Vec<ResponseBlock>,
    pub(super) stop_reason: Option<String>,
    pub(super) usage: WireUsage,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResponseBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// A call of the tool search tool (kept, to be sent back).
    ServerToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// The tool search tool's answer (kept, to be sent back).
    ToolSearchToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
    },
    /// Thinking, redacted thinking, other server tools: not part of the
    /// neutral model.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    pub(super) input_tokens: Option<u64>,
    pub(super) cache_creation_input_tokens: Option<u64>,
    pub(super) cache_read_input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
}

impl WireUsage {
    /// All prompt tokens, cached or not.
    pub(super) fn input(&self) -> Option<u64> {
        self.input_tokens.map(|n| {
            n + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }

    pub(super) fn to_usage(self) -> Usage {
        Usage {
            input_tokens: self.input().unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
        }
    }
}

/// One streamed event's data (its `type` repeats the `event:` name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ResponseBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct StartMessage {
    pub(super) usage: WireUsage,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct MessageDeltaBody {
    pub(super) stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ErrorBody {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) message: String,
}

/// The neutral form of a server tool's call: the block as the API sends it.
pub(super) fn server_tool_use(id: String, name: String, input: Value) -> Value {
    json!({"type": "server_tool_use", "id": id, "name": name, "input": input})
}

/// The neutral form of the tool search tool's answer.
pub(super) fn tool_search_result(tool_use_id: String, content: Value) -> Value {
    json!({"type": "tool_search_tool_result", "tool_use_id": tool_use_id, "content": content})
}

/// The neutral finish reason for Anthropic's `stop_reason`.
pub(super) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}
