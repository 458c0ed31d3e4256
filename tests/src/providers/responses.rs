//! A fake OpenAI Responses server (`POST /v1/responses`) that rejects what
//! the real API rejects: a function call without its output, an output for
//! a call it has not seen, a reasoning item sent back apart from the call
//! that followed it (either way round), a reasoning item without its
//! encrypted content when nothing is stored, and parameters the API does
//! not know (Chat Completions' `messages`, `stop`, `seed`, ...), and two
//! input items with one `id` ("Duplicate item found with id …"). A model
//! named `gpt-4…` is not a reasoning model and refuses `include`, as
//! OpenAI's do.
//!
//! A [`Turn`] with `reasoning` is answered by a reasoning model: its output
//! is `[reasoning, message?, function_call...]`, the reasoning item's
//! `encrypted_content` given only when the request asked `include:
//! ["reasoning.encrypted_content"]`; the server then remembers which item
//! followed the reasoning item and which calls need it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};

use super::server::{Dialect, FakeServer, RecordedRequest, Rejection, Turn, pieces};

/// The Responses dialect; use through [`FakeResponses`].
#[derive(Debug, Default)]
pub struct ResponsesDialect {
    counter: AtomicU64,
    /// Reasoning item id → (its encrypted content, the id of the item that
    /// followed it).
    reasoning: Mutex<HashMap<String, (String, String)>>,
    /// Function call item id → the reasoning item it needs before it.
    needs: Mutex<HashMap<String, String>>,
    /// The next stream ends with an `error` event of this message.
    stream_error: Mutex<Option<String>>,
}

/// A fake Responses server.
///
/// ```no_run
/// # async fn demo() {
/// use toolhost_tests::providers::{FakeCall, FakeResponses, Turn};
/// let server = FakeResponses::start().await;
/// server.push(Turn::calls(vec![FakeCall::new("add", serde_json::json!({"a": 1}))])
///     .with_reasoning("I should add."));
/// // point a ResponsesProvider at server.url(), then inspect server.bodies()
/// # }
/// ```
pub type FakeResponses = FakeServer<ResponsesDialect>;

impl FakeServer<ResponsesDialect> {
    /// A strict Responses server.
    pub async fn start() -> Self {
        Self::start_with(ResponsesDialect::default()).await
    }

    /// `toolhost run PROMPT` against this server as a reasoning model
    /// (`o4-mini`) of `--provider openai-responses`, its key in
    /// `TOOLHOST_TEST_KEY` (which [`toolhost_run`] sets); add the rest.
    ///
    /// [`toolhost_run`]: crate::plugins::toolhost_run
    pub fn run_args(&self, prompt: &str) -> Vec<String> {
        [
            "run",
            prompt,
            "--provider",
            "openai-responses",
            "--base-url",
            &self.url(),
            "--api-key-env",
            "TOOLHOST_TEST_KEY",
            "--model",
            "o4-mini",
        ]
        .map(str::to_owned)
        .into()
    }

