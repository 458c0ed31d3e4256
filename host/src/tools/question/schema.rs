//! A question's schema and its answers: the shape MCP elicitation allows
//! (a flat object of string, number, integer, boolean and string-enum
//! fields), within a budget, and an answer held to the schema it answers.

use serde_json::{Map, Value};

/// Most questions one call may ask.
pub const MAX_QUESTIONS_PER_CALL: usize = 8;
/// Most fields (properties) a question's schema may have.
pub const MAX_QUESTION_FIELDS: usize = 32;
/// Most choices one enum field may offer.
pub const MAX_QUESTION_CHOICES: usize = 64;

/// Keywords every field may have.
const COMMON: &[&str] = &["type", "title", "description", "default"];

/// Whether `schema` is a question's schema: a flat object of MCP
/// elicitation's field kinds. It answers the schema as it goes to whoever
/// answers: normalized to elicitation's `requestedSchema` (below).
///
/// Fields: `string` (`minLength`, `maxLength`, `format` one of `email`,
/// `uri`, `date`, `date-time`), `number` and `integer` (`minimum`,
/// `maximum`), `boolean`, single choice (`string` with `enum`, optionally
/// `enumNames`, or with `oneOf` of `{const, title}`), multiple choice
/// (`array` with `items` of `{type: string, enum}` or `{anyOf: [{const,
/// title}]}`, `minItems`, `maxItems`). Each may have `title`,
/// `description` and a `default` of its type. At most
/// [`MAX_QUESTION_FIELDS`] fields of [`MAX_QUESTION_CHOICES`] choices.
///
/// What SDKs derive from types, and means the same, is normalized rather
/// than refused: the root's `additionalProperties: false` is dropped (an
/// answer never has other fields), a root without `properties` gets an
/// empty one (a question with no fields: accept or decline), an `enum` of
/// strings without `type` gets `"type": "string"`, a nullable field
/// (`type: [T, "null"]`, `null` among an enum's values, `anyOf`/`oneOf` of
/// a field kind and `{"type": "null"}`, a `null` default) loses its
/// `null` (a person leaves the field out instead), and number and integer
/// fields lose `format`.
///
/// # Errors
///
/// What is wrong with the schema, naming the field.
pub fn check_question_schema(schema: &Value) -> Result<Map<String, Value>, QuestionError> {
    question_schema(schema).map_err(QuestionError::Schema)
}

fn question_schema(schema: &Value) -> Result<Map<String, Value>, String> {
    let Some(root) = schema.as_object() else {
        return Err("the schema is not a JSON object".to_owned());
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema's `type` must be \"object\"".to_owned());
    }
    for key in root.keys() {
        if ![
            "type",
            "properties",
            "required",
            "title",
            "description",
            "$schema",
            "additionalProperties",
        ]
        .contains(&key.as_str())
        {
            return Err(format!(
                "the schema has `{}`; a question's schema has only type, properties, required, title and description",
                clip_name(key)
            ));
        }
    }
    if root
        .get("additionalProperties")
        .is_some_and(|v| v != &Value::Bool(false))
    {
        return Err(
            "the schema's `additionalProperties` may only be false: an answer has only the \
             schema's fields"
                .to_owned(),
        );
    }
    for key in ["title", "description", "$schema"] {
        if root.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("the schema's `{key}` is not a string"));
        }
    }
    let mut schema = root.clone();
    schema.remove("additionalProperties");
    let properties = match schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        Value::Object(p) => p,
        _ => return Err("the schema's `properties` is not an object".to_owned()),
    };
    if properties.len() > MAX_QUESTION_FIELDS {
        return Err(format!(
            "the schema has {} fields; a question may have {MAX_QUESTION_FIELDS}",
            properties.len()
        ));
    }
    for (name, field) in properties.iter_mut() {
        normalize_field(field);
        check_field(field).map_err(|e| format!("field `{}`: {e}", clip_name(name)))?;
    }
    if let Some(required) = root.get("required") {
        let Some(required) = required.as_array() else {
            return Err("the schema's `required` is not an array".to_owned());
        };
        for name in required {
            let known = name.as_str().is_some_and(|n| properties.contains_key(n));
            if !known {
                return Err(format!(
                    "`required` names {}, which is not one of the schema's properties",
                    clip_name(&name.to_string())
                ));
            }
        }
    }
    Ok(schema)
}

