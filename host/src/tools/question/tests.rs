use serde_json::json;

use super::*;

fn schema(properties: Value) -> Result<Map<String, Value>, QuestionError> {
    check_question_schema(&json!({"type": "object", "properties": properties}))
}

#[test]
fn every_elicitation_field_kind_is_accepted() {
    let s = schema(json!({
        "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 9, "format": "email", "default": "a@b.c"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "score": {"type": "number", "default": 95.5},
        "ok": {"type": "boolean", "default": true},
        "one": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
        "titled": {"type": "string", "oneOf": [{"const": "v", "title": "V"}]},
        "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2, "default": ["x"]},
        "many_titled": {"type": "array", "items": {"anyOf": [{"const": "v", "title": "V"}]}}
    }))
    .expect("accepted");
    let answer = json!({"name": "x@y.z", "age": 3, "score": 1, "ok": false, "one": "b",
        "legacy": "a", "titled": "v", "many": ["y", "x"], "many_titled": []});
    check_answer(&s, &answer).expect("a good answer");
}

#[test]
fn other_shapes_are_refused() {
    for bad in [
        json!({"a": {"type": "object"}}),
        json!({"a": {"type": "string", "pattern": "x"}}),
        json!({"a": {"type": "string", "format": "ipv4"}}),
        json!({"a": {"type": "integer", "minimum": 1.5}}),
        json!({"a": {"type": "integer", "default": 1.5}}),
        json!({"a": {"type": "string", "enum": ["x"], "default": "y"}}),
        json!({"a": {"type": "string", "enum": []}}),
        json!({"a": {"type": "string", "enum": ["x"], "enumNames": []}}),
        json!({"a": {"type": "array", "items": {"type": "integer"}}}),
        json!({"a": {"$ref": "#/x"}}),
        json!({"a": 5}),
    ] {
        assert!(schema(bad.clone()).is_err(), "{bad}");
    }
    assert!(check_question_schema(&json!({"type": "object", "$defs": {}})).is_err());
    assert!(check_question_schema(&json!({"type": "object", "required": ["nope"]})).is_err());
    let many: Map<String, Value> = (0..=MAX_QUESTION_FIELDS)
        .map(|i| (format!("f{i}"), json!({"type": "boolean"})))
        .collect();
    assert!(schema(Value::Object(many)).is_err());
}

#[test]
fn answers_are_held_to_their_schema() {
    let s = check_question_schema(&json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5}, "c": {"type": "string", "enum": ["a"]}},
        "required": ["n"]
    }))
    .expect("accepted");
    assert!(check_answer(&s, &json!({"n": 5})).is_ok());
    assert!(check_answer(&s, &json!({"n": 6})).is_err());
    assert!(check_answer(&s, &json!({"n": 1.5})).is_err());
    assert!(
        check_answer(&s, &json!({"c": "a"})).is_err(),
        "n is required"
    );
    assert!(check_answer(&s, &json!({"n": 1, "c": "b"})).is_err());
    assert!(check_answer(&s, &json!({"n": 1, "extra": 1})).is_err());
    assert!(check_answer(&s, &json!([1])).is_err());
}

/// Issue 36 (class 8): what SDKs derive from types and means the same is
/// asked in elicitation's form, not refused.
#[test]
fn what_sdks_derive_is_normalized_to_elicitation_s_form() {
    // Python: a `Literal` (an enum with no type), an `Optional[Literal]`,
    // an `Optional[str]`.
    let s = schema(json!({
        "pick": {"enum": ["a", "b"], "description": "Pick."},
        "maybe": {"enum": ["x", null]},
        "maybe_typed": {"type": ["string", "null"], "enum": ["x", null]},
        "note": {"type": ["string", "null"], "default": null}
    }))
    .expect("accepted");
    let p = &s["properties"];
    assert_eq!(
        p["pick"],
        json!({"enum": ["a", "b"], "description": "Pick.", "type": "string"})
    );
    assert_eq!(p["maybe"], json!({"enum": ["x"], "type": "string"}));
    assert_eq!(p["maybe_typed"], json!({"enum": ["x"], "type": "string"}));
    assert_eq!(p["note"], json!({"type": "string"}));
    // Go: `additionalProperties: false` at the root; Rust: `$schema`,
    // `format`, `Option<Enum>` as `anyOf` with null.
    let s = check_question_schema(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
            "c": {"anyOf": [{"type": "string", "enum": ["red"]}, {"type": "null"}], "description": "C."}
        },
        "additionalProperties": false
    }))
    .expect("accepted");
    assert!(!s.contains_key("additionalProperties"));
    assert_eq!(
        s["properties"]["n"],
        json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(
        s["properties"]["c"],
        json!({"type": "string", "enum": ["red"], "description": "C."})
    );
    // No `properties`: a question with no fields (elicitation's schema
    // needs the key).
    let s = check_question_schema(&json!({"type": "object"})).expect("accepted");
    assert_eq!(s["properties"], json!({}));
    assert!(check_answer(&s, &json!({})).is_ok());
    assert!(check_answer(&s, &json!({"x": 1})).is_err());
}

#[test]
fn what_means_something_else_is_still_refused() {
    for bad in [
        // Mixed or non-string enums: no elicitation kind.
        json!({"a": {"enum": ["x", 1]}}),
        json!({"a": {"enum": [1, 2]}}),
        json!({"a": {"enum": []}}),
        // A union of two kinds.
        json!({"a": {"type": ["string", "integer"]}}),
        json!({"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}),
        // Only null.
        json!({"a": {"type": ["null"]}}),
    ] {
        assert!(schema(bad.clone()).is_err(), "{bad}");
    }
    for root in [
        json!({"type": "object", "properties": {}, "additionalProperties": true}),
        json!({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}),
        json!({"type": "object", "properties": []}),
    ] {
        assert!(check_question_schema(&root).is_err(), "{root}");
    }
}
