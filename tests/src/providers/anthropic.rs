//! A fake Anthropic Messages server (`POST /v1/messages`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::server::{Dialect, FakeServer, RecordedRequest, Rejection, Turn, pieces};

/// The Anthropic dialect; use through [`FakeAnthropic`].
#[derive(Debug, Default)]
pub struct AnthropicDialect {
    counter: AtomicU64,
}

/// A fake Anthropic server: requires `x-api-key`, `anthropic-version` and
/// `max_tokens`, and rejects tool use / result pairing the way the real API
/// does; with the tool search tool, rejects deferred tools without it, the
/// tool itself deferred, a request without its beta, and server tool
/// blocks that are unpaired or reference tools the request does not
/// define.
pub type FakeAnthropic = FakeServer<AnthropicDialect>;

impl FakeServer<AnthropicDialect> {
    /// Start one on a loopback port.
    pub async fn start() -> Self {
        Self::start_with(AnthropicDialect::default()).await
    }
}

fn invalid(message: impl Into<String>) -> Rejection {
    (400, message.into())
}

/// The API's id pattern, `^[a-zA-Z0-9_-]+$`, as it words a mismatch.
fn check_id(id: &str, at: &str) -> Result<(), Rejection> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{at}: String should match pattern '^[a-zA-Z0-9_-]+$'"
        )))
    }
}

/// The content blocks of a message (a string is one text block).
fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The media types an `image` block may have.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// `tool_result.content`: a string, or a list of `text` and `image` blocks
/// (and the `search_result` and `document` blocks this fake never gets).
fn check_result_content(content: &Value, at: &str) -> Result<(), Rejection> {
    let blocks = match content {
        Value::Null | Value::String(_) => return Ok(()),
        Value::Array(blocks) => blocks,
        _ => return Err(invalid(format!("{at}: Input should be a valid list"))),
    };
    for (k, block) in blocks.iter().enumerate() {
        match block["type"].as_str().unwrap_or("") {
            "text" if block["text"].as_str().is_none_or(str::is_empty) => {
                return Err(invalid(format!(
                    "{at}.{k}: text content blocks must be non-empty"
                )));
            }
            "text" => {}
            "image" => {
                let source = &block["source"];
                if source["type"] != "base64" {
                    return Err(invalid(format!(
                        "{at}.{k}.image.source: Input tag '{}' found using 'type' does not match any of the \
                         expected tags: 'base64', 'url', 'file'",
                        source["type"].as_str().unwrap_or("")
                    )));
                }
                let media_type = source["media_type"].as_str().unwrap_or("");
                if !IMAGE_TYPES.contains(&media_type) {
                    return Err(invalid(format!(
                        "{at}.{k}.image.source.base64.media_type: Input should be 'image/jpeg', \
                         'image/png', 'image/gif' or 'image/webp'"
                    )));
                }
                if let Some(problem) =
                    super::media::image_problem(media_type, source["data"].as_str().unwrap_or(""))
                {
                    return Err(invalid(format!("{at}.{k}.image.source.base64: {problem}")));
                }
            }
            other => {
                return Err(invalid(format!(
                    "{at}.{k}: Input tag '{other}' found using 'type' does not match any of the expected \
                     tags: 'text', 'image', 'search_result', 'document'"
                )));
            }
        }
    }
    Ok(())
}

/// The tool search tool's types, and the beta a request using one names.
const SEARCH_TOOL_TYPES: [&str; 2] = [
    "tool_search_tool_bm25_20251119",
    "tool_search_tool_regex_20251119",
];
const SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

/// What the API's tool search answers for `query` among the request's
/// deferred tools: those whose name or description holds a word of the
/// query (three letters or more), at most five, as a
/// `tool_search_tool_result`'s content. An error block when the request
/// has no tool search tool (a script that searches where the model
/// could not).
fn search_result(query: &str, request: &Value) -> Value {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    if !tools
        .iter()
        .any(|t| SEARCH_TOOL_TYPES.contains(&t["type"].as_str().unwrap_or("")))
    {
        return json!({"type": "tool_search_tool_result_error", "error_code": "unavailable"});
    }
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect();
    let references: Vec<Value> = tools
        .iter()
        .filter(|t| t["defer_loading"] == true)
        .filter(|t| {
            let text = format!(
                "{} {}",
                t["name"].as_str().unwrap_or(""),
                t["description"].as_str().unwrap_or("")
            )
            .to_lowercase();
            words.iter().any(|w| text.contains(w.as_str()))
        })
        .take(5)
        .map(|t| json!({"type": "tool_reference", "tool_name": t["name"]}))
        .collect();
    json!({"type": "tool_search_tool_search_result", "tool_references": references})
}

