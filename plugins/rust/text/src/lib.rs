//! toolhost plugin `text`: counting, case transforms, slugs and substring
//! search. The logic lives in [`ops`], plain Rust that `cargo test -p text`
//! runs natively.

pub mod ops;

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_guest::ToolError;

pub use ops::{Found, Mode, Stats};

/// Input of `text_stats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsInput {
    /// The text to count.
    pub text: String,
}

/// Input of `text_transform`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransformInput {
    /// The text to transform.
    pub text: String,
    /// What to do with it.
    pub mode: Mode,
}

/// Input of `text_find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInput {
    /// The text to search in.
    pub text: String,
    /// The substring to look for (not a regular expression).
    pub needle: String,
    /// Ignore upper/lower case differences. Default: false.
    #[serde(default)]
    pub ignore_case: bool,
}

fn stats(input: StatsInput) -> Result<Stats, ToolError> {
    Ok(ops::stats(&input.text))
}

fn transform(input: TransformInput) -> Result<String, ToolError> {
    Ok(ops::transform(&input.text, input.mode))
}

fn find(input: FindInput) -> Result<Found, ToolError> {
    ops::find(&input.text, &input.needle, input.ignore_case).map_err(ToolError::invalid_input)
}

toolhost_guest::export_tools! {
    text_stats: "Count the characters, bytes, words, lines and sentences of a text." => stats,
    text_transform: "Transform a text: upper, lower or title case, reverse it, or make a URL slug." => transform,
    text_find: "Find every occurrence of a substring in a text, with line and column of each." => find,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transform_schema_lists_the_modes_and_requires_both_fields() {
        let schema: serde_json::Value =
            serde_json::from_str(&toolhost_guest::input_schema::<TransformInput>()).unwrap();
        assert_eq!(schema["required"], serde_json::json!(["text", "mode"]));
        assert_eq!(schema["additionalProperties"], false);
        let modes: Vec<&str> = schema["properties"]["mode"]["oneOf"]
            .as_array()
            .expect("modes inlined as oneOf")
            .iter()
            .filter_map(|m| m["const"].as_str())
            .collect();
        assert_eq!(modes, ["upper", "lower", "title", "reverse", "slug"]);
    }
}
