//! OpenAI Responses JSON, request and response, as the API documents it.
//! Private: nothing outside `responses` sees these types.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Responses;
use crate::llm::ids::{IdRules, WireIds};
use crate::llm::media::{self, MediaRules};
use crate::llm::{AssistantMessage, ChatRequest, Message, ToolCall, ToolResult, Usage};

/// What `include` asks for when nothing is stored: the reasoning items'
/// encrypted content, so that they can be sent back.
pub(super) const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

#[derive(Debug, Serialize)]
pub struct ResponsesRequest<'a> {
    pub(super) model: &'a str,
    pub(super) input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<FunctionTool<'a>>,
    pub(super) store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) include: Vec<&'static str>,
    pub(super) stream: bool,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InputItem<'a> {
    Message {
        role: &'static str,
        content: &'a str,
    },
    FunctionCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: Cow<'a, str>,
        name: &'a str,
        /// A JSON *string*, exactly as the model wrote it.
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: Cow<'a, str>,
        output: Output<'a>,
    },
    /// An output item carried back as the API gave it (a reasoning item,
    /// or the message between a reasoning item and its call).
    #[serde(untagged)]
    Carried(Value),
}

/// `function_call_output.output`: a string for a result of text only (as
/// before results had parts), else a list of `input_text` and
/// `input_image` items.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Output<'a> {
    Text(&'a str),
    Items(Vec<OutputItem<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum OutputItem<'a> {
    InputText {
        text: Cow<'a, str>,
    },
    /// `image_url` is a `data:` URL.
    InputImage {
        image_url: String,
    },
}

impl<'a> Output<'a> {
    fn of(result: &'a ToolResult) -> Self {
        if result.parts.is_empty() {
            return Self::Text(&result.content);
        }
        let text =
            (!result.content.is_empty()).then(|| media::Part::Text(result.content.as_str().into()));
        let items = text
            .into_iter()
            .chain(media::render(&result.parts, MediaRules::RESPONSES))
            .filter_map(|part| match part {
                media::Part::Text(text) if text.is_empty() => None,
                media::Part::Text(text) => Some(OutputItem::InputText { text }),
                media::Part::Image { media_type, data } => Some(OutputItem::InputImage {
                    image_url: format!("data:{media_type};base64,{}", media::Part::base64(data)),
                }),
            })
            .collect();
        Self::Items(items)
    }
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters: &'a Value,
    pub(super) strict: bool,
}

/// What a [`ToolCall::signature`] holds for this format: the call's item
/// id (`fc_…`) and the output items that came between the previous call
/// and this one when a reasoning item is among them, kept verbatim
/// (encrypted content included) because the API wants them back, in
/// order, right before the call.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct CallState {
    #[serde(rename = "responses_item_id", skip_serializing_if = "Option::is_none")]
    pub(super) item_id: Option<String>,
    #[serde(
        rename = "responses_before",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(super) before: Vec<Value>,
}

impl CallState {
    /// The state kept in `signature`, if it is this format's (another
    /// provider's signature, such as Gemini's, is not).
    pub(super) fn read(signature: Option<&str>) -> Self {
        signature
            .and_then(|s| serde_json::from_str::<Self>(s).ok())
            .unwrap_or_default()
    }

    /// The signature text; `None` when there is nothing to keep.
    pub(super) fn write(&self) -> Option<String> {
        if *self == Self::default() {
            return None;
        }
        serde_json::to_string(self).ok()
    }
}