/// The request's tools: checked as the API checks them (a deferred tool
/// needs a tool search tool, which is never deferred itself and needs its
/// beta), and the names of the tools a `tool_reference` may name.
fn check_tools(request: &RecordedRequest) -> Result<HashSet<String>, Rejection> {
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut search = false;
    let mut deferred = false;
    let mut names = HashSet::new();
    for (k, tool) in tools.iter().enumerate() {
        let kind = tool["type"].as_str().unwrap_or("custom");
        if SEARCH_TOOL_TYPES.contains(&kind) {
            if tool["defer_loading"] == true {
                return Err(invalid(format!(
                    "tools.{k}: the tool search tool cannot have defer_loading set to true"
                )));
            }
            search = true;
            continue;
        }
        deferred |= tool["defer_loading"] == true;
        if let Some(name) = tool["name"].as_str() {
            names.insert(name.to_owned());
        }
    }
    if deferred && !search {
        return Err(invalid(
            "tools: defer_loading is set on a tool but no tool search tool is defined; add              tool_search_tool_regex_20251119 or tool_search_tool_bm25_20251119",
        ));
    }
    if search
        && !request
            .header("anthropic-beta")
            .is_some_and(|b| b.split(',').any(|b| b.trim() == SEARCH_BETA))
    {
        return Err(invalid(format!(
            "tools: the tool search tool requires the beta header anthropic-beta: {SEARCH_BETA}"
        )));
    }
    Ok(names)
}

