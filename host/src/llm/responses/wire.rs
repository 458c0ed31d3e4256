//! OpenAI Responses JSON, request and response, as the API documents it.
//! Private: nothing outside `responses` sees these types.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Responses;
use crate::llm::ids::{IdRules, WireIds};
use crate::llm::media::{self, MediaRules};
use crate::llm::{AssistantMessage, ChatRequest, Message, ToolCall, ToolResult, Usage};
use crate::tools::Content;

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
        content: Output<'a>,
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

/// `function_call_output.output` and a message's `content`: a string for
/// text only (as before results had parts), else a list of `input_text`
/// and `input_image` items.
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
        Self::with_parts(&result.content, &result.parts, MediaRules::RESPONSES)
    }

    /// `text`, then `parts` as `rules` take them.
    fn with_parts(text: &'a str, parts: &'a [Content], rules: MediaRules) -> Self {
        if parts.is_empty() {
            return Self::Text(text);
        }
        let items = media::with_text(text, parts, rules)
            .map(|part| match part {
                media::Part::Text(text) => OutputItem::InputText { text },
                media::Part::Image { media_type, data } => OutputItem::InputImage {
                    image_url: media::Part::data_url(media_type, data),
                },
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
        let mut ids = ItemIds::new(request.messages);
        let mut input = Vec::with_capacity(request.messages.len() + 4);
        for message in request.messages {
            match message {
                Message::System { content } => input.push(InputItem::Message {
                    role: "system",
                    content: Output::Text(content),
                }),
                Message::User { content, parts } => input.push(InputItem::Message {
                    role: "user",
                    content: Output::with_parts(content, parts, MediaRules::USER),
                }),
                Message::Assistant(a) => assistant(a, &mut ids, &mut input),
                Message::Tool(result) => input.push(InputItem::FunctionCallOutput {
                    call_id: ids.output(&result.tool_call_id),
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

/// The ids of one request's items, unique across its `input` as the API
/// requires (400 "Duplicate item found with id …"), and each call's
/// `call_id` the same on the call and on its output.
///
/// A history may repeat ids: a server that gave two calls of one answer
/// the same `call_id` and item id (the answer's calls are renamed apart,
/// but the item id kept in the signature is the server's), or one that
/// numbers calls afresh every turn. The first use of an id keeps it; a
/// later `function_call` item id `x` becomes `x_2` (`x_3`, …, skipping ids
/// in use), a later carried item (a reasoning item already sent) is left
/// out, and a `call_id` an earlier turn used becomes `x_2`, … for this
/// turn's call and outputs. Deterministic: the same history gives the same
/// ids.
struct ItemIds<'a> {
    /// Call ids as the format accepts them.
    wire: WireIds<'a>,
    /// Every item id and wire call id in the history, renamed or not.
    taken: BTreeSet<String>,
    /// Item ids already put in `input`.
    items: BTreeSet<String>,
    /// Call ids already put in `input`, by earlier turns.
    calls: BTreeSet<String>,
    /// This turn's call ids (neutral id → wire call id).
    turn: BTreeMap<&'a str, String>,
}

impl<'a> ItemIds<'a> {
    fn new(messages: &'a [Message]) -> Self {
        let wire = WireIds::new(messages, IdRules::OPENAI);
        let mut taken = BTreeSet::new();
        for message in messages {
            let Message::Assistant(a) = message else {
                continue;
            };
            for call in &a.tool_calls {
                taken.insert(wire.get(&call.id).into_owned());
                let state = CallState::read(call.signature.as_deref());
                taken.extend(state.item_id);
                taken.extend(
                    state
                        .before
                        .iter()
                        .filter_map(|i| i["id"].as_str().map(str::to_owned)),
                );
            }
        }
        Self {
            wire,
            taken,
            items: BTreeSet::new(),
            calls: BTreeSet::new(),
            turn: BTreeMap::new(),
        }
    }

    /// A new turn: its calls' ids may repeat the ids of earlier turns.
    fn start_turn(&mut self) {
        let turn = std::mem::take(&mut self.turn);
        self.calls.extend(turn.into_values());
    }

    /// The wire `call_id` of a call of this turn.
    fn call(&mut self, id: &'a str) -> Cow<'a, str> {
        let wire = self.wire.get(id);
        let wire = if self.calls.contains(wire.as_ref()) {
            let fresh = fresh(&wire, &self.taken, IdRules::OPENAI.max_len);
            self.taken.insert(fresh.clone());
            fresh
        } else {
            wire.into_owned()
        };
        self.turn.insert(id, wire.clone());
        Cow::Owned(wire)
    }

    /// The wire `call_id` of an output: its call's in this turn.
    fn output(&self, id: &'a str) -> Cow<'a, str> {
        match self.turn.get(id) {
            Some(wire) => Cow::Owned(wire.clone()),
            None => self.wire.get(id),
        }
    }

    /// The id of a `function_call` item: its own, or a fresh one when an
    /// earlier item has it.
    fn function_call(&mut self, id: Option<String>) -> Option<String> {
        let id = id?;
        if self.items.insert(id.clone()) {
            return Some(id);
        }
        let fresh = fresh(&id, &self.taken, usize::MAX);
        self.taken.insert(fresh.clone());
        self.items.insert(fresh.clone());
        Some(fresh)
    }

    /// Whether a carried item is new to `input` (an item without an id
    /// always is).
    fn carried(&mut self, item: &Value) -> bool {
        item["id"]
            .as_str()
            .is_none_or(|id| self.items.insert(id.to_owned()))
    }
}

/// `base_2`, `base_3`, … (with `base` cut to fit `max_len`): the first not
/// in `taken`.
fn fresh(base: &str, taken: &BTreeSet<String>, max_len: usize) -> String {
    (2u64..)
        .map(|n| {
            let suffix = format!("_{n}");
            let mut end = max_len.saturating_sub(suffix.len()).min(base.len());
            while !base.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}{suffix}", &base[..end])
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_default()
}

/// An assistant turn as items: its text (unless a carried message item
/// holds it), then each call preceded by what it carries.
fn assistant<'a>(
    message: &'a AssistantMessage,
    ids: &mut ItemIds<'a>,
    input: &mut Vec<InputItem<'a>>,
) {
    ids.start_turn();
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
            content: Output::Text(&message.content),
        });
    }
    for (call, state) in message.tool_calls.iter().zip(states) {
        for item in state.before {
            if ids.carried(&item) {
                input.push(InputItem::Carried(item));
            }
        }
        input.push(InputItem::FunctionCall {
            id: ids.function_call(state.item_id),
            call_id: ids.call(&call.id),
            name: &call.name,
            arguments: &call.arguments,
        });
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