/// A field as SDKs derive it, in elicitation's form where the meaning is
/// the same (see [`check_question_schema`]); anything else is left for
/// [`check_field`] to refuse.
fn normalize_field(field: &mut Value) {
    let Some(field) = field.as_object_mut() else {
        return;
    };
    let is_null = |v: &Value| {
        v.as_object()
            .is_some_and(|o| o.len() == 1 && o.get("type") == Some(&json_str("null")))
    };
    // `anyOf`/`oneOf` of one field kind and null (Rust's `Option<Enum>`).
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = field.get(key) else {
            continue;
        };
        let [a, b] = alts.as_slice() else { continue };
        let other = match (is_null(a), is_null(b)) {
            (true, false) => b,
            (false, true) => a,
            _ => continue,
        };
        let Some(other) = other.as_object().cloned() else {
            continue;
        };
        field.remove(key);
        for (k, v) in other {
            field.entry(k).or_insert(v);
        }
    }
    // `type: [T, "null"]` (an `Option<T>`, `Optional[T]`, a Go pointer).
    if let Some(Value::Array(types)) = field.get("type") {
        let kinds: Vec<&Value> = types.iter().filter(|t| *t != &json_str("null")).collect();
        if let [kind] = kinds.as_slice() {
            let kind = (*kind).clone();
            field.insert("type".to_owned(), kind);
        }
    }
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if field.get("default").is_some_and(Value::is_null) {
        field.remove("default");
    }
    // An enum of strings says its type (Python's `Literal`).
    if !field.contains_key("type")
        && field
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string))
    {
        field.insert("type".to_owned(), json_str("string"));
    }
    // `format` (`int32`, `double`, ... as schema generators write it)
    // says nothing a person answers by.
    if matches!(
        field.get("type").and_then(Value::as_str),
        Some("number" | "integer")
    ) {
        field.remove("format");
    }
}

fn json_str(s: &str) -> Value {
    Value::String(s.to_owned())
}

fn clip_name(name: &str) -> String {
    crate::text::untrusted(name, 64)
}

