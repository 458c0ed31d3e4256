//! Turning a tool's JSON Schema into the OpenAPI subset that Gemini's
//! `functionDeclarations[].parameters` accepts.
//!
//! Gemini answers 400 "Unknown name ... Cannot find field" for keywords
//! outside its subset. What [`sanitize`] does:
//! - keeps `type`, `format` (only `enum`, `date-time`, `int32`, `int64`,
//!   `float`, `double`), `description`, `title`, `nullable`, `enum` (only
//!   all-string), `properties`, `required` (only names in `properties`),
//!   `items`, `anyOf`, `minItems`, `maxItems`, `minProperties`,
//!   `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`,
//!   `maximum`, `default`, `example`, `propertyOrdering`;
//! - inlines local `$ref`s (`#/$defs/…`, `#/definitions/…`, as `schemars`
//!   writes for nested types) up to 16 levels deep (a recursive type is cut
//!   to `{"type":"object"}` there);
//! - rewrites `type: [T, "null"]` and `anyOf: [..., {"type":"null"}]` to
//!   `nullable: true`, `oneOf` to `anyOf`, `const` to a one-value `enum`, a
//!   one-element `allOf` to its element;
//! - drops everything else, notably `$schema`, `$id`, `$defs`,
//!   `definitions`, `additionalProperties`, `examples`, `not`, `if`/`then`.
//!
//! The registry still validates the model's arguments against the full
//! schema, so nothing dropped here is lost as a check.

use serde_json::{Map, Value, json};

const MAX_DEPTH: usize = 16;
const KEEP: &[&str] = &[
    "description",
    "title",
    "nullable",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "default",
    "example",
    "propertyOrdering",
];
const FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

/// The Gemini-accepted form of `schema`.
pub(crate) fn sanitize(schema: &Value) -> Value {
    at(schema, schema, 0)
}

/// The Gemini-accepted form of `node`, `depth` subschemas below the root.
fn at(node: &Value, root: &Value, depth: usize) -> Value {
    let Value::Object(map) = node else {
        // `true` / `false` schemas and junk: accept anything.
        return json!({});
    };
    if depth > MAX_DEPTH {
        return json!({"type": "object"});
    }
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return inline_ref(map, reference, root, depth);
    }
    if let Some(Value::Array(all)) = map.get("allOf")
        && let [only] = all.as_slice()
    {
        return merge_all_of(map, only, root, depth);
    }
    let mut out = Map::new();
    keep_own_keywords(map, &mut out);
    keep_subschemas(map, &mut out, root, depth);
    Value::Object(out)
}

/// The target of `reference` (in `map`), sanitized in its place, with the
/// referring node's description.
fn inline_ref(map: &Map<String, Value>, reference: &str, root: &Value, depth: usize) -> Value {
    let mut resolved = match resolve(reference, root) {
        Some(target) => at(target, root, depth + 1),
        None => json!({"type": "object"}),
    };
    if let (Some(description), Value::Object(out)) = (map.get("description"), &mut resolved) {
        out.insert("description".into(), description.clone());
    }
    resolved
}

