//! Assembling a streamed Anthropic message from its events.

use std::collections::BTreeMap;

use super::wire::{self, BlockDelta, ResponseBlock, StreamEvent};
use crate::llm::format::{StreamAssembly, StreamContext, emit};
use crate::llm::http::HttpClient;
use crate::llm::sse::SseEvent;
use crate::llm::{AssistantMessage, ChatResponse, LlmError, ToolCall, Usage};

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The `input` of `content_block_start`, used when no
        /// `input_json_delta` follows.
        start_input: serde_json::Value,
        json: String,
    },
    /// A server tool's call, its input streamed like a tool call's.
    ServerToolUse {
        id: String,
        name: String,
        start_input: serde_json::Value,
        json: String,
    },
    /// A server tool's answer, whole at its start.
    Server(serde_json::Value),
    Other,
}

/// A Messages answer being streamed: complete only at `message_stop`.
#[derive(Debug, Default)]
pub struct Assembly {
    blocks: BTreeMap<usize, Block>,
    usage: Usage,
    stop_reason: Option<String>,
    stopped: bool,
}

impl StreamAssembly for Assembly {
    fn apply(&mut self, event: &SseEvent, cx: &StreamContext<'_>) -> Result<bool, LlmError> {
        match cx.parse::<StreamEvent>(event)? {
            StreamEvent::MessageStart { message } => self.usage = message.usage.to_usage(),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    ResponseBlock::Text { text } => {
                        emit(cx.on_text, &text);
                        Block::Text(text)
                    }
                    ResponseBlock::ToolUse { id, name, input } => Block::ToolUse {
                        id,
                        name,
                        start_input: input,
                        json: String::new(),
                    },
                    ResponseBlock::ServerToolUse { id, name, input } => Block::ServerToolUse {
                        id,
                        name,
                        start_input: input,
                        json: String::new(),
                    },
                    ResponseBlock::ToolSearchToolResult {
                        tool_use_id,
                        content,
                    } => Block::Server(wire::tool_search_result(tool_use_id, content)),
                    ResponseBlock::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Block::Text(text)), BlockDelta::TextDelta { text: piece }) => {
                        emit(cx.on_text, &piece);
                        text.push_str(&piece);
                    }
                    (
                        Some(Block::ToolUse { json, .. } | Block::ServerToolUse { json, .. }),
                        BlockDelta::InputJsonDelta { partial_json },
                    ) => {
                        json.push_str(&partial_json);
                    }
                    (None, _) => {
                        return Err(cx.http.invalid(format!(
                            "content_block_delta for block {index}, which never started"
                        )));
                    }
                    _ => {}
                }
            }
            StreamEvent::ContentBlockStop {} | StreamEvent::Ping | StreamEvent::Other => {}
            StreamEvent::MessageDelta {
                delta,
                usage: delta_usage,
            } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(input) = delta_usage.input() {
                    self.usage.input_tokens = input;
                }
                if let Some(output) = delta_usage.output_tokens {
                    self.usage.output_tokens = output;
                }
            }
            StreamEvent::MessageStop => {
                self.stopped = true;
                return Ok(true);
            }
            StreamEvent::Error { error } => {
                return Err(cx.http.interrupted(format!(
                    "the provider sent an error event: {}: {}",
                    error.kind, error.message
                )));
            }
        }
        Ok(false)
    }

    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError> {
        if !self.stopped {
            let open_calls = self
                .blocks
                .values()
                .filter(|b| matches!(b, Block::ToolUse { .. }))
                .count();
            return Err(http.interrupted(format!(
                "no message_stop arrived ({open_calls} tool call(s) may be incomplete)"
            )));
        }
        let mut message = AssistantMessage::default();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => message.content.push_str(&text),
                Block::ToolUse {
                    id,
                    name,
                    start_input,
                    json,
                } => message.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: match (json.is_empty(), start_input.is_null()) {
                        (false, _) => json,
                        (true, true) => "{}".to_owned(),
                        (true, false) => start_input.to_string(),
                    },
                    signature: None,
                }),
                Block::ServerToolUse {
                    id,
                    name,
                    start_input,
                    json,
                } => {
                    // An input that does not parse is sent back as `{}`:
                    // the API takes an object only.
                    let input = match json.is_empty() {
                        true => start_input,
                        false => serde_json::from_str(&json).unwrap_or_default(),
                    };
                    let input = if input.is_object() {
                        input
                    } else {
                        serde_json::json!({})
                    };
                    message
                        .provider_blocks
                        .push(wire::server_tool_use(id, name, input));
                }
                Block::Server(block) => message.provider_blocks.push(block),
                Block::Other => {}
            }
        }
        Ok(ChatResponse {
            message,
            finish_reason: wire::finish_reason(self.stop_reason.as_deref()),
            usage: self.usage,
        })
    }
}