/// The kind of one field of a question.
enum Kind<'a> {
    Text,
    Number { integer: bool },
    Boolean,
    Choice(Vec<&'a str>),
    Choices(Vec<&'a str>),
}

fn only(field: &Map<String, Value>, extra: &[&str]) -> Result<(), String> {
    match field
        .keys()
        .find(|k| !COMMON.contains(&k.as_str()) && !extra.contains(&k.as_str()))
    {
        Some(k) => Err(format!(
            "`{}` is not a keyword of this kind of field",
            clip_name(k)
        )),
        None => Ok(()),
    }
}

/// The values of a `[{const, title}]` list.
fn titled<'a>(list: Option<&'a Value>, key: &str) -> Result<Vec<&'a str>, String> {
    let list = list
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{key}` is not an array"))?;
    list.iter()
        .map(|o| {
            let o = o.as_object().filter(|o| o.len() == 2);
            match o.map(|o| (o.get("const"), o.get("title"))) {
                Some((Some(Value::String(c)), Some(Value::String(_)))) => Ok(c.as_str()),
                _ => Err(format!(
                    "each entry of `{key}` must be {{\"const\": string, \"title\": string}}"
                )),
            }
        })
        .collect()
}

fn strings<'a>(list: Option<&'a Value>, key: &str) -> Result<Vec<&'a str>, String> {
    list.and_then(Value::as_array)
        .and_then(|l| l.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("`{key}` is not an array of strings"))
}

/// The kind of `field`, once its keywords are those of that kind, with
/// values of the right type, and a choice offers a number of values in
/// range.
fn kind(field: &Map<String, Value>) -> Result<Kind<'_>, String> {
    let ty = field.get("type").and_then(Value::as_str);
    let kind = match ty {
        Some("string") if field.contains_key("enum") => {
            only(field, &["enum", "enumNames"])?;
            let values = strings(field.get("enum"), "enum")?;
            if let Some(names) = field.get("enumNames")
                && strings(Some(names), "enumNames")?.len() != values.len()
            {
                return Err("`enumNames` must name each value of `enum`".to_owned());
            }
            Kind::Choice(values)
        }
        Some("string") if field.contains_key("oneOf") => {
            only(field, &["oneOf"])?;
            Kind::Choice(titled(field.get("oneOf"), "oneOf")?)
        }
        Some("string") => text_kind(field)?,
        Some(t @ ("number" | "integer")) => {
            only(field, &["minimum", "maximum"])?;
            let integer = t == "integer";
            for key in ["minimum", "maximum"] {
                if let Some(v) = field.get(key)
                    && !(if integer { v.is_i64() } else { v.is_number() })
                {
                    return Err(format!("`{key}` is not a {t}"));
                }
            }
            Kind::Number { integer }
        }
        Some("boolean") => {
            only(field, &[])?;
            Kind::Boolean
        }
        Some("array") => multiple_choice_kind(field)?,
        _ => {
            return Err(
                "`type` must be string, number, integer, boolean, or array (multiple choice)"
                    .to_owned(),
            );
        }
    };
    if let Kind::Choice(values) | Kind::Choices(values) = &kind
        && (values.is_empty() || values.len() > MAX_QUESTION_CHOICES)
    {
        return Err(format!(
            "a choice offers 1 to {MAX_QUESTION_CHOICES} values, not {}",
            values.len()
        ));
    }
    Ok(kind)
}

/// A free-text field (`type: string` without choices): whole-number
/// lengths, and a `format` a form can ask for.
fn text_kind(field: &Map<String, Value>) -> Result<Kind<'_>, String> {
    only(field, &["minLength", "maxLength", "format"])?;
    for key in ["minLength", "maxLength"] {
        if field
            .get(key)
            .is_some_and(|v| v.as_u64().is_none_or(|n| n > u64::from(u32::MAX)))
        {
            return Err(format!("`{key}` is not a whole number"));
        }
    }
    if let Some(format) = field.get("format")
        && !matches!(
            format.as_str(),
            Some("email" | "uri" | "date" | "date-time")
        )
    {
        return Err("`format` must be one of email, uri, date, date-time".to_owned());
    }
    Ok(Kind::Text)
}

/// A multiple-choice field (`type: array`): whole-number counts, and
/// `items` that list the values, as an `enum` of strings or an `anyOf` of
/// titled constants.
fn multiple_choice_kind(field: &Map<String, Value>) -> Result<Kind<'_>, String> {
    only(field, &["items", "minItems", "maxItems"])?;
    for key in ["minItems", "maxItems"] {
        if field.get(key).is_some_and(|v| !v.is_u64()) {
            return Err(format!("`{key}` is not a whole number"));
        }
    }
    let items = field
        .get("items")
        .and_then(Value::as_object)
        .ok_or("a multiple-choice field needs `items`")?;
    let values = if items.contains_key("anyOf") {
        if items.len() != 1 {
            return Err("`items` with `anyOf` has nothing else".to_owned());
        }
        titled(items.get("anyOf"), "anyOf")?
    } else {
        if items.len() != 2 || items.get("type").and_then(Value::as_str) != Some("string") {
            return Err(
                "`items` must be {\"type\": \"string\", \"enum\": [...]} or {\"anyOf\": [...]}"
                    .to_owned(),
            );
        }
        strings(items.get("enum"), "items.enum")?
    };
    Ok(Kind::Choices(values))
}

fn check_field(field: &Value) -> Result<(), String> {
    let field = field.as_object().ok_or("its schema is not an object")?;
    for key in ["title", "description"] {
        if field.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("`{key}` is not a string"));
        }
    }
    let kind = kind(field)?;
    if let Some(default) = field.get("default") {
        check_value(&kind, field, default).map_err(|e| format!("its default: {e}"))?;
    }
    Ok(())
}

fn check_value(kind: &Kind<'_>, field: &Map<String, Value>, value: &Value) -> Result<(), String> {
    let bound = |key: &str| field.get(key).and_then(Value::as_f64);
    let count = |key: &str| field.get(key).and_then(Value::as_u64);
    match kind {
        Kind::Text => {
            let text = value.as_str().ok_or("not a string")?;
            let chars = text.chars().count() as u64;
            if count("minLength").is_some_and(|n| chars < n) {
                return Err(format!(
                    "shorter than {} characters",
                    count("minLength").unwrap_or(0)
                ));
            }
            if count("maxLength").is_some_and(|n| chars > n) {
                return Err(format!(
                    "longer than {} characters",
                    count("maxLength").unwrap_or(0)
                ));
            }
        }
        Kind::Number { integer } => {
            let ok = if *integer {
                value.is_i64() || value.is_u64()
            } else {
                value.is_number()
            };
            if !ok {
                return Err(format!(
                    "not {}",
                    if *integer { "an integer" } else { "a number" }
                ));
            }
            let n = value.as_f64().unwrap_or(f64::NAN);
            if bound("minimum").is_some_and(|m| n < m) {
                return Err("below the minimum".to_owned());
            }
            if bound("maximum").is_some_and(|m| n > m) {
                return Err("above the maximum".to_owned());
            }
        }
        Kind::Boolean => {
            value.as_bool().ok_or("not true or false")?;
        }
        Kind::Choice(values) => {
            let v = value.as_str().ok_or("not a string")?;
            if !values.contains(&v) {
                return Err("not one of the choices".to_owned());
            }
        }
        Kind::Choices(values) => {
            let picked = value.as_array().ok_or("not an array")?;
            if !picked
                .iter()
                .all(|p| p.as_str().is_some_and(|p| values.contains(&p)))
            {
                return Err("not a list of the choices".to_owned());
            }
            let n = picked.len() as u64;
            if count("minItems").is_some_and(|m| n < m) || count("maxItems").is_some_and(|m| n > m)
            {
                return Err("picks too few or too many choices".to_owned());
            }
        }
    }
    Ok(())
}

/// Whether `answer` answers a question whose schema is `schema` (one that
/// [`check_question_schema`] accepted): an object with every required
/// field, no other fields than the schema's, each of its field's kind and
/// bounds.
///
/// # Errors
///
/// Which field is wrong, and how.
pub fn check_answer(schema: &Map<String, Value>, answer: &Value) -> Result<(), QuestionError> {
    answer_fits(schema, answer).map_err(QuestionError::Answer)
}

fn answer_fits(schema: &Map<String, Value>, answer: &Value) -> Result<(), String> {
    let answer = answer.as_object().ok_or("the answer is not an object")?;
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, value) in answer {
        let field = properties
            .get(name)
            .and_then(Value::as_object)
            .ok_or_else(|| format!("the answer has `{}`, which was not asked", clip_name(name)))?;
        check_value(&kind(field)?, field, value)
            .map_err(|e| format!("field `{}`: {e}", clip_name(name)))?;
    }
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !answer.contains_key(name) {
            return Err(format!("the answer has no `{}`", clip_name(name)));
        }
    }
    Ok(())
}

/// Why a question's schema or an answer was refused
/// ([`check_question_schema`], [`check_answer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    /// The schema is not one a person can answer in a form; says which
    /// field, and how.
    #[error("{0}")]
    Schema(String),
    /// The answer does not fit the question's schema; says which field,
    /// and how.
    #[error("{0}")]
    Answer(String),
}
