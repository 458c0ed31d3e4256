//! `export_tools!` end to end, natively: the generated `Guest` impl
//! describes every tool and dispatches `call` by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::__private::{Guest, WitToolError};
use toolhost_guest::{NoInput, RawJson, ToolError};

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Serialize)]
struct Sum {
    sum: f64,
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
    test_add: "Add two numbers." => add,
    test_refuse: "Always refuses." => refuse,
    test_raw: "Returns raw JSON." => raw,
}

fn call(name: &str, input: &str) -> Result<String, WitToolError> {
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
    assert_eq!(names, ["test_add", "test_refuse", "test_raw"]);
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