/// A node whose `allOf` has one element (`only`): that element, with the
/// node's other keywords where the element does not set them.
fn merge_all_of(map: &Map<String, Value>, only: &Value, root: &Value, depth: usize) -> Value {
    let mut merged = map.clone();
    merged.remove("allOf");
    let mut inner = at(only, root, depth + 1);
    if let Value::Object(inner_map) = &mut inner {
        for (key, value) in at(&Value::Object(merged), root, depth + 1)
            .as_object()
            .into_iter()
            .flatten()
        {
            inner_map
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
    }
    inner
}

/// The keywords that describe the node itself, in Gemini's form: those it
/// keeps as they are, `type` (a `null` type made `nullable`), a known
/// `format`, and an all-string `enum` (or `const`).
fn keep_own_keywords(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    for key in KEEP {
        if let Some(value) = map.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    match map.get("type") {
        Some(Value::String(t)) if t == "null" => {
            out.insert("nullable".into(), Value::Bool(true));
        }
        Some(Value::String(t)) => {
            out.insert("type".into(), Value::String(t.clone()));
        }
        Some(Value::Array(types)) => {
            let mut real = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            if let Some(first) = real.next() {
                out.insert("type".into(), Value::String(first.to_owned()));
            }
            if types.iter().any(|t| t == "null") {
                out.insert("nullable".into(), Value::Bool(true));
            }
        }
        _ => {}
    }
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && FORMATS.contains(&format)
    {
        out.insert("format".into(), Value::String(format.to_owned()));
    }
    let enum_values = map
        .get("enum")
        .cloned()
        .or_else(|| map.get("const").map(|c| Value::Array(vec![c.clone()])));
    if let Some(Value::Array(values)) = enum_values
        && !values.is_empty()
        && values.iter().all(Value::is_string)
    {
        out.insert("enum".into(), Value::Array(values));
        out.entry("type")
            .or_insert_with(|| Value::String("string".into()));
    }
}

/// The node's subschemas, each sanitized in turn: `properties` (with the
/// `required` names among them), `items` (a tuple's first), and `anyOf` or
/// `oneOf` (a `null` option made `nullable`, a single option merged in).
fn keep_subschemas(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    root: &Value,
    depth: usize,
) {
    if let Some(Value::Object(properties)) = map.get("properties") {
        let properties: Map<String, Value> = properties
            .iter()
            .map(|(name, schema)| (name.clone(), at(schema, root, depth + 1)))
            .collect();
        if let Some(Value::Array(required)) = map.get("required") {
            let required: Vec<Value> = required
                .iter()
                .filter(|r| r.as_str().is_some_and(|r| properties.contains_key(r)))
                .cloned()
                .collect();
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
        }
        out.insert("properties".into(), Value::Object(properties));
    }
    match map.get("items") {
        Some(Value::Array(tuple)) => {
            if let Some(first) = tuple.first() {
                out.insert("items".into(), at(first, root, depth + 1));
            }
        }
        Some(items) => {
            out.insert("items".into(), at(items, root, depth + 1));
        }
        None => {}
    }
    if let Some(Value::Array(options)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
        let mut kept = Vec::new();
        for option in options {
            if option.get("type").and_then(Value::as_str) == Some("null") {
                out.insert("nullable".into(), Value::Bool(true));
            } else {
                kept.push(at(option, root, depth + 1));
            }
        }
        match kept.len() {
            0 => {}
            1 => {
                if let Some(Value::Object(only)) = kept.pop() {
                    for (key, value) in only {
                        out.entry(key).or_insert(value);
                    }
                }
            }
            _ => {
                out.insert("anyOf".into(), Value::Array(kept));
            }
        }
    }
}

fn resolve<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    let mut node = root;
    for segment in path.split('/') {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        node = node.get(segment.as_str())?;
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemars_style_schema_becomes_gemini_subset() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "description": "file"},
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "mode": {"$ref": "#/$defs/Mode", "description": "how"},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "examples": [["a"]]},
                "kind": {"const": "fixed"}
            },
            "required": ["path", "ghost"],
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "slow"]},
                "Inner": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Inner"}}}
            }
        });
        let out = sanitize(&schema);
        assert_eq!(out["type"], "object");
        assert_eq!(out["required"], json!(["path"]));
        assert!(out.get("$schema").is_none() && out.get("additionalProperties").is_none());
        assert!(out.get("$defs").is_none());
        let p = &out["properties"];
        assert_eq!(
            p["limit"],
            json!({"type": "integer", "nullable": true, "minimum": 0})
        );
        assert_eq!(
            p["mode"],
            json!({"type": "string", "enum": ["fast", "slow"], "description": "how"})
        );
        assert_eq!(p["inner"]["nullable"], true);
        assert_eq!(p["inner"]["type"], "object");
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(p["kind"], json!({"type": "string", "enum": ["fixed"]}));
        // The recursive type is cut, not looped on.
        let text = out.to_string();
        assert!(!text.contains("$ref"), "{text}");
    }
}
