//! Test fixture: `hostile_ask` asks the user questions (contract 0.2
//! `user.ask`) and answers what came back, so that tests can see each path
//! of a question: accepted, declined, cancelled, timed out, unavailable,
//! over budget and refused schemas.
//!
//! `{"shape": "form"}` (the default) asks for a `Form`; `"nested"` asks
//! with a schema that has an object field and `"huge"` with one over the
//! host's schema budget (both `invalid-schema`); `"derived"` asks with the
//! schema `#[derive(JsonSchema)]` writes for `Derived`, `"empty"` with
//! one that has no `properties`. `times` asks that many
//! times in a row (past the host's budget: `over-budget`), and
//! `then_sleep_ms` sleeps after the last answer, to show the call's
//! deadline still holds after a wait. The answer lists one entry per
//! question: `{"action": "accept", "content": {...}}`, `{"action":
//! "decline"}`, `{"action": "cancel"}` or `{"error": "..."}`.

use std::borrow::Cow;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_guest::{Answer, AskError, ToolError};

/// Which question to ask.
#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Shape {
    /// A flat form (see [`Form`]).
    #[default]
    Form,
    /// A schema with an object field: not elicitation's shape.
    Nested,
    /// A schema over the host's size budget.
    Huge,
    /// A form as the Rust SDK derives it (see [`Derived`]): an enum,
    /// optional fields, unknown fields refused.
    Derived,
    /// A schema with no `properties`: a question with no fields.
    Empty,
}

/// Input of `hostile_ask`.
#[derive(Deserialize, JsonSchema)]
struct AskInput {
    /// Which question to ask. Default: form.
    #[serde(default)]
    shape: Shape,
    /// How many times to ask it. Default: 1.
    #[serde(default = "once")]
    times: u32,
    /// Milliseconds to sleep after the last answer. Default: 0.
    #[serde(default)]
    then_sleep_ms: u64,
}

fn once() -> u32 {
    1
}

/// The form: a name (required), a size to pick, a count and a yes/no.
#[derive(Debug, Deserialize, Serialize)]
struct Form {
    name: String,
    #[serde(default)]
    size: Option<String>,
    #[serde(default)]
    count: Option<i64>,
    #[serde(default)]
    gift: Option<bool>,
}

impl JsonSchema for Form {
    fn schema_name() -> Cow<'static, str> {
        "Form".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "maxLength": 40},
                "size": {"type": "string", "title": "Size", "enum": ["S", "M", "L"], "default": "M"},
                "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10},
                "gift": {"type": "boolean", "title": "Gift wrap", "default": false}
            },
            "required": ["name"]
        })
    }
}

/// A size to pick.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
enum Size {
    S,
    M,
    L,
}

/// A colour, or none.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Colour {
    Red,
    Blue,
}

/// The form as `#[derive(JsonSchema)]` writes it: `$schema`, an enum, a
/// `u32` (with `format`), `Option`s (`type: [T, "null"]` and `anyOf` with
/// null) and `additionalProperties: false`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Derived {
    /// Your name.
    name: String,
    /// The size.
    size: Size,
    /// How many.
    count: Option<u32>,
    /// A colour, if any.
    colour: Option<Colour>,
}

/// No fields at all: `{"type": "object"}`, a yes-or-no question.
#[derive(Debug, Deserialize, Serialize)]
struct Empty {}

impl JsonSchema for Empty {
    fn schema_name() -> Cow<'static, str> {
        "Empty".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
}

/// An answer with an object inside: no form can ask it.
#[derive(Deserialize)]
struct Nested {
    #[expect(dead_code, reason = "never answered: the host refuses the schema")]
    inner: Value,
}

impl JsonSchema for Nested {
    fn schema_name() -> Cow<'static, str> {
        "Nested".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {"x": {"type": "string"}}}}
        })
    }
}

/// A form whose schema is over the host's budget (a 16 KiB description).
#[derive(Deserialize)]
struct Huge {
    #[expect(dead_code, reason = "never answered: the host refuses the schema")]
    text: String,
}

impl JsonSchema for Huge {
    fn schema_name() -> Cow<'static, str> {
        "Huge".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "x".repeat(16 << 10)}}
        })
    }
}

fn entry<T: Serialize>(result: Result<Answer<T>, AskError>) -> Value {
    match result {
        Ok(Answer::Accept(content)) => json!({"action": "accept", "content": content}),
        Ok(Answer::Decline) => json!({"action": "decline"}),
        Ok(Answer::Cancel) => json!({"action": "cancel"}),
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[derive(Serialize)]
struct Asked {
    answers: Vec<Value>,
}

fn ask(input: AskInput) -> Result<Asked, ToolError> {
    let mut answers = Vec::new();
    for _ in 0..input.times {
        answers.push(match input.shape {
            Shape::Form => entry(toolhost_guest::ask::<Form>("Who is this order for?")),
            Shape::Nested => {
                entry(
                    toolhost_guest::ask::<Nested>("A nested question").map(|a| match a {
                        Answer::Accept(_) => Answer::Accept(()),
                        Answer::Decline => Answer::Decline,
                        Answer::Cancel => Answer::Cancel,
                    }),
                )
            }
            Shape::Derived => entry(toolhost_guest::ask::<Derived>("Who is this order for?")),
            Shape::Empty => entry(toolhost_guest::ask::<Empty>("Go ahead?")),
            Shape::Huge => entry(
                toolhost_guest::ask::<Huge>("A huge question").map(|a| match a {
                    Answer::Accept(_) => Answer::Accept(()),
                    Answer::Decline => Answer::Decline,
                    Answer::Cancel => Answer::Cancel,
                }),
            ),
        });
    }
    std::thread::sleep(Duration::from_millis(input.then_sleep_ms));
    Ok(Asked { answers })
}

toolhost_guest::export_tools! {
    hostile_ask: "Test fixture: asks the user a question and answers what came back." => ask,
}
