//! Assembling a streamed Chat Completion.
//!
//! Tool calls arrive as `delta.tool_calls[{index, id?, function:{name?,
//! arguments}}]`: the first fragment for an index carries the id and name,
//! the rest carry argument text to append. A fragment whose index already
//! holds a call with a *different* id starts a new call (some servers send
//! every call at index 0). The answer is complete once a `finish_reason`
//! arrived; the usage chunk (`choices: []`) and `[DONE]` may follow.

use std::collections::HashMap;

use super::wire::{self, ChatCompletionChunk};
use crate::llm::format::{StreamAssembly, StreamContext, emit};
use crate::llm::http::{HttpClient, snippet};
use crate::llm::sse::SseEvent;
use crate::llm::{AssistantMessage, ChatResponse, LlmError, TextSink, ToolCall, Usage};

#[derive(Debug, Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

/// A Chat Completions answer being streamed.
#[derive(Debug, Default)]
pub struct Assembly {
    content: String,
    reasoning: String,
    calls: Vec<Partial>,
    slot_of_index: HashMap<usize, usize>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl Assembly {
    fn take(&mut self, chunk: ChatCompletionChunk, on_text: Option<TextSink<'_>>) {
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            if let Some(text) = delta.content {
                emit(on_text, &text);
                self.content.push_str(&text);
            }
            if let Some(reasoning) = delta.reasoning_content {
                self.reasoning.push_str(&reasoning);
            }
            for (position, fragment) in delta.tool_calls.into_iter().enumerate() {
                self.apply_call(fragment.index.unwrap_or(position), fragment);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
    }

    fn apply_call(&mut self, index: usize, fragment: wire::DeltaToolCall) {
        let id = fragment.id.filter(|id| !id.is_empty());
        let existing = self.slot_of_index.get(&index).copied();
        let slot = match existing {
            Some(slot)
                if id.as_ref().is_none_or(|id| {
                    self.calls[slot].id.is_empty() || *id == self.calls[slot].id
                }) =>
            {
                slot
            }
            _ => {
                self.calls.push(Partial::default());
                self.slot_of_index.insert(index, self.calls.len() - 1);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && call.name != name
            {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&wire::arguments_text(&arguments));
            }
        }
    }
}

impl StreamAssembly for Assembly {
    fn apply(&mut self, event: &SseEvent, cx: &StreamContext<'_>) -> Result<bool, LlmError> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: ChatCompletionChunk = cx.parse(event)?;
        if let Some(error) = &chunk.error {
            return Err(cx.http.interrupted(format!(
                "the server reported an error mid-stream: {}",
                snippet(error.to_string().as_bytes())
            )));
        }
        self.take(chunk, cx.on_text);
        Ok(false)
    }

    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError> {
        let Some(reason) = self.finish_reason else {
            let what = if self.calls.is_empty() {
                "no finish_reason arrived".to_owned()
            } else {
                format!(
                    "no finish_reason arrived, {} tool call(s) may be incomplete",
                    self.calls.len()
                )
            };
            return Err(http.interrupted(what));
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|call| ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
                signature: None,
            })
            .collect();
        Ok(ChatResponse {
            message: AssistantMessage {
                content: self.content,
                tool_calls,
                reasoning: Some(self.reasoning).filter(|r| !r.is_empty()),
                provider_blocks: Vec::new(),
            },
            finish_reason: wire::finish_reason(&reason),
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(json: &str) -> ChatCompletionChunk {
        serde_json::from_str(json).expect("test chunk")
    }

    #[test]
    fn parallel_calls_assemble_by_index_and_split_on_new_ids() {
        let mut a = Assembly::default();
        for json in [
            r#"{"choices":[{"delta":{"content":"","tool_calls":[{"index":0,"id":"a","function":{"name":"add","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"mul","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"neg","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"timings":{"n":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#,
        ] {
            a.take(chunk(json), None);
        }
        let calls: Vec<_> = a
            .calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("a", "add", "{}"),
                ("b", "mul", "{\"x\":2}"),
                ("c", "neg", "{}")
            ]
        );
        assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(a.usage.output_tokens, 7);
        assert_eq!(a.content, "");
    }
}
