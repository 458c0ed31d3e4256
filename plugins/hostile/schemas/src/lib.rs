//! Test fixture: a `describe` answer that attacks the host, chosen by the
//! manifest's `[config] mode`:
//!
//! - `ok`: one sane tool, `hostile_schemas_echo` (returns its input).
//! - `ref_chain`: a 5000-link `$ref` chain (~150 KB) that once overflowed
//!   the schema compiler's stack and aborted the host.
//! - `ref_cycle`: `$ref`s in a cycle.
//! - `anyof_ladder`: 30 levels that each refer twice to the level below
//!   (2^30 nodes once expanded) inside `anyOf`.
//! - `remote_ref`: a `$ref` to an `http://` URL.
//! - `deep`: a schema nested 80 levels deep.
//! - `huge_schema`: a 2 MB schema.
//! - `many_tools`: 200 000 tools.
//! - `long_description`: a 1 MB description.
//! - `bad_name`: a name with an escape sequence and a newline that forges a
//!   log line.
//! - `duplicates`: 50 000 tools, the last one named like the first.
//! - `huge_output_schema`: a 2 MB output schema (contract 0.2).
//! - `output_ref_chain`: the 5000-link `$ref` chain as an output schema.
//! - `output_not_object`: an output schema whose root is not an object.
//! - `long_title`: a 1 MB title annotation.
//! - `bad_meta`: metadata that is not a JSON object.
//! - `liar`: one tool, `hostile_schemas_liar`, that declares an output
//!   schema requiring `n` and answers its input, which has no `n` unless
//!   the caller sends one.
//!
//! Expected: the plugin fails to load with a per-file error naming the
//! budget (or the rule) it broke, quickly; the host never crashes, and other
//! plugins of the directory load and serve.

use toolhost_guest::__private::bindings::toolhost::plugin::types::Annotations;
use toolhost_guest::__private::{Guest, ToolInfo, WitToolError, WitToolOutput};

fn tool(name: impl Into<String>, description: impl Into<String>, schema: String) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        output_schema: None,
        annotations: Annotations {
            title: None,
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        },
        meta: None,
    }
}

fn with_output(mut info: ToolInfo, schema: String) -> ToolInfo {
    info.output_schema = Some(schema);
    info
}

fn ref_chain() -> String {
    let mut defs: Vec<(String, String)> = (0..5000)
        .map(|i| {
            (
                format!("d{i}"),
                format!("{{\"$ref\":\"#/$defs/d{}\"}}", i + 1),
            )
        })
        .collect();
    defs.push(("d5000".into(), "{\"type\":\"string\"}".into()));
    defs_schema(defs, "#/$defs/d0")
}

fn defs_schema(defs: Vec<(String, String)>, root_ref: &str) -> String {
    let defs: Vec<String> = defs
        .into_iter()
        .map(|(name, body)| format!("\"{name}\":{body}"))
        .collect();
    format!(
        "{{\"type\":\"object\",\"$defs\":{{{}}},\"properties\":{{\"x\":{{\"$ref\":\"{root_ref}\"}}}}}}",
        defs.join(",")
    )
}

