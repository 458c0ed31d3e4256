//! `export_tools!` end to end, natively: the generated `Guest` impl
//! describes every tool and dispatches `call` by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::__private::{Guest, WitToolError};
use toolhost_guest::{Content, NoInput, Output, RawJson, ToolError};

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// The answer of `test_add`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The sum of both addends.
    sum: f64,
}

/// Not a schema type: declares no output schema.
#[derive(Serialize)]
struct Opaque {
    n: u8,
}

fn opaque(_: NoInput) -> Result<Opaque, ToolError> {
    Ok(Opaque { n: 1 })
}

fn picture(_: NoInput) -> Result<Output<Sum>, ToolError> {
    Ok(Output::new(Sum { sum: 1.0 }).with(Content::png(vec![137, 80, 78, 71])))
}

fn count(_: NoInput) -> Result<u32, ToolError> {
    Ok(3)
}

fn add(input: AddInput) -> Result<Sum, ToolError> {
    Ok(Sum {
        sum: input.a + input.b,
    })
}

fn refuse(_: NoInput) -> Result<(), ToolError> {
    Err(ToolError::denied("not today"))
}

fn raw(_: NoInput) -> Result<RawJson, ToolError> {
    Ok(RawJson("[1,2]".to_owned()))
}

toolhost_guest::export_tools! {
    test_add: "Add two numbers." => add { read_only: true, idempotent: true, title: "Add" },
    test_refuse: "Always refuses." => refuse,
    test_raw: "Returns raw JSON." => raw,
    test_opaque: "No schema." => opaque,
    test_picture: "A picture." => picture { destructive: false },
    test_count: "A number." => count,
}

fn call(name: &str, input: &str) -> Result<String, WitToolError> {
    full_call(name, input).map(|out| out.json.expect("a structured value"))
}

fn full_call(
    name: &str,
    input: &str,
) -> Result<toolhost_guest::__private::WitToolOutput, WitToolError> {
    <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as Guest>::call(
        name.to_owned(),
        input.to_owned(),
    )
}

#[test]
fn describe_lists_every_tool_in_order_with_its_schema() {
    let infos =
        <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as Guest>::describe();
    let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test_add",
            "test_refuse",
            "test_raw",
            "test_opaque",
            "test_picture",
            "test_count"
        ]
    );
    assert_eq!(infos[0].description, "Add two numbers.");
    let schema: serde_json::Value = serde_json::from_str(&infos[0].input_schema).unwrap();
    assert_eq!(
        schema["properties"]["b"]["description"],
        "The second addend."
    );
}

#[test]
fn call_dispatches_by_name() {
    assert_eq!(
        call("test_add", r#"{"a":2,"b":3}"#).unwrap(),
        r#"{"sum":5.0}"#
    );
    assert_eq!(call("test_raw", "{}").unwrap(), "[1,2]");
    assert!(matches!(call("test_refuse", "{}"), Err(WitToolError::Denied(m)) if m == "not today"));
}

#[test]
fn unknown_names_and_bad_input_are_reported_as_such() {
    assert!(matches!(
        call("test_nope", "{}"),
        Err(WitToolError::UnknownTool(m)) if m.contains("test_nope")
    ));
    assert!(matches!(
        call("test_add", r#"{"a":"two","b":3}"#),
        Err(WitToolError::InvalidInput(m)) if m.contains("invalid type")
    ));
    assert!(matches!(
        call("test_add", "not json"),
        Err(WitToolError::InvalidInput(_))
    ));
}

#[test]
fn the_output_schema_comes_from_an_object_output_type_only() {
    let infos =
        <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as Guest>::describe();
    let schema = |i: usize| {
        infos[i]
            .output_schema
            .as_deref()
            .map(|s| serde_json::from_str::<serde_json::Value>(s).unwrap())
    };
    let add = schema(0).expect("`Sum` derives JsonSchema");
    assert_eq!(
        add["properties"]["sum"]["description"],
        "The sum of both addends."
    );
    assert_eq!(
        schema(4),
        Some(add),
        "`Output<Sum>` declares `Sum`'s schema"
    );
    assert_eq!(schema(1), None, "`()` is not an object");
    assert_eq!(schema(2), None, "raw JSON has no schema");
    assert_eq!(schema(3), None, "a type without JsonSchema");
    assert_eq!(schema(5), None, "a number is not an object");
}

#[test]
fn annotations_are_set_from_the_braces_and_absent_otherwise() {
    let infos =
        <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as Guest>::describe();
    let add = &infos[0].annotations;
    assert_eq!(add.title.as_deref(), Some("Add"));
    assert_eq!(
        (
            add.read_only,
            add.idempotent,
            add.destructive,
            add.open_world
        ),
        (Some(true), Some(true), None, None)
    );
    assert_eq!(infos[4].annotations.destructive, Some(false));
    let none = &infos[1].annotations;
    assert_eq!(
        (none.title.as_deref(), none.read_only, none.destructive),
        (None, None, None)
    );
}

#[test]
fn content_parts_reach_the_contract_after_the_value() {
    let out = full_call("test_picture", "{}").unwrap();
    assert_eq!(out.json.as_deref(), Some(r#"{"sum":1.0}"#));
    assert_eq!(out.content.len(), 1);
    assert!(matches!(
        &out.content[0],
        toolhost_guest::__private::bindings::toolhost::plugin::types::Content::Image(m)
            if m.media_type == "image/png" && m.data.starts_with(&[137, 80])
    ));
    assert!(
        full_call("test_add", r#"{"a":1,"b":1}"#)
            .unwrap()
            .content
            .is_empty()
    );
}
