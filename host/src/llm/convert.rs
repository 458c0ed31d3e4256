//! Conversions shared by several wire formats.

use serde_json::{Map, Value};

use super::Message;

/// The key under which arguments that are not a JSON object are kept, for
/// wire formats whose tool calls carry an object (Anthropic `input`,
/// Gemini `args`).
pub(crate) const UNPARSED_ARGUMENTS_KEY: &str = "_unparsed_arguments";

/// A tool call's argument text as the JSON object that Anthropic and Gemini
/// require in their history.
///
/// - a JSON object is sent as it is;
/// - empty text (a call without arguments) becomes `{}`;
/// - anything else (malformed JSON, an array, a number) becomes
///   `{"_unparsed_arguments": "<the text exactly>"}`.
///
/// The last rule is the least lossy choice: the provider rejects a
/// non-object, and replacing it with `{}` would show the model a call it
/// never made next to an error result about arguments it cannot see. With
/// the original text kept, the model sees its own mistake and the error.
pub(crate) fn arguments_object(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => {
            let mut map = Map::new();
            map.insert(
                UNPARSED_ARGUMENTS_KEY.to_owned(),
                Value::String(arguments.to_owned()),
            );
            Value::Object(map)
        }
    }
}

/// How many assistant turns `messages` holds: the index the next turn
/// will have, used for deterministic synthetic call ids.
pub(crate) fn next_turn_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count()
}

/// Make the ids of one response unique and non-empty: a missing id becomes
/// `{prefix}_{turn}_{position}`, and a repeated one gets `_{position}`
/// appended, so that each result can name exactly one call.
pub(crate) fn fill_call_ids(calls: &mut [super::ToolCall], prefix: &str, turn: usize) {
    let mut seen = std::collections::HashSet::new();
    for (position, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("{prefix}_{turn}_{position}");
        }
        if !seen.insert(call.id.clone()) {
            call.id = format!("{}_{position}", call.id);
            seen.insert(call.id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_become_objects_without_losing_text() {
        assert_eq!(arguments_object(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(arguments_object("  "), json!({}));
        assert_eq!(
            arguments_object("{\"a\":"),
            json!({"_unparsed_arguments": "{\"a\":"})
        );
        assert_eq!(
            arguments_object("[1]"),
            json!({"_unparsed_arguments": "[1]"})
        );
    }

    #[test]
    fn ids_are_filled_and_deduplicated() {
        let call = |id: &str| super::super::ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
            signature: None,
        };
        let mut calls = vec![call(""), call("call_0"), call("call_0"), call("")];
        fill_call_ids(&mut calls, "call", 3);
        let ids: Vec<_> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_3_0", "call_0", "call_0_2", "call_3_3"]);
    }
}