impl<'a> ResponsesRequest<'a> {
    pub(super) fn new(format: &'a Responses, request: &ChatRequest<'a>) -> Self {
        let ids = WireIds::new(request.messages, IdRules::OPENAI);
        let mut input = Vec::with_capacity(request.messages.len() + 4);
        for message in request.messages {
            match message {
                Message::System { content } => input.push(InputItem::Message {
                    role: "system",
                    content,
                }),
                Message::User { content } => input.push(InputItem::Message {
                    role: "user",
                    content,
                }),
                Message::Assistant(a) => assistant(a, &ids, &mut input),
                Message::Tool(result) => input.push(InputItem::FunctionCallOutput {
                    call_id: ids.get(&result.tool_call_id),
                    output: Output::of(result),
                }),
            }
        }
        let tools = request
            .tools
            .iter()
            .map(|spec| FunctionTool {
                kind: "function",
                name: &spec.name,
                description: &spec.description,
                parameters: &spec.input_schema,
                strict: format.strict,
            })
            .collect();
        Self {
            model: &format.model,
            input,
            tools,
            store: format.store,
            include: if format.encrypted_reasoning && !format.store {
                vec![ENCRYPTED_REASONING]
            } else {
                Vec::new()
            },
            stream: request.stream,
        }
    }
}

/// An assistant turn as items: its text (unless a carried message item
/// holds it), then each call preceded by what it carries.
fn assistant<'a>(message: &'a AssistantMessage, ids: &WireIds<'a>, input: &mut Vec<InputItem<'a>>) {
    let states: Vec<CallState> = message
        .tool_calls
        .iter()
        .map(|call| CallState::read(call.signature.as_deref()))
        .collect();
    let text_carried = states
        .iter()
        .flat_map(|s| &s.before)
        .any(|item| item["type"] == "message");
    if !message.content.is_empty() && !text_carried {
        input.push(InputItem::Message {
            role: "assistant",
            content: &message.content,
        });
    }
    for (call, state) in message.tool_calls.iter().zip(states) {
        input.extend(state.before.into_iter().map(InputItem::Carried));
        input.push(function_call(call, state.item_id, ids));
    }
}

fn function_call<'a>(call: &'a ToolCall, id: Option<String>, ids: &WireIds<'a>) -> InputItem<'a> {
    InputItem::FunctionCall {
        id,
        call_id: ids.get(&call.id),
        name: &call.name,
        arguments: &call.arguments,
    }
}

/// A whole answer (`object: "response"`); also the `response` of the
/// stream's `response.completed`, `.incomplete` and `.failed` events.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Response {
    pub(super) status: Option<String>,
    pub(super) output: Vec<Value>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
    pub(super) incomplete_details: Option<IncompleteDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct IncompleteDetails {
    pub(super) reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        }
    }
}

/// The text of an output `message` item: its `output_text` parts (a
/// `refusal` part is the model's text too).
pub(super) fn message_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| match part["type"].as_str() {
            Some("output_text") => part["text"].as_str(),
            Some("refusal") => part["refusal"].as_str(),
            _ => None,
        })
        .collect()
}

/// The argument text: a string as it is, anything else as its JSON.
pub(super) fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The neutral answer for the output items, in order: message text is
/// joined; each `function_call` becomes a call carrying its item id and
/// the reasoning (and message) items since the previous call, when there
/// is reasoning among them. Other items (reasoning before a text answer,
/// hosted tools' calls) are not kept.
pub(super) fn assistant_message(output: Vec<Value>) -> AssistantMessage {
    let mut message = AssistantMessage::default();
    let mut since_call: Vec<Value> = Vec::new();
    for item in output {
        match item["type"].as_str() {
            Some("message") => {
                message.content.push_str(&message_text(&item));
                since_call.push(item);
            }
            Some("reasoning") => since_call.push(item),
            Some("function_call") => {
                let reasoning = since_call.iter().any(|i| i["type"] == "reasoning");
                let state = CallState {
                    item_id: item["id"].as_str().map(str::to_owned),
                    before: if reasoning {
                        std::mem::take(&mut since_call)
                    } else {
                        Vec::new()
                    },
                };
                since_call.clear();
                message.tool_calls.push(ToolCall {
                    id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                    name: item["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: arguments_text(&item["arguments"]),
                    signature: state.write(),
                });
            }
            _ => {}
        }
    }
    message
}
