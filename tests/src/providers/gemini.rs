//! A fake Gemini server (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::server::{Dialect, FakeServer, RecordedRequest, Rejection, Turn, data_event, pieces};

/// How the API reads one field of its `Schema` message.
#[derive(Clone, Copy)]
enum Field {
    /// A nested `Schema`.
    Schema,
    /// `repeated Schema`.
    Schemas,
    /// `map<string, Schema>`.
    SchemaMap,
    /// The `Type` enum.
    Type,
    /// `string`.
    Text,
    /// `repeated string`.
    Texts,
    /// `bool`.
    Bool,
    /// `int64` (JSON number or decimal string).
    Int64,
    /// `double`.
    Number,
    /// `google.protobuf.Value`: anything.
    Any,
}

/// The `Schema` message of the Gemini API reference (generativelanguage
/// v1beta, "Schema: a select subset of an OpenAPI 3.0 schema object"),
/// field by field, written from the reference and not from the product:
/// the fake must be able to disagree with what the product sends.
const SCHEMA_FIELDS: &[(&str, Field)] = &[
    ("type", Field::Type),
    ("format", Field::Text),
    ("title", Field::Text),
    ("description", Field::Text),
    ("nullable", Field::Bool),
    ("enum", Field::Texts),
    ("maxItems", Field::Int64),
    ("minItems", Field::Int64),
    ("properties", Field::SchemaMap),
    ("required", Field::Texts),
    ("minProperties", Field::Int64),
    ("maxProperties", Field::Int64),
    ("minLength", Field::Int64),
    ("maxLength", Field::Int64),
    ("pattern", Field::Text),
    ("example", Field::Any),
    ("anyOf", Field::Schemas),
    ("propertyOrdering", Field::Texts),
    ("default", Field::Any),
    ("items", Field::Schema),
    ("minimum", Field::Number),
    ("maximum", Field::Number),
];

/// The names of the `Type` enum (the API also takes them in lower case).
const TYPES: &[&str] = &[
    "TYPE_UNSPECIFIED",
    "STRING",
    "NUMBER",
    "INTEGER",
    "BOOLEAN",
    "ARRAY",
    "OBJECT",
    "NULL",
];

/// The Gemini dialect; use through [`FakeGemini`].
#[derive(Debug, Default)]
pub struct GeminiDialect {
    /// (name, args JSON) of each call issued with a signature -> signature.
    signatures: Mutex<HashMap<(String, String), String>>,
}

/// A fake Gemini server: requires `x-goog-api-key`, rejects schema keywords
/// outside Gemini's subset, function responses that do not match the
/// previous call turn, and a history that drops a `thoughtSignature` it
/// issued.
pub type FakeGemini = FakeServer<GeminiDialect>;

impl FakeServer<GeminiDialect> {
    /// Start one on a loopback port.
    pub async fn start() -> Self {
        Self::start_with(GeminiDialect::default()).await
    }
}

fn invalid(message: impl Into<String>) -> Rejection {
    (400, message.into())
}

/// Reject what the API rejects in a `Schema`: an unknown field ("Cannot
/// find field") or a value of the wrong JSON type ("Invalid value").
fn check_schema(schema: &Value, at: &str) -> Result<(), Rejection> {
    let Some(map) = schema.as_object() else {
        return Err(invalid(format!(
            "Invalid value at '{at}': expected a Schema object"
        )));
    };
    for (key, value) in map {
        let Some((_, field)) = SCHEMA_FIELDS.iter().find(|(name, _)| name == key) else {
            return Err(invalid(format!(
                "Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find field."
            )));
        };
        let here = format!("{at}.{key}");
        let wrong = || invalid(format!("Invalid value at '{here}': {value}"));
        match field {
            Field::Schema => check_schema(value, &here)?,
            Field::Schemas => {
                for (i, option) in value.as_array().ok_or_else(wrong)?.iter().enumerate() {
                    check_schema(option, &format!("{here}[{i}]"))?;
                }
            }
            Field::SchemaMap => {
                for (name, property) in value.as_object().ok_or_else(wrong)? {
                    check_schema(property, &format!("{here}[{name}].value"))?;
                }
            }
            Field::Type => {
                let name = value.as_str().ok_or_else(wrong)?;
                if !TYPES.contains(&name.to_ascii_uppercase().as_str()) {
                    return Err(wrong());
                }
            }
            Field::Text if !value.is_string() => return Err(wrong()),
            Field::Texts
                if !value
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_string)) =>
            {
                return Err(wrong());
            }
            Field::Bool if !value.is_boolean() => return Err(wrong()),
            Field::Int64
                if !(value.is_u64()
                    || value.is_i64()
                    || value.as_str().is_some_and(|s| s.parse::<i64>().is_ok())) =>
            {
                return Err(wrong());
            }
            Field::Number if !value.is_number() => return Err(wrong()),
            _ => {}
        }
    }
    Ok(())
}

