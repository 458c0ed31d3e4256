//! Assembling a streamed response.
//!
//! Every event's `data` has a `type`. Output items open with
//! `response.output_item.added {output_index, item}` and close with
//! `response.output_item.done` carrying the whole item (reasoning items get
//! their `encrypted_content` only there); in between, text comes as
//! `response.output_text.delta` and call arguments as
//! `response.function_call_arguments.delta` / `.done`. The answer is
//! complete at `response.completed` (or `.incomplete`, cut by a limit);
//! `response.failed` and `error` report a failure.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::wire::{self, Response};
use crate::llm::format::{StreamAssembly, StreamContext, emit};
use crate::llm::http::{HttpClient, snippet};
use crate::llm::sse::SseEvent;
use crate::llm::{ChatResponse, LlmError};

/// One event, with the fields any event type may carry.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    output_index: usize,
    item: Option<Value>,
    delta: Option<String>,
    arguments: Option<String>,
    response: Option<Response>,
    message: Option<String>,
    code: Option<Value>,
}

/// An output item being streamed.
#[derive(Debug, Default)]
struct Slot {
    item: Value,
    /// Whether `response.output_item.done` gave the whole item.
    done: bool,
    text: String,
    arguments: String,
}

/// A Responses answer being streamed.
#[derive(Debug, Default)]
pub struct Assembly {
    slots: BTreeMap<usize, Slot>,
    last: Option<Response>,
}

impl Assembly {
    fn take(&mut self, event: Event, cx: &StreamContext<'_>) -> Result<bool, LlmError> {
        match event.kind.as_str() {
            "response.output_item.added" => {
                let slot = self.slots.entry(event.output_index).or_default();
                slot.item = event.item.unwrap_or_default();
            }
            "response.output_item.done" => {
                let slot = self.slots.entry(event.output_index).or_default();
                slot.item = event.item.unwrap_or_default();
                slot.done = true;
            }
            "response.output_text.delta" => {
                let text = event.delta.unwrap_or_default();
                emit(cx.on_text, &text);
                self.slots
                    .entry(event.output_index)
                    .or_default()
                    .text
                    .push_str(&text);
            }
            "response.function_call_arguments.delta" => {
                let slot = self.slots.entry(event.output_index).or_default();
                slot.arguments.push_str(&event.delta.unwrap_or_default());
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = event.arguments {
                    self.slots.entry(event.output_index).or_default().arguments = arguments;
                }
            }
            "response.completed" | "response.incomplete" => {
                self.last = Some(event.response.unwrap_or_default());
                return Ok(true);
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error).unwrap_or(Value::Null);
                return Err(cx.http.interrupted(format!(
                    "the server reported a failure mid-stream: {}",
                    snippet(error.to_string().as_bytes())
                )));
            }
            "error" => {
                let message = event.message.unwrap_or_default();
                let code = event.code.map(|c| format!(" ({c})")).unwrap_or_default();
                return Err(cx.http.interrupted(format!(
                    "the server reported an error mid-stream{code}: {}",
                    snippet(message.as_bytes())
                )));
            }
            _ => {}
        }
        Ok(false)
    }
}

impl StreamAssembly for Assembly {
    fn apply(&mut self, event: &SseEvent, cx: &StreamContext<'_>) -> Result<bool, LlmError> {
        if event.data.trim() == "[DONE]" {
            return Ok(self.last.is_some());
        }
        let parsed: Event = cx.parse(event)?;
        self.take(parsed, cx)
    }

    fn finish(self, http: &HttpClient) -> Result<ChatResponse, LlmError> {
        let Some(mut response) = self.last else {
            let open = self.slots.values().filter(|s| !s.done).count();
            return Err(http.interrupted(format!(
                "no response.completed arrived, {open} output item(s) may be incomplete"
            )));
        };
        if !self.slots.is_empty() {
            response.output = self.slots.into_values().map(Slot::into_item).collect();
        }
        super::answer(response).map_err(|e| http.invalid(e))
    }
}

impl Slot {
    /// The whole item: as `output_item.done` gave it, or patched from the
    /// deltas when that event did not come.
    fn into_item(self) -> Value {
        let mut item = self.item;
        if self.done || !item.is_object() {
            return item;
        }
        match item["type"].as_str() {
            Some("function_call") => item["arguments"] = Value::String(self.arguments),
            Some("message") if wire::message_text(&item).is_empty() => {
                item["content"] = serde_json::json!([{"type": "output_text", "text": self.text, "annotations": []}]);
            }
            _ => {}
        }
        item
    }
}