/// The server tool blocks of assistant message `i`: each `server_tool_use`
/// followed in the same message by one `tool_search_tool_result` with its
/// id, whose references name tools the request defines.
fn check_server_blocks(
    i: usize,
    role: &str,
    content: &[Value],
    defined: &HashSet<String>,
) -> Result<(), Rejection> {
    let mut open: Vec<String> = Vec::new();
    for (j, block) in content.iter().enumerate() {
        let at = format!("messages.{i}.content.{j}");
        match block["type"].as_str() {
            Some("server_tool_use") => {
                if role != "assistant" {
                    return Err(invalid(format!(
                        "{at}: server_tool_use blocks are only allowed in assistant messages"
                    )));
                }
                let id = block["id"].as_str().unwrap_or_default();
                if !id.starts_with("srvtoolu_") {
                    return Err(invalid(format!(
                        "{at}.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'"
                    )));
                }
                open.push(id.to_owned());
            }
            Some("tool_search_tool_result") => {
                let id = block["tool_use_id"].as_str().unwrap_or_default();
                let Some(k) = open.iter().position(|o| o == id) else {
                    return Err(invalid(format!(
                        "{at}: tool_search_tool_result block(s) provided when previous message does not                          contain a matching server_tool_use block: {id}"
                    )));
                };
                open.remove(k);
                let references = block["content"]["tool_references"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                for reference in references {
                    let name = reference["tool_name"].as_str().unwrap_or_default();
                    if !defined.contains(name) {
                        return Err(invalid(format!(
                            "{at}: tool reference '{name}' does not match any tool in the request's tools"
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(id) = open.first() {
        return Err(invalid(format!(
            "messages.{i}: server_tool_use {id} has no tool_search_tool_result block after it"
        )));
    }
    Ok(())
}

impl AnthropicDialect {
    fn content(&self, turn: &Turn, request: &RecordedRequest) -> Vec<Value> {
        let mut content = Vec::new();
        if !turn.text.is_empty() {
            content.push(json!({"type": "text", "text": turn.text}));
        }
        for query in &turn.searches {
            let id = format!(
                "srvtoolu_{:04}",
                self.counter.fetch_add(1, Ordering::Relaxed)
            );
            content.push(json!({"type": "server_tool_use", "id": id,
                "name": "tool_search_tool_bm25", "input": {"query": query}}));
            content.push(json!({"type": "tool_search_tool_result", "tool_use_id": id,
                "content": search_result(query, &request.body)}));
        }
        for call in &turn.calls {
            let id = call.id.clone().unwrap_or_else(|| {
                format!("toolu_{:04}", self.counter.fetch_add(1, Ordering::Relaxed))
            });
            content.push(
                json!({"type": "tool_use", "id": id, "name": call.name, "input": call.arguments}),
            );
        }
        content
    }

    fn stop_reason(turn: &Turn) -> &'static str {
        if turn.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

impl Dialect for AnthropicDialect {
    fn base_path(&self) -> &'static str {
        ""
    }

    fn accepts_path(&self, path: &str) -> bool {
        path == "/v1/messages"
    }

    fn check(&self, request: &RecordedRequest) -> Result<(), Rejection> {
        if request.header("x-api-key").is_none_or(str::is_empty) {
            return Err((401, "x-api-key header is required".into()));
        }
        if request.header("anthropic-version").is_none() {
            return Err(invalid("anthropic-version: header is required"));
        }
        let body = &request.body;
        if !body["max_tokens"].is_u64() {
            return Err(invalid("max_tokens: Field required"));
        }
        super::params::check_anthropic(body)?;
        let defined = check_tools(request)?;
        let Some(messages) = body["messages"].as_array() else {
            return Err(invalid("messages: Field required"));
        };
        if let Some(choice) = body.get("tool_choice")
            && !["auto", "any", "tool", "none"].contains(&choice["type"].as_str().unwrap_or(""))
        {
            return Err(invalid(
                "tool_choice: Input tag does not match any of the expected tags",
            ));
        }
        let mut previous_uses: Vec<String> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            let role = message["role"].as_str().unwrap_or("");
            if role != "user" && role != "assistant" {
                return Err(invalid(format!(
                    "messages.{i}.role: Unexpected role \"{role}\". The Messages API accepts a top-level `system` \
                     parameter, not \"system\" as an input message role."
                )));
            }
            let content = blocks(message);
            if content.is_empty() {
                return Err(invalid(format!(
                    "messages.{i}: all messages must have non-empty content"
                )));
            }
            check_server_blocks(i, role, &content, &defined)?;
            let mut uses = Vec::new();
            let mut leading_results = HashSet::new();
            let mut still_leading = true;
            for (j, block) in content.iter().enumerate() {
                match block["type"].as_str() {
                    Some("text") if block["text"].as_str().is_none_or(str::is_empty) => {
                        return Err(invalid(format!(
                            "messages.{i}.content.{j}: text content blocks must be non-empty"
                        )));
                    }
                    Some("tool_use") => {
                        if role != "assistant" {
                            return Err(invalid(format!(
                                "messages.{i}.content.{j}: tool_use blocks are only allowed in assistant messages"
                            )));
                        }
                        if !block["input"].is_object() {
                            return Err(invalid(format!(
                                "messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                            )));
                        }
                        let id = block["id"].as_str().unwrap_or_default();
                        check_id(id, &format!("messages.{i}.content.{j}.tool_use.id"))?;
                        uses.push(id.to_owned());
                    }
                    Some("tool_result") => {
                        check_result_content(
                            &block["content"],
                            &format!("messages.{i}.content.{j}.tool_result.content"),
                        )?;
                        let id = block["tool_use_id"].as_str().unwrap_or_default().to_owned();
                        check_id(
                            &id,
                            &format!("messages.{i}.content.{j}.tool_result.tool_use_id"),
                        )?;
                        if !previous_uses.contains(&id)
                            || !leading_results.insert(id.clone())
                            || !still_leading
                        {
                            return Err(invalid(format!(
                                "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. \
                                 Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                            )));
                        }
                    }
                    _ => still_leading = false,
                }
            }
            let missing: Vec<&str> = previous_uses
                .iter()
                .filter(|id| !leading_results.contains(*id))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(invalid(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. \
                     Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    i - 1,
                    missing.join(", ")
                )));
            }
            previous_uses = uses;
        }
        if !previous_uses.is_empty() {
            return Err(invalid(format!(
                "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. \
                 Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                messages.len() - 1,
                previous_uses.join(", ")
            )));
        }
        Ok(())
    }

    fn is_stream(&self, request: &RecordedRequest) -> bool {
        request.body["stream"] == true
    }

    fn render_json(&self, turn: &Turn, request: &RecordedRequest) -> Value {
        json!({
            "id": format!("msg_{:04}", self.counter.fetch_add(1, Ordering::Relaxed)),
            "type": "message",
            "role": "assistant",
            "model": request.body["model"],
            "content": self.content(turn, request),
            "stop_reason": Self::stop_reason(turn),
            "stop_sequence": null,
            "usage": {"input_tokens": turn.usage.0, "output_tokens": turn.usage.1},
        })
    }

    fn render_events(&self, turn: &Turn, request: &RecordedRequest) -> Vec<String> {
        let mut events = vec![
            event(
                "message_start",
                &json!({"type": "message_start", "message": {
                    "id": format!("msg_{:04}", self.counter.fetch_add(1, Ordering::Relaxed)),
                    "type": "message", "role": "assistant", "model": request.body["model"], "content": [],
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": turn.usage.0, "output_tokens": 1}}}),
            ),
            event("ping", &json!({"type": "ping"})),
        ];
        for (index, block) in self.content(turn, request).into_iter().enumerate() {
            if block["type"] == "tool_search_tool_result" {
                // A server tool's answer comes whole at its start.
                events.push(event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block": block}),
                ));
            } else if block["type"] == "text" {
                events.push(event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                ));
                for piece in pieces(block["text"].as_str().unwrap_or_default(), 4) {
                    events.push(event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
            } else {
                events.push(event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block":
                        {"type": block["type"], "id": block["id"], "name": block["name"], "input": {}}}),
                ));
                let input = block["input"].to_string();
                for piece in std::iter::once(String::new()).chain(pieces(&input, 5)) {
                    events.push(event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
            }
            events.push(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push(event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": Self::stop_reason(turn), "stop_sequence": null},
                    "usage": {"output_tokens": turn.usage.1}}),
        ));
        events.push(event("message_stop", &json!({"type": "message_stop"})));
        events
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let kind = match status {
            401 => "authentication_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            500..=599 => "api_error",
            _ => "invalid_request_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}