fn tools_for(mode: &str) -> Vec<ToolInfo> {
    let object = || "{\"type\":\"object\"}".to_owned();
    match mode {
        "ref_chain" => vec![tool("hostile_schemas_chain", "A long $ref chain.", ref_chain())],
        "huge_output_schema" => {
            let properties: Vec<String> = (0..50_000)
                .map(|i| format!("\"p{i}\":{{\"type\":\"string\"}}"))
                .collect();
            let schema = format!("{{\"type\":\"object\",\"properties\":{{{}}}}}", properties.join(","));
            vec![with_output(tool("hostile_schemas_huge_out", "A huge output schema.", object()), schema)]
        }
        "output_ref_chain" => {
            vec![with_output(tool("hostile_schemas_chain_out", "A $ref chain out.", object()), ref_chain())]
        }
        "output_not_object" => vec![with_output(
            tool("hostile_schemas_list_out", "Says it answers a list.", object()),
            "{\"type\":\"array\"}".into(),
        )],
        "long_title" => {
            let mut info = tool("hostile_schemas_titled", "A long title.", object());
            info.annotations.title = Some("t".repeat(1 << 20));
            vec![info]
        }
        "bad_meta" => {
            let mut info = tool("hostile_schemas_meta", "Bad metadata.", object());
            info.meta = Some("[1, 2]".into());
            vec![info]
        }
        "liar" => vec![with_output(
            tool("hostile_schemas_liar", "Answers its input, which may lack `n`.", object()),
            "{\"type\":\"object\",\"required\":[\"n\"],\"properties\":{\"n\":{\"type\":\"integer\"}}}".into(),
        )],
        "ref_cycle" => {
            let defs = vec![
                ("a".to_owned(), "{\"anyOf\":[{\"$ref\":\"#/$defs/b\"},{\"type\":\"null\"}]}".to_owned()),
                ("b".to_owned(), "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/a\"}}".to_owned()),
            ];
            vec![tool("hostile_schemas_cycle", "A $ref cycle.", defs_schema(defs, "#/$defs/a"))]
        }
        "anyof_ladder" => {
            let mut defs: Vec<(String, String)> = (0..30)
                .map(|i| {
                    let next = format!("{{\"$ref\":\"#/$defs/l{}\"}}", i + 1);
                    (format!("l{i}"), format!("{{\"anyOf\":[{next},{next}]}}"))
                })
                .collect();
            defs.push(("l30".into(), "{\"type\":\"integer\",\"minimum\":1000}".into()));
            vec![tool("hostile_schemas_ladder", "An anyOf ladder.", defs_schema(defs, "#/$defs/l0"))]
        }
        "remote_ref" => vec![tool(
            "hostile_schemas_remote",
            "A remote $ref.",
            "{\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"http://127.0.0.1:9/schema.json\"}}}".into(),
        )],
        "deep" => {
            let mut schema = object();
            for _ in 0..40 {
                schema = format!("{{\"type\":\"object\",\"properties\":{{\"a\":{schema}}}}}");
            }
            vec![tool("hostile_schemas_deep", "A deep schema.", schema)]
        }
        "huge_schema" => {
            let properties: Vec<String> = (0..50_000)
                .map(|i| format!("\"p{i}\":{{\"type\":\"string\"}}"))
                .collect();
            let schema = format!("{{\"type\":\"object\",\"properties\":{{{}}}}}", properties.join(","));
            vec![tool("hostile_schemas_huge", "A huge schema.", schema)]
        }
        "many_tools" => (0..200_000)
            .map(|i| tool(format!("hostile_schemas_t{i}"), "One of many.", object()))
            .collect(),
        "long_description" => vec![tool("hostile_schemas_long", "x".repeat(1 << 20), object())],
        "bad_name" => vec![tool(
            "hostile\u{1b}[31m\nINFO forged log line",
            "A bad name.",
            object(),
        )],
        "duplicates" => {
            let mut tools: Vec<ToolInfo> = (0..50_000)
                .map(|i| tool(format!("hostile_schemas_d{i}"), "One of many.", object()))
                .collect();
            tools.push(tool("hostile_schemas_d0", "Again.", object()));
            tools
        }
        _ => vec![tool("hostile_schemas_echo", "Returns its input.", object())],
    }
}

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolInfo> {
        let mode = toolhost_guest::config("mode").unwrap_or_default();
        tools_for(&mode)
    }

    fn call(_name: String, input: String) -> Result<WitToolOutput, WitToolError> {
        Ok(WitToolOutput {
            json: Some(input),
            content: Vec::new(),
        })
    }
}

#[cfg(target_arch = "wasm32")]
toolhost_guest::__private::bindings::export_plugin!(
    Plugin with_types_in toolhost_guest::__private::bindings
);

#[cfg(not(target_arch = "wasm32"))]
const _: () = {
    let _ = <Plugin as Guest>::describe;
    let _ = <Plugin as Guest>::call;
};
