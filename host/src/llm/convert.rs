//! Conversions shared by several wire formats.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::tools::ToolSpec;

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

/// A tool as OpenAI (`tools[].function`) and Gemini
/// (`functionDeclarations[]`) declare it: the same object, whose
/// `parameters` schema `S` is the tool's own for OpenAI and cut down to
/// Gemini's subset for Gemini.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionDeclaration<'a, S> {
    name: &'a str,
    description: &'a str,
    parameters: S,
}

impl<'a, S> FunctionDeclaration<'a, S> {
    /// `spec`, declared with `parameters` for its input schema.
    pub(crate) fn new(spec: &'a ToolSpec, parameters: S) -> Self {
        Self {
            name: &spec.name,
            description: &spec.description,
            parameters,
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
}
