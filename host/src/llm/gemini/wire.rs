//! Gemini `generateContent` JSON. Private to `gemini`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::schema::sanitize;
use crate::llm::convert::{FunctionDeclaration, arguments_object};
use crate::llm::ids::{IdRules, WireIds};
use crate::llm::media::{self, MediaRules};
use crate::llm::{ChatRequest, FinishReason, Message, ToolResult};

/// The prefix of the ids this module makes up for calls without one. Such
/// ids are never sent to Gemini, which did not issue them.
pub(super) const SYNTHETIC_ID_PREFIX: &str = "gemini_call";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    pub(super) contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Content {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) role: String,
    #[serde(default)]
    pub(super) parts: Vec<Part>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    /// A thought summary, not answer text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) thought: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) function_response: Option<FunctionResponse>,
    /// An image of a user turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) inline_data: Option<Blob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) thought_signature: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FunctionCall {
    pub(super) name: String,
    #[serde(default)]
    pub(super) args: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FunctionResponse {
    pub(super) name: String,
    pub(super) response: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<String>,
    /// Images of the result (Gemini 3 models): `{inlineData: {mimeType,
    /// data}}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) parts: Vec<FunctionResponsePart>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionResponsePart {
    pub(super) inline_data: Blob,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Blob {
    pub(super) mime_type: String,
    /// Base64.
    pub(super) data: String,
}

impl Blob {
    fn of(media_type: &str, data: &[u8]) -> Self {
        Self {
            mime_type: media_type.to_owned(),
            data: media::Part::base64(data),
        }
    }
}

/// A user message's parts: its text (unless empty), then an `inlineData`
/// part per image Gemini takes and a text part per stand-in.
fn user_parts<'a>(
    text: &'a str,
    parts: &'a [crate::tools::Content],
) -> impl Iterator<Item = Part> + 'a {
    media::with_text(text, parts, MediaRules::GEMINI_USER).map(|part| match part {
        media::Part::Text(text) => text_part(&text),
        media::Part::Image { media_type, data } => Part {
            inline_data: Some(Blob::of(media_type, data)),
            ..Part::default()
        },
    })
}

/// A result's `response` object and its media parts under `rules`: images
/// the model takes go as parts; text parts and the stand-ins of the others
/// go in the response, under `"attachments"`.
fn function_response(result: &ToolResult, rules: MediaRules) -> (Value, Vec<FunctionResponsePart>) {
    let mut response = response_object(result);
    if result.parts.is_empty() {
        return (response, Vec::new());
    }
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    for part in media::render(&result.parts, rules) {
        match part {
            media::Part::Text(text) => notes.push(Value::String(text.into_owned())),
            media::Part::Image { media_type, data } => parts.push(FunctionResponsePart {
                inline_data: Blob::of(media_type, data),
            }),
        }
    }
    if !notes.is_empty()
        && let Value::Object(fields) = &mut response
    {
        fields.entry("attachments").or_insert(Value::Array(notes));
    }
    (response, parts)
}

/// The id to send back: Gemini's own (or another provider's, made
/// acceptable), never one we made up.
fn wire_id<'a>(ids: &WireIds<'a>, id: &'a str) -> Option<String> {
    (!id.starts_with(SYNTHETIC_ID_PREFIX) && !id.is_empty()).then(|| ids.get(id).into_owned())
}

impl GenerateContentRequest {
    /// The request body. System messages join `systemInstruction`; the
    /// model's turns have role `model`; consecutive messages of one role
    /// merge, and in a user turn every `functionResponse` part comes first,
    /// so all results of a turn travel together in the next user turn.
    pub(super) fn new(request: &ChatRequest<'_>, media: MediaRules) -> Self {
        let mut system = Vec::new();
        let mut contents: Vec<Content> = Vec::new();
        let ids = WireIds::new(request.messages, IdRules::GEMINI);
        for message in request.messages {
            match message {
                Message::System { content } => system.push(content.as_str()),
                Message::User { content, parts } => {
                    for part in user_parts(content, parts) {
                        push(&mut contents, "user", part, false);
                    }
                }
                Message::Tool(result) => {
                    let (response, parts) = function_response(result, media);
                    let part = Part {
                        function_response: Some(FunctionResponse {
                            name: result.name.clone(),
                            response,
                            id: wire_id(&ids, &result.tool_call_id),
                            parts,
                        }),
                        ..Part::default()
                    };
                    push(&mut contents, "user", part, true);
                }
                Message::Assistant(a) => {
                    if !a.content.is_empty() {
                        push(&mut contents, "model", text_part(&a.content), false);
                    }
                    for call in &a.tool_calls {
                        let part = Part {
                            function_call: Some(FunctionCall {
                                name: call.name.clone(),
                                args: arguments_object(&call.arguments),
                                id: wire_id(&ids, &call.id),
                            }),
                            // A thought signature is base64; a JSON object is
                            // another format's state (the Responses API's
                            // items, from a resumed transcript), which Gemini
                            // would refuse as a signature.
                            thought_signature: call
                                .signature
                                .clone()
                                .filter(|s| !s.starts_with('{')),
                            ..Part::default()
                        };
                        push(&mut contents, "model", part, false);
                    }
                }
            }
        }
        let declarations: Vec<_> = request
            .tools
            .iter()
            .map(|spec| FunctionDeclaration::new(spec, sanitize(&spec.input_schema)))
            .collect();
        let has_tools = !declarations.is_empty();
        Self {
            contents,
            system_instruction: (!system.is_empty()).then(|| Content {
                role: String::new(),
                parts: vec![text_part(&system.join("\n\n"))],
            }),
            tools: if has_tools {
                vec![json!({"functionDeclarations": declarations})]
            } else {
                Vec::new()
            },
        }
    }
}

fn text_part(text: &str) -> Part {
    Part {
        text: Some(text.to_owned()),
        ..Part::default()
    }
}

fn push(contents: &mut Vec<Content>, role: &str, part: Part, first: bool) {
    if contents.last().is_none_or(|last| last.role != role) {
        contents.push(Content {
            role: role.to_owned(),
            parts: Vec::new(),
        });
    }
    let Some(last) = contents.last_mut() else {
        return;
    };
    if first {
        let at = last
            .parts
            .iter()
            .position(|p| p.function_response.is_none())
            .unwrap_or(last.parts.len());
        last.parts.insert(at, part);
    } else {
        last.parts.push(part);
    }
}

/// `functionResponse.response` must be an object: an output object goes as
/// it is, any other output as `{"result": output}`, an error as
/// `{"error": message}`. Text that is not JSON goes as a string.
pub(super) fn response_object(result: &ToolResult) -> Value {
    let parsed = serde_json::from_str::<Value>(&result.content)
        .unwrap_or_else(|_| Value::String(result.content.clone()));
    let key = match (result.is_error, parsed) {
        (false, object @ Value::Object(_)) => return object,
        (false, other) => ("result", other),
        (true, other) => ("error", other),
    };
    let mut map = Map::new();
    map.insert(key.0.to_owned(), key.1);
    Value::Object(map)
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GenerateContentResponse {
    pub(super) candidates: Vec<Candidate>,
    pub(super) usage_metadata: Option<UsageMetadata>,
    pub(super) prompt_feedback: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Candidate {
    pub(super) content: Content,
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    pub(super) prompt_token_count: u64,
    pub(super) candidates_token_count: u64,
    pub(super) thoughts_token_count: u64,
}

/// The neutral finish reason for Gemini's `finishReason`.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        _ => FinishReason::Other,
    }
}