    /// Answer the next accepted streaming request with
    /// `response.created` and then an `error` event saying `message`.
    pub fn fail_stream(&self, message: impl Into<String>) -> &Self {
        *lock(&self.dialect().stream_error) = Some(message.into());
        self.push(Turn::text(""))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn invalid(message: impl Into<String>) -> Rejection {
    (400, message.into())
}

/// The request fields the API knows.
const KNOWN: &[&str] = &[
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "store",
    "include",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "max_output_tokens",
    "max_tool_calls",
    "reasoning",
    "text",
    "metadata",
    "previous_response_id",
    "conversation",
    "truncation",
    "user",
    "service_tier",
    "top_logprobs",
    "prompt_cache_key",
    "safety_identifier",
    "background",
    "prompt",
];

impl ResponsesDialect {
    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// The whole output items of `turn`, remembering what the reasoning
    /// item ties together.
    fn output(&self, turn: &Turn, request: &RecordedRequest) -> Vec<Value> {
        let mut items = Vec::new();
        let encrypted = request.body["include"]
            .as_array()
            .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
        let reasoning_id = turn.reasoning.as_ref().map(|summary| {
            let id = format!("rs_{:04}", self.next());
            let mut item = json!({"type": "reasoning", "id": id,
                "summary": [{"type": "summary_text", "text": summary}]});
            if encrypted {
                item["encrypted_content"] = json!(format!("enc:{id}"));
            }
            items.push(item);
            id
        });
        if !turn.text.is_empty() {
            items.push(
                json!({"type": "message", "id": format!("msg_{:04}", self.next()),
                "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}),
            );
        }
        for call in &turn.calls {
            let n = self.next();
            let call_id = call.id.clone().unwrap_or_else(|| format!("call_{n:04}"));
            let item_id = call.item_id.clone().unwrap_or_else(|| format!("fc_{n:04}"));
            items.push(json!({"type": "function_call", "id": item_id,
                "call_id": call_id, "name": call.name, "arguments": call.arguments_text(),
                "status": "completed"}));
        }
        if let Some(rs) = reasoning_id {
            let following = items
                .get(1)
                .and_then(|i| i["id"].as_str())
                .unwrap_or_default()
                .to_owned();
            lock(&self.reasoning).insert(rs.clone(), (format!("enc:{rs}"), following));
            let mut needs = lock(&self.needs);
            for item in items.iter().filter(|i| i["type"] == "function_call") {
                needs.insert(
                    item["id"].as_str().unwrap_or_default().to_owned(),
                    rs.clone(),
                );
            }
        }
        items
    }

    fn response(&self, turn: &Turn, request: &RecordedRequest, output: Vec<Value>) -> Value {
        json!({
            "id": format!("resp_{:04}", self.next()),
            "object": "response",
            "created_at": 1_700_000_000,
            "status": "completed",
            "model": request.body["model"],
            "output": output,
            "parallel_tool_calls": true,
            "store": request.body["store"],
            "error": null,
            "incomplete_details": null,
            "usage": {"input_tokens": turn.usage.0, "output_tokens": turn.usage.1,
                      "total_tokens": turn.usage.0 + turn.usage.1},
        })
    }

    fn check_items(&self, items: &[Value], stored: bool) -> Result<(), Rejection> {
        let issued = lock(&self.reasoning);
        let needs = lock(&self.needs);
        let mut calls: HashSet<&str> = HashSet::new();
        let mut outputs: HashSet<&str> = HashSet::new();
        let mut ids: HashSet<&str> = HashSet::new();
        for (index, item) in items.iter().enumerate() {
            let id = item["id"].as_str().unwrap_or_default();
            if !id.is_empty() && !ids.insert(id) {
                return Err(invalid(format!("Duplicate item found with id {id}.")));
            }
            match item["type"].as_str() {
                Some("reasoning") => {
                    let content = item["encrypted_content"].as_str();
                    if !stored && content.is_none() {
                        return Err(invalid(format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. \
                             Try again with `store` set to true, or remove this item from your input."
                        )));
                    }
                    if let Some((expected, following)) = issued.get(id) {
                        if content.is_some_and(|c| c != expected) {
                            return Err(invalid(format!(
                                "The encrypted content for item {id} could not be verified."
                            )));
                        }
                        if items.get(index + 1).and_then(|n| n["id"].as_str()) != Some(following) {
                            return Err(invalid(format!(
                                "Item '{id}' of type 'reasoning' was provided without its required following item."
                            )));
                        }
                    }
                }
                Some("function_call") => {
                    if !item["arguments"].is_string() {
                        return Err(invalid(format!(
                            "Invalid type for 'input[{index}].arguments': expected a string, but got {} instead.",
                            item["arguments"]
                        )));
                    }
                    if let Some(rs) = needs.get(id) {
                        let before = items[..index].iter().rev().take_while(|i| {
                            matches!(i["type"].as_str(), Some("function_call" | "reasoning"))
                                || (i["type"] == "message" && i["role"] == "assistant")
                        });
                        if !before.into_iter().any(|i| i["id"] == rs.as_str()) {
                            return Err(invalid(format!(
                                "Item '{id}' of type 'function_call' was provided without its required \
                                 'reasoning' item: '{rs}'."
                            )));
                        }
                    }
                    calls.insert(item["call_id"].as_str().unwrap_or_default());
                }
                Some("function_call_output") => {
                    check_output(&item["output"], index)?;
                    let call_id = item["call_id"].as_str().unwrap_or_default();
                    if !calls.contains(call_id) {
                        return Err(invalid(format!(
                            "No tool call found for function call output with call_id {call_id}."
                        )));
                    }
                    outputs.insert(call_id);
                }
                _ => {}
            }
        }
        for item in items.iter().filter(|i| i["type"] == "function_call") {
            let call_id = item["call_id"].as_str().unwrap_or_default();
            if !outputs.contains(call_id) {
                return Err(invalid(format!(
                    "No tool output found for function call {call_id}."
                )));
            }
        }
        Ok(())
    }
}

/// The image types `input_image` takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// `function_call_output.output`: a string, or a list of `input_text`,
/// `input_image` and `input_file` items.
fn check_output(output: &Value, index: usize) -> Result<(), Rejection> {
    let items = match output {
        Value::String(_) => return Ok(()),
        Value::Array(items) => items,
        _ => {
            return Err(invalid(format!(
                "Invalid type for 'input[{index}].output': expected one of a string or array of \
                 input content items, but got {output} instead."
            )));
        }
    };
    for (k, item) in items.iter().enumerate() {
        let at = format!("input[{index}].output[{k}]");
        match item["type"].as_str().unwrap_or("") {
            "input_text" if item["text"].is_string() => {}
            "input_text" => {
                return Err(invalid(format!("Missing required parameter: '{at}.text'.")));
            }
            "input_image" => {
                let Some(url) = item["image_url"].as_str() else {
                    return Err(invalid(format!(
                        "Missing required parameter: '{at}.image_url' (or '{at}.file_id')."
                    )));
                };
                let Some((media_type, data)) = super::media::data_url(url) else {
                    return Err(invalid(format!(
                        "Invalid '{at}.image_url'. Expected a valid URL, but got a value with an invalid format."
                    )));
                };
                if !IMAGE_TYPES.contains(&media_type) {
                    return Err(invalid(format!(
                        "Invalid '{at}.image_url'. Expected a base64-encoded data URL with an image MIME type \
                         (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type \
                         '{media_type}'."
                    )));
                }
                if let Some(problem) = super::media::image_problem(media_type, data) {
                    return Err(invalid(format!("Invalid '{at}.image_url': {problem}.")));
                }
            }
            "input_file" => {}
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values are: 'input_text', 'input_image', and 'input_file'."
                )));
            }
        }
    }
    Ok(())
}