impl GeminiDialect {
    fn parts(&self, turn: &Turn) -> Vec<Value> {
        let mut parts = Vec::new();
        if !turn.text.is_empty() {
            parts.push(json!({"text": turn.text}));
        }
        for call in &turn.calls {
            let mut function_call = json!({"name": call.name, "args": call.arguments});
            if let Some(id) = &call.id {
                function_call["id"] = json!(id);
            }
            let mut part = json!({"functionCall": function_call});
            if let Some(signature) = &call.signature {
                part["thoughtSignature"] = json!(signature);
                self.signatures
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(
                        (call.name.clone(), call.arguments.to_string()),
                        signature.clone(),
                    );
            }
            parts.push(part);
        }
        parts
    }

    fn check_signatures(&self, contents: &[Value]) -> Result<(), Rejection> {
        let issued = self
            .signatures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for content in contents.iter().filter(|c| c["role"] == "model") {
            for (position, part) in content["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let call = &part["functionCall"];
                let Some(name) = call["name"].as_str() else {
                    continue;
                };
                let key = (name.to_owned(), call["args"].to_string());
                if let Some(expected) = issued.get(&key) {
                    match part["thoughtSignature"].as_str() {
                        Some(sent) if sent == expected => {}
                        Some(_) => return Err(invalid("Corrupted thought signature.")),
                        None => {
                            return Err(invalid(format!(
                                "Function call is missing a thought_signature in functionCall parts. This is required \
                                 for tools to work correctly, and missing thought_signature may lead to degraded model \
                                 performance. Additional data, function call `default_api:{name}` , position {}. \
                                 Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                                position + 1
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The `(name, id)` of each part of `content` holding `field`.
fn named(content: &Value, field: &str) -> Vec<(String, Option<String>)> {
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| {
            let inner = &part[field];
            inner["name"]
                .as_str()
                .map(|name| (name.to_owned(), inner["id"].as_str().map(str::to_owned)))
        })
        .collect()
}

/// The media types a Gemini 3 model takes in a function response.
const FUNCTION_RESPONSE_TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// `functionResponse.parts`: `inlineData` only, of the documented image
/// types, and only for Gemini 3 models ("multimodal function responses");
/// earlier models refuse the field.
fn check_response_parts(content: &Value, i: usize, path: &str) -> Result<(), Rejection> {
    let model = path
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or("");
    for (j, part) in content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(parts) = part["functionResponse"].get("parts") else {
            continue;
        };
        let at = format!("contents[{i}].parts[{j}].function_response.parts");
        if !model.starts_with("gemini-3") {
            return Err(invalid(format!(
                "* GenerateContentRequest.{at}: multimodal function responses are not supported by model {model}."
            )));
        }
        for (k, item) in parts.as_array().into_iter().flatten().enumerate() {
            let blob = &item["inlineData"];
            let mime = blob["mimeType"].as_str().unwrap_or("");
            if !FUNCTION_RESPONSE_TYPES.contains(&mime) {
                return Err(invalid(format!(
                    "* GenerateContentRequest.{at}[{k}].inline_data.mime_type: Unsupported MIME type: {mime}"
                )));
            }
            if let Some(problem) =
                super::media::image_problem(mime, blob["data"].as_str().unwrap_or(""))
            {
                return Err(invalid(format!(
                    "* GenerateContentRequest.{at}[{k}].inline_data: {problem}"
                )));
            }
        }
    }
    Ok(())
}

impl Dialect for GeminiDialect {
    fn base_path(&self) -> &'static str {
        ""
    }

    fn accepts_path(&self, path: &str) -> bool {
        path.strip_prefix("/v1beta/models/").is_some_and(|rest| {
            rest.ends_with(":generateContent") || rest.ends_with(":streamGenerateContent")
        })
    }

    fn check(&self, request: &RecordedRequest) -> Result<(), Rejection> {
        if request.header("x-goog-api-key").is_none_or(str::is_empty) {
            return Err((403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.".into()));
        }
        if request.path.contains(":streamGenerateContent") && !request.path.contains("alt=sse") {
            return Err(invalid("this fake only streams with alt=sse"));
        }
        let body = &request.body;
        super::params::check_gemini(body)?;
        for (t, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            for (f, declaration) in tool["functionDeclarations"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                check_schema(
                    &declaration["parameters"],
                    &format!("tools[{t}].function_declarations[{f}].parameters"),
                )?;
            }
        }
        let Some(contents) = body["contents"].as_array() else {
            return Err(invalid(
                "* GenerateContentRequest.contents: contents is not specified",
            ));
        };
        for (i, content) in contents.iter().enumerate() {
            let role = content["role"].as_str().unwrap_or("");
            if role != "user" && role != "model" {
                return Err(invalid("Please use a valid role: user, model."));
            }
            if content["parts"].as_array().is_none_or(Vec::is_empty) {
                return Err(invalid(format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
                )));
            }
            check_response_parts(content, i, &request.path)?;
            let responses = named(content, "functionResponse");
            let previous_calls = if i > 0 {
                named(&contents[i - 1], "functionCall")
            } else {
                Vec::new()
            };
            if responses.is_empty() && !previous_calls.is_empty() {
                return Err(invalid(
                    "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
                ));
            }
            if responses.is_empty() {
                continue;
            }
            if responses.len() != previous_calls.len() {
                return Err(invalid(
                    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
                ));
            }
            let mut call_names: Vec<&str> =
                previous_calls.iter().map(|(n, _)| n.as_str()).collect();
            let mut response_names: Vec<&str> = responses.iter().map(|(n, _)| n.as_str()).collect();
            call_names.sort_unstable();
            response_names.sort_unstable();
            if call_names != response_names {
                return Err(invalid(format!(
                    "contents[{i}]: function response names {response_names:?} do not match the function calls {call_names:?} of the previous turn."
                )));
            }
            for (name, id) in &responses {
                if let Some(id) = id
                    && !previous_calls
                        .iter()
                        .any(|(_, call_id)| call_id.as_deref() == Some(id))
                {
                    return Err(invalid(format!(
                        "contents[{i}]: function response {name} has unknown id {id}."
                    )));
                }
            }
        }
        self.check_signatures(contents)
    }

    fn is_stream(&self, request: &RecordedRequest) -> bool {
        request.path.contains(":streamGenerateContent")
    }

    fn render_json(&self, turn: &Turn, _request: &RecordedRequest) -> Value {
        json!({
            "candidates": [{"content": {"role": "model", "parts": self.parts(turn)}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": turn.usage.0, "candidatesTokenCount": turn.usage.1,
                              "totalTokenCount": turn.usage.0 + turn.usage.1},
            "modelVersion": "fake-gemini",
        })
    }

    fn render_events(&self, turn: &Turn, _request: &RecordedRequest) -> Vec<String> {
        let chunk = |parts: Value, finish: Option<&str>| {
            let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
            if let Some(finish) = finish {
                candidate["finishReason"] = json!(finish);
            }
            let mut body = json!({"candidates": [candidate], "modelVersion": "fake-gemini"});
            if finish.is_some() {
                body["usageMetadata"] = json!({"promptTokenCount": turn.usage.0,
                    "candidatesTokenCount": turn.usage.1, "totalTokenCount": turn.usage.0 + turn.usage.1});
            }
            data_event(&body)
        };
        let mut events: Vec<String> = pieces(&turn.text, 4)
            .into_iter()
            .map(|piece| chunk(json!([{"text": piece}]), None))
            .collect();
        let calls: Vec<Value> = self.parts(&Turn {
            text: String::new(),
            ..turn.clone()
        });
        if calls.is_empty() {
            events.push(chunk(json!([{"text": ""}]), Some("STOP")));
        } else {
            events.push(chunk(Value::Array(calls), Some("STOP")));
        }
        events
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let kind = match status {
            400 => "INVALID_ARGUMENT",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            _ => "INTERNAL",
        };
        json!({"error": {"code": status, "message": message, "status": kind}})
    }
}
