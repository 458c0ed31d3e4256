//! A fake OpenAI Chat Completions server (`POST /v1/chat/completions`), in
//! three flavours: OpenAI itself, DeepSeek (which also demands
//! `reasoning_content` back), and llama.cpp's `llama-server` (lenient about
//! history, quirky in its output).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::server::{Dialect, FakeServer, RecordedRequest, Rejection, Turn, data_event, pieces};

/// Which server the fake imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiFlavor {
    /// api.openai.com: strict about tool call / result pairing.
    OpenAi,
    /// api.deepseek.com: as strict, and an assistant turn with tool calls
    /// that came with `reasoning_content` must send it back.
    DeepSeek,
    /// llama.cpp `llama-server`: ids of 32 alphanumerics, `content: ""`
    /// next to tool calls, `timings` in the last chunk, no pairing check,
    /// but 400 for a history ending in an assistant turn with tool calls.
    LlamaCpp,
}

/// The OpenAI-format dialect; use through [`FakeOpenAi`].
#[derive(Debug)]
pub struct OpenAiDialect {
    flavor: OpenAiFlavor,
    counter: AtomicU64,
    /// DeepSeek: reasoning issued with the turn whose first call has this id.
    reasoning: Mutex<HashMap<String, String>>,
}

/// A fake OpenAI-compatible server.
///
/// ```no_run
/// # async fn demo() {
/// use toolhost_tests::providers::{FakeOpenAi, FakeCall, Turn};
/// let server = FakeOpenAi::start().await;
/// server.push(Turn::calls(vec![FakeCall::new("add", serde_json::json!({"a": 1}))]));
/// // point the client at server.url(), then inspect server.requests()
/// # }
/// ```
pub type FakeOpenAi = FakeServer<OpenAiDialect>;

impl FakeServer<OpenAiDialect> {
    /// A strict OpenAI server.
    pub async fn start() -> Self {
        Self::start_flavor(OpenAiFlavor::OpenAi).await
    }

    /// A DeepSeek server.
    pub async fn start_deepseek() -> Self {
        Self::start_flavor(OpenAiFlavor::DeepSeek).await
    }

    /// A llama.cpp server.
    pub async fn start_llama_cpp() -> Self {
        Self::start_flavor(OpenAiFlavor::LlamaCpp).await
    }

    /// A server of `flavor`.
    pub async fn start_flavor(flavor: OpenAiFlavor) -> Self {
        Self::start_with(OpenAiDialect::new(flavor)).await
    }
}

impl OpenAiDialect {
    /// The dialect of `flavor`, for checking a request without a server.
    pub fn new(flavor: OpenAiFlavor) -> Self {
        Self {
            flavor,
            counter: AtomicU64::new(0),
            reasoning: Mutex::new(HashMap::new()),
        }
    }
}

impl FakeServer<OpenAiDialect> {
    /// Which server it imitates.
    pub fn flavor(&self) -> OpenAiFlavor {
        self.dialect().flavor
    }
}

impl OpenAiDialect {
    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// The ids for `turn`'s calls, as this server would choose them.
    fn ids(&self, turn: &Turn) -> Vec<String> {
        turn.calls
            .iter()
            .map(|call| {
                call.id.clone().unwrap_or_else(|| {
                    let n = self.next();
                    match self.flavor {
                        OpenAiFlavor::LlamaCpp => llama_id(n),
                        _ => format!("call_{n:04}"),
                    }
                })
            })
            .collect()
    }

    fn remember_reasoning(&self, turn: &Turn, ids: &[String]) {
        if let (OpenAiFlavor::DeepSeek, Some(reasoning), Some(first)) =
            (self.flavor, &turn.reasoning, ids.first())
        {
            self.reasoning
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(first.clone(), reasoning.clone());
        }
    }

    fn finish_reason(turn: &Turn) -> &'static str {
        if turn.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }
}