/// `event: {type}` and `data: {json}`, as the API streams.
fn event(value: &Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap_or_default()
    )
}

impl Dialect for ResponsesDialect {
    fn base_path(&self) -> &'static str {
        "/v1"
    }

    fn accepts_path(&self, path: &str) -> bool {
        path == "/v1/responses"
    }

    fn check(&self, request: &RecordedRequest) -> Result<(), Rejection> {
        let body = &request.body;
        let Some(fields) = body.as_object() else {
            return Err(invalid("The request body must be a JSON object."));
        };
        if let Some(unknown) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(invalid(format!("Unknown parameter: '{unknown}'.")));
        }
        let Some(model) = body["model"].as_str() else {
            return Err(invalid("Missing required parameter: 'model'."));
        };
        if model.starts_with("gpt-4") && body.get("include").is_some() {
            return Err(invalid(
                "Encrypted content is not supported with this model.",
            ));
        }
        for (key, high) in [("temperature", 2.0), ("top_p", 1.0)] {
            if let Some(value) = body.get(key)
                && !value.as_f64().is_some_and(|v| (0.0..=high).contains(&v))
            {
                return Err(invalid(format!(
                    "Invalid '{key}': expected a number from 0 to {high}, but got {value} instead."
                )));
            }
        }
        if let Some(value) = body.get("max_output_tokens")
            && value.as_u64().is_none_or(|n| n < 16)
        {
            return Err(invalid(format!(
                "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {value} instead."
            )));
        }
        let tools = body["tools"].as_array();
        for (index, tool) in tools.into_iter().flatten().enumerate() {
            if tool["type"] != "function" {
                return Err(invalid(format!(
                    "Invalid value for 'tools[{index}].type': expected 'function'."
                )));
            }
            if !tool["name"].is_string() {
                return Err(invalid(format!(
                    "Missing required parameter: 'tools[{index}].name'."
                )));
            }
        }
        if body.get("tool_choice").is_some() && tools.is_none_or(Vec::is_empty) {
            return Err(invalid(
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            ));
        }
        if let Some(name) = body["tool_choice"]["name"].as_str()
            && !tools
                .into_iter()
                .flatten()
                .any(|t| t["name"].as_str() == Some(name))
        {
            return Err(invalid(format!(
                "Tool choice 'function' not found in 'tools' parameter: {name}."
            )));
        }
        match &body["input"] {
            Value::String(_) => Ok(()),
            Value::Array(items) => self.check_items(items, body["store"] != false),
            _ => Err(invalid("Missing required parameter: 'input'.")),
        }
    }

    fn is_stream(&self, request: &RecordedRequest) -> bool {
        request.body["stream"] == true
    }

    fn render_json(&self, turn: &Turn, request: &RecordedRequest) -> Value {
        let output = self.output(turn, request);
        self.response(turn, request, output)
    }

    fn render_events(&self, turn: &Turn, request: &RecordedRequest) -> Vec<String> {
        let mut sequence = 0u64;
        let mut events = Vec::new();
        let mut push = |mut value: Value| {
            value["sequence_number"] = json!(sequence);
            sequence += 1;
            events.push(event(&value));
        };
        push(
            json!({"type": "response.created", "response": {"status": "in_progress", "output": []}}),
        );
        if let Some(message) = lock(&self.stream_error).take() {
            push(
                json!({"type": "error", "code": "server_error", "message": message, "param": null}),
            );
            return events;
        }
        let output = self.output(turn, request);
        for (index, item) in output.iter().enumerate() {
            let mut opening = item.clone();
            match item["type"].as_str() {
                Some("reasoning") => {
                    if let Some(fields) = opening.as_object_mut() {
                        fields.remove("encrypted_content");
                    }
                    opening["summary"] = json!([]);
                }
                Some("message") => opening["content"] = json!([]),
                Some("function_call") => opening["arguments"] = json!(""),
                _ => {}
            }
            push(
                json!({"type": "response.output_item.added", "output_index": index, "item": opening}),
            );
            let item_id = item["id"].clone();
            match item["type"].as_str() {
                Some("message") => {
                    let text = item["content"][0]["text"].as_str().unwrap_or_default();
                    for piece in pieces(text, 4) {
                        push(
                            json!({"type": "response.output_text.delta", "item_id": item_id,
                            "output_index": index, "content_index": 0, "delta": piece}),
                        );
                    }
                    push(
                        json!({"type": "response.output_text.done", "item_id": item_id,
                        "output_index": index, "content_index": 0, "text": text}),
                    );
                }
                Some("function_call") => {
                    let arguments = item["arguments"].as_str().unwrap_or_default();
                    for piece in pieces(arguments, 5) {
                        push(json!({"type": "response.function_call_arguments.delta",
                            "item_id": item_id, "output_index": index, "delta": piece}));
                    }
                    push(json!({"type": "response.function_call_arguments.done",
                        "item_id": item_id, "output_index": index, "arguments": arguments}));
                }
                _ => {}
            }
            push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        }
        let response = self.response(turn, request, output);
        push(json!({"type": "response.completed", "response": response}));
        events
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let (kind, param) = match status {
            429 => ("requests", Value::Null),
            500..=599 => ("server_error", Value::Null),
            _ if message.contains("tool") || message.contains("Item") => {
                ("invalid_request_error", json!("input"))
            }
            _ => ("invalid_request_error", Value::Null),
        };
        json!({"error": {"message": message, "type": kind, "param": param, "code": null}})
    }
}