/// 32 letters and digits, like llama.cpp's random ids (deterministic here).
fn llama_id(n: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state = n
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (0..32)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ALPHABET[((state >> 33) % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

fn invalid(message: impl Into<String>) -> Rejection {
    (400, message.into())
}

/// A `tool` message's content is text: a string or a list of `text`
/// parts. An image there is refused, as OpenAI refuses it.
fn check_tool_content(messages: &[Value]) -> Result<(), Rejection> {
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "tool" {
            continue;
        }
        match &message["content"] {
            Value::String(_) => {}
            Value::Array(parts) => {
                for (k, part) in parts.iter().enumerate() {
                    match part["type"].as_str().unwrap_or("") {
                        "text" => {}
                        "image_url" => {
                            return Err(invalid(format!(
                                "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role \
                                 'user', but this message with role 'tool' contains an image URL."
                            )));
                        }
                        other => {
                            return Err(invalid(format!(
                                "Invalid value: '{other}'. Supported values are: 'text'. \
                                 (messages[{i}].content[{k}].type)"
                            )));
                        }
                    }
                }
            }
            other => {
                return Err(invalid(format!(
                    "Invalid type for 'messages[{i}].content': expected one of a string or array of \
                     objects, but got {other} instead."
                )));
            }
        }
    }
    Ok(())
}

impl Dialect for OpenAiDialect {
    fn base_path(&self) -> &'static str {
        "/v1"
    }

    fn accepts_path(&self, path: &str) -> bool {
        path == "/v1/chat/completions"
    }

    fn check(&self, request: &RecordedRequest) -> Result<(), Rejection> {
        let body = &request.body;
        if !body["model"].is_string() {
            return Err(invalid("you must provide a model parameter"));
        }
        let Some(messages) = body["messages"].as_array() else {
            return Err(invalid("'messages' is a required property"));
        };
        super::params::check_openai(body, self.flavor == OpenAiFlavor::OpenAi)?;
        let tools = body["tools"].as_array();
        if body.get("tool_choice").is_some() && tools.is_none_or(Vec::is_empty) {
            return Err(invalid(
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            ));
        }
        if body.get("stream_options").is_some() && body["stream"] != true {
            return Err(invalid(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            ));
        }
        for tool in tools.into_iter().flatten() {
            if tool["type"] != "function" {
                return Err(match self.flavor {
                    OpenAiFlavor::LlamaCpp => (500, "Unsupported tool type".into()),
                    _ => invalid("Invalid value for 'tools[].type': expected 'function'."),
                });
            }
        }
        if self.flavor == OpenAiFlavor::LlamaCpp {
            let last = messages.last();
            if last.is_some_and(|m| {
                m["role"] == "assistant"
                    && m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
            }) {
                return Err(invalid(
                    "Cannot continue an assistant message that contains tool calls",
                ));
            }
            return Ok(());
        }
        check_tool_content(messages)?;
        check_pairing(messages)?;
        if self.flavor == OpenAiFlavor::DeepSeek {
            let issued = self
                .reasoning
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (index, message) in messages.iter().enumerate() {
                let first_id = message["tool_calls"][0]["id"].as_str();
                if let Some(expected) = first_id.and_then(|id| issued.get(id))
                    && message["reasoning_content"].as_str() != Some(expected.as_str())
                {
                    return Err(invalid(format!(
                        "Missing `reasoning_content` field in the assistant message at message index {index}. \
                         The reasoning_content in the thinking mode must be passed back to the API."
                    )));
                }
            }
        }
        Ok(())
    }

    fn is_stream(&self, request: &RecordedRequest) -> bool {
        request.body["stream"] == true
    }

    fn render_json(&self, turn: &Turn, request: &RecordedRequest) -> Value {
        let ids = self.ids(turn);
        self.remember_reasoning(turn, &ids);
        let calls: Vec<Value> = turn
            .calls
            .iter()
            .zip(&ids)
            .map(|(call, id)| json!({"id": id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_text()}}))
            .collect();
        let content = match (self.flavor, turn.text.is_empty() && !calls.is_empty()) {
            (OpenAiFlavor::LlamaCpp, _) | (_, false) => json!(turn.text),
            (_, true) => Value::Null,
        };
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        if let Some(reasoning) = &turn.reasoning {
            message["reasoning_content"] = json!(reasoning);
        }
        let mut body = json!({
            "id": format!("chatcmpl-{}", self.next()),
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": Self::finish_reason(turn)}],
            "usage": {"prompt_tokens": turn.usage.0, "completion_tokens": turn.usage.1,
                      "total_tokens": turn.usage.0 + turn.usage.1},
        });
        if self.flavor == OpenAiFlavor::LlamaCpp {
            body["timings"] = json!({"prompt_n": turn.usage.0, "predicted_n": turn.usage.1});
        }
        body
    }

    fn render_events(&self, turn: &Turn, request: &RecordedRequest) -> Vec<String> {
        let ids = self.ids(turn);
        self.remember_reasoning(turn, &ids);
        let id = format!("chatcmpl-{}", self.next());
        let model = request.body["model"].clone();
        let chunk = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model, "choices": choices});
        let llama = self.flavor == OpenAiFlavor::LlamaCpp;
        let first_content = if llama { json!("") } else { Value::Null };
        let mut events = vec![data_event(&chunk(json!([
            {"index": 0, "delta": {"role": "assistant", "content": first_content}, "finish_reason": null}
        ])))];
        for piece in turn
            .reasoning
            .as_deref()
            .map(|r| pieces(r, 6))
            .unwrap_or_default()
        {
            events.push(data_event(&chunk(
                json!([{"index": 0, "delta": {"reasoning_content": piece}, "finish_reason": null}]),
            )));
        }
        for piece in pieces(&turn.text, 4) {
            events.push(data_event(&chunk(
                json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
            )));
        }
        for (index, (call, call_id)) in turn.calls.iter().zip(&ids).enumerate() {
            let head = json!({"index": index, "id": call_id, "type": "function",
                                  "function": {"name": call.name, "arguments": ""}});
            let delta = if llama {
                json!({"content": "", "tool_calls": [head]})
            } else {
                json!({"tool_calls": [head]})
            };
            events.push(data_event(&chunk(
                json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            )));
            for piece in pieces(&call.arguments_text(), if llama { 2 } else { 5 }) {
                let fragment = json!({"index": index, "function": {"arguments": piece}});
                events.push(data_event(&chunk(json!([{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": null}]))));
            }
        }
        let mut last =
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": Self::finish_reason(turn)}]));
        if llama {
            last["timings"] = json!({"prompt_n": turn.usage.0, "predicted_n": turn.usage.1});
        }
        events.push(data_event(&last));
        if request.body["stream_options"]["include_usage"] == true {
            let mut usage = chunk(json!([]));
            usage["usage"] = json!({"prompt_tokens": turn.usage.0, "completion_tokens": turn.usage.1,
                                    "total_tokens": turn.usage.0 + turn.usage.1});
            events.push(data_event(&usage));
        }
        events.push("data: [DONE]\n\n".to_owned());
        events
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let kind = match status {
            429 => "requests",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        };
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
    }
}

/// OpenAI's pairing rules: every `tool_calls` id answered by a `tool`
/// message before anything else, and no `tool` message without a call.
fn check_pairing(messages: &[Value]) -> Result<(), Rejection> {
    let mut open: Option<(Vec<String>, HashSet<String>)> = None;
    let unanswered =
        |(expected, answered): &(Vec<String>, HashSet<String>)| -> Result<(), Rejection> {
            let missing: Vec<&str> = expected
                .iter()
                .filter(|id| !answered.contains(*id))
                .map(String::as_str)
                .collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(invalid(format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each \
                 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    missing.join(", ")
                )))
            }
        };
    for (index, message) in messages.iter().enumerate() {
        if message["role"] == "tool" {
            let id = message["tool_call_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let answers = open.as_mut().is_some_and(|(expected, answered)| {
                expected.contains(&id) && answered.insert(id.clone())
            });
            if !answers {
                return Err(invalid(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message \
                     with 'tool_calls'. (messages[{index}], tool_call_id {id:?})"
                )));
            }
            continue;
        }
        if let Some(current) = open.take() {
            unanswered(&current)?;
        }
        if message["role"] == "assistant"
            && let Some(calls) = message["tool_calls"].as_array()
        {
            let mut expected = Vec::new();
            for (j, call) in calls.iter().enumerate() {
                if !call["function"]["arguments"].is_string() {
                    return Err(invalid(format!(
                        "Invalid type for 'messages[{index}].tool_calls[{j}].function.arguments': expected a string, \
                         but got an object instead."
                    )));
                }
                let id = call["id"].as_str().unwrap_or_default();
                if id.chars().count() > 40 {
                    return Err(invalid(format!(
                        "Invalid 'messages[{index}].tool_calls[{j}].id': string too long. Expected a string with \
                         maximum length 40, but got a string with length {} instead.",
                        id.chars().count()
                    )));
                }
                expected.push(id.to_owned());
            }
            if !expected.is_empty() {
                open = Some((expected, HashSet::new()));
            }
        }
    }
    match open {
        Some(current) => unanswered(&current),
        None => Ok(()),
    }
}
