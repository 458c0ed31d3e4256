//! What `export_tools!` expands to: describing and running typed tools.

use std::marker::PhantomData;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;

use crate::bindings::exports::toolhost::plugin::tool::{
    ToolError as WitToolError, ToolInfo, ToolOutput as WitToolOutput,
};
use crate::bindings::toolhost::plugin::types::{
    Annotations as WitAnnotations, Content as WitContent, EmbeddedResource, Media,
    ResourceContents as WitResourceContents,
};
use crate::output::{Reply, ResourceContents};
use crate::{Content, ToolError, ToolErrorKind, ToolOutput};

/// Exports a plugin's tools: each is a name, a description for the model,
/// and a function `fn(Input) -> Result<Output, ToolError>`.
///
/// `Input` derives `serde::Deserialize` and `schemars::JsonSchema`; the
/// schema the model sees is derived from it. `Output` is anything
/// `serde::Serialize`, or [`RawJson`](crate::RawJson). Use the macro once,
/// at the root of a `cdylib` crate built for `wasm32-wasip2`.
///
/// ```text
/// export_tools! {
///     tool_name: "Description for the model." => function_path,
///     ...
/// }
/// ```
///
/// The tool name is an identifier (so `a-z A-Z 0-9 _`, at most 64
/// characters) and must be unique across every plugin the host loads:
/// prefix it with the plugin's name.
///
/// **Output schema.** When `Output` (or the `T` of an
/// [`Output<T>`](crate::Output)) derives `schemars::JsonSchema` and is an
/// object, its schema is the tool's output schema: clients see it, and the
/// host checks every result against it. Other outputs declare none.
///
/// **Annotations.** Hints for clients and people (MCP's tool annotations)
/// follow the function in braces, any of `title`, `read_only`,
/// `destructive`, `idempotent` and `open_world`:
///
/// ```text
/// export_tools! {
///     files_delete: "Delete a file." => delete { destructive: true, title: "Delete a file" },
/// }
/// ```
///
/// A component exports one `tool` interface, so the macro may appear once
/// per crate: list every tool in that one call. A second call in the same
/// module fails to compile with an error naming
/// `export_tools_may_appear_once_per_crate__list_every_tool_in_one_call`;
/// one in another module fails to link for wasm32 (the contract's symbols
/// are defined twice).
///
/// # Examples
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use toolhost_guest::ToolError;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddInput {
///     /// The first addend.
///     a: f64,
///     /// The second addend.
///     b: f64,
/// }
///
/// fn add(input: AddInput) -> Result<f64, ToolError> {
///     Ok(input.a + input.b)
/// }
///
/// toolhost_guest::export_tools! {
///     math_add: "Add two numbers and return the sum." => add,
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_tools {
    ($($name:ident : $description:expr => $function:path $({ $($key:ident : $value:expr),* $(,)? })?),+ $(,)?) => {
        // The plugin type's name is the fix, so that a second call of the
        // macro in this module reads "the name `export_tools_may_appear_
        // once_per_crate__list_every_tool_in_one_call` is defined multiple
        // times" rather than an error from inside the expansion.
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        struct export_tools_may_appear_once_per_crate__list_every_tool_in_one_call;

        impl $crate::__private::Guest for export_tools_may_appear_once_per_crate__list_every_tool_in_one_call {
            fn describe() -> ::std::vec::Vec<$crate::__private::ToolInfo> {
                // Method lookup on `&Probe<O>` finds `WithSchema` (on
                // `Probe<O: JsonSchema>`) before it tries autoref and finds
                // `WithoutSchema` (on `&Probe<O>`): the output schema when
                // the output type has one, none otherwise.
                #[allow(unused_imports)]
                use $crate::__private::{WithSchema as _, WithoutSchema as _};
                ::std::vec![$(
                    $crate::__private::describe(
                        ::core::stringify!($name),
                        $description,
                        &$function,
                        (&$crate::__private::probe(&$function)).output_schema(),
                        {
                            #[allow(unused_mut)]
                            let mut annotations = $crate::Annotations::default();
                            $($(annotations.$key = ::core::option::Option::Some(::core::convert::From::from($value));)*)?
                            annotations
                        },
                    )
                ),+]
            }

            fn call(
                name: ::std::string::String,
                input: ::std::string::String,
            ) -> ::core::result::Result<$crate::__private::WitToolOutput, $crate::__private::WitToolError> {
                let result = match name.as_str() {
                    $(::core::stringify!($name) => $crate::__private::run(&input, $function),)+
                    _ => ::core::result::Result::Err($crate::ToolError::unknown_tool(&name)),
                };
                $crate::__private::into_wit(result)
            }
        }

        // Only wasm32 exports the contract's symbols (native linkers reject
        // their names), so the crate's logic still builds and unit-tests
        // natively.
        #[cfg(target_arch = "wasm32")]
        $crate::__private::bindings::export_plugin!(
            export_tools_may_appear_once_per_crate__list_every_tool_in_one_call
                with_types_in $crate::__private::bindings
        );
        // Natively, nothing calls the plugin; mark it used so that the tool
        // functions do not read as dead code.
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as $crate::__private::Guest>::describe;
            let _ = <export_tools_may_appear_once_per_crate__list_every_tool_in_one_call as $crate::__private::Guest>::call;
        };
    };
}

/// Hints about how a tool behaves, for clients and people (MCP's tool
/// annotations). Set them after the function in [`export_tools!`]. Hints
/// only: what needs a person's approval is the operator's policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// A human-readable title.
    pub title: Option<String>,
    /// The tool does not change its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    pub destructive: Option<bool>,
    /// Calling it twice with the same input has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches an open world (the web).
    pub open_world: Option<bool>,
}

/// The `tool-info` for one tool, with the input schema derived from its
/// input type.
pub fn describe<I, O, F>(
    name: &str,
    description: &str,
    _function: &F,
    output_schema: Option<String>,
    annotations: Annotations,
) -> ToolInfo
where
    I: JsonSchema,
    F: Fn(I) -> Result<O, ToolError>,
{
    report_panics();
    ToolInfo {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input_schema::<I>(),
        output_schema,
        annotations: WitAnnotations {
            title: annotations.title,
            read_only: annotations.read_only,
            destructive: annotations.destructive,
            idempotent: annotations.idempotent,
            open_world: annotations.open_world,
        },
        meta: None,
    }
}

/// A tool function's output type, for the output-schema probe in
/// `export_tools!`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Probe<O>(PhantomData<O>);

#[doc(hidden)]
pub fn probe<I, O, F: Fn(I) -> Result<O, ToolError>>(_function: &F) -> Probe<O> {
    Probe(PhantomData)
}

/// Chosen by autoref when the output type has a schema.
#[doc(hidden)]
pub trait WithSchema {
    fn output_schema(&self) -> Option<String>;
}

impl<O: JsonSchema> WithSchema for Probe<O> {
    fn output_schema(&self) -> Option<String> {
        output_schema::<O>()
    }
}

/// Chosen when it has none.
#[doc(hidden)]
pub trait WithoutSchema {
    fn output_schema(&self) -> Option<String>;
}

impl<O> WithoutSchema for &Probe<O> {
    fn output_schema(&self) -> Option<String> {
        None
    }
}

/// The JSON Schema of a tool's output type, as JSON text, when it is an
/// object schema (what MCP's `outputSchema` must be); `None` for any other
/// type (a number, a list, a string). Built as [`input_schema`] builds its
/// schemas.
///
/// # Examples
///
/// ```
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum {
///     sum: f64,
/// }
///
/// let schema: serde_json::Value =
///     serde_json::from_str(&toolhost_guest::output_schema::<Sum>().unwrap()).unwrap();
/// assert_eq!(schema["properties"]["sum"]["type"], "number");
/// assert_eq!(toolhost_guest::output_schema::<f64>(), None);
/// ```
pub fn output_schema<O: JsonSchema>() -> Option<String> {
    let schema = schema_for::<O>();
    let value: serde_json::Value = serde_json::from_str(&schema).ok()?;
    (value.get("type") == Some(&serde_json::Value::from("object"))).then_some(schema)
}

/// The JSON Schema of a tool's input type, as JSON text: what `describe`
/// sends for a tool whose input is `I`. Useful to check a schema in a native
/// unit test.
///
/// Subschemas are inlined rather than put in `$defs` (recursive types
/// excepted), because not every LLM provider resolves `$ref`. The root's
/// `title` (the Rust type name) and `description` (the type's doc comment)
/// are left out: the model reads the tool's description from
/// `export_tools!` instead, and every schema is sent with every request. Doc
/// comments on fields and enum variants become their `description`s.
///
/// # Examples
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input {
///     /// How many.
///     n: u32,
/// }
///
/// let schema: serde_json::Value =
///     serde_json::from_str(&toolhost_guest::input_schema::<Input>()).unwrap();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["n"]["description"], "How many.");
/// ```
pub fn input_schema<I: JsonSchema>() -> String {
    schema_for::<I>()
}

fn schema_for<T: JsonSchema>() -> String {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    schema.as_value().to_string()
}

/// Parses `input` into the tool's input type, runs the tool, serializes its
/// output.
///
/// # Errors
///
/// [`ToolErrorKind::InvalidInput`] with serde's message when the input does
/// not deserialize; whatever the tool returns; [`ToolErrorKind::Failed`]
/// when the output does not serialize.
pub fn run<I, O, F>(input: &str, function: F) -> Result<Reply, ToolError>
where
    I: DeserializeOwned,
    O: ToolOutput,
    F: FnOnce(I) -> Result<O, ToolError>,
{
    report_panics();
    let input = serde_json::from_str(input).map_err(|e| {
        ToolError::invalid_input(format!("the input does not fit the tool's schema: {e}"))
    })?;
    function(input)?.into_result()
}

/// Makes a panic in a plugin say what and where on one line of stderr,
/// which the host quotes in the call's `trap` error: on wasm32 a panic
/// aborts the instance, so that line is all the caller gets. Rust's default
/// hook would add "run with `RUST_BACKTRACE=1`", which cannot reach a
/// plugin. Natively (an author's unit tests) the default hook stays.
fn report_panics() {
    #[cfg(target_arch = "wasm32")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                let payload = info.payload();
                let message = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("(a panic payload that is not text)");
                match info.location() {
                    Some(at) => eprintln!(
                        "panicked at {}:{}:{}: {message}",
                        at.file(),
                        at.line(),
                        at.column()
                    ),
                    None => eprintln!("panicked: {message}"),
                }
            }));
        });
    }
}

/// Converts the SDK's result into the contract's.
pub fn into_wit(result: Result<Reply, ToolError>) -> Result<WitToolOutput, WitToolError> {
    result
        .map(|reply| WitToolOutput {
            json: reply.json,
            content: reply.content.into_iter().map(content_into_wit).collect(),
        })
        .map_err(|e| {
            let message = e.message().to_owned();
            match e.kind() {
                ToolErrorKind::InvalidInput => WitToolError::InvalidInput(message),
                ToolErrorKind::Failed => WitToolError::Failed(message),
                ToolErrorKind::Denied => WitToolError::Denied(message),
                ToolErrorKind::UnknownTool => WitToolError::UnknownTool(message),
            }
        })
}

fn content_into_wit(part: Content) -> WitContent {
    match part {
        Content::Text(text) => WitContent::Text(text),
        Content::Image { media_type, data } => WitContent::Image(Media { media_type, data }),
        Content::Audio { media_type, data } => WitContent::Audio(Media { media_type, data }),
        Content::Resource {
            uri,
            media_type,
            contents,
        } => WitContent::Resource(EmbeddedResource {
            uri,
            media_type,
            contents: match contents {
                ResourceContents::Text(text) => WitResourceContents::Text(text),
                ResourceContents::Blob(data) => WitResourceContents::Blob(data),
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::{NoInput, RawJson};

    #[derive(Deserialize, JsonSchema)]
    struct AddInput {
        a: f64,
        b: f64,
    }

    fn add(input: AddInput) -> Result<f64, ToolError> {
        Ok(input.a + input.b)
    }

    #[test]
    fn run_parses_input_and_serializes_output() {
        let reply = run(r#"{"a":1,"b":2.5}"#, add).unwrap();
        assert_eq!(reply.json.as_deref(), Some("3.5"));
        assert!(reply.content.is_empty());
    }

    #[test]
    fn input_that_does_not_deserialize_is_invalid_input_with_serdes_message() {
        let err = run(r#"{"a":1}"#, add).unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
        assert!(err.message().contains("missing field `b`"), "{err}");
    }

    #[test]
    fn tool_errors_pass_through_to_the_wit_variant() {
        let result = run("{}", |_: NoInput| -> Result<u8, _> {
            Err(ToolError::denied("no"))
        });
        assert!(matches!(into_wit(result), Err(WitToolError::Denied(m)) if m == "no"));
    }

    #[test]
    fn raw_json_is_passed_through_unparsed() {
        let out = run("{}", |_: NoInput| Ok(RawJson("{oops".to_owned()))).unwrap();
        assert_eq!(out.json.as_deref(), Some("{oops"));
    }

    #[test]
    fn schema_comes_from_the_input_type() {
        let info = describe("math_add", "Adds.", &add, None, Annotations::default());
        let schema: serde_json::Value = serde_json::from_str(&info.input_schema).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Unit {
        Metre,
        Foot,
    }

    /// Not sent to the model.
    #[derive(Deserialize, JsonSchema)]
    struct Nested {
        unit: Unit,
    }

    #[test]
    fn schema_inlines_subschemas_and_drops_the_rust_title() {
        let schema: serde_json::Value = serde_json::from_str(&input_schema::<Nested>()).unwrap();
        assert_eq!(schema.get("$defs"), None, "{schema:#}");
        assert_eq!(schema.get("title"), None, "{schema:#}");
        assert_eq!(schema.get("description"), None, "{schema:#}");
        assert_eq!(
            schema["properties"]["unit"]["enum"],
            serde_json::json!(["metre", "foot"])
        );
        let parsed: Nested = serde_json::from_str(r#"{"unit":"foot"}"#).unwrap();
        assert!(matches!(parsed.unit, Unit::Foot));
    }

    #[test]
    fn an_output_carries_its_value_and_its_content_in_order() {
        use crate::{Content, Output};
        let reply = run("{}", |_: NoInput| {
            Ok(Output::new(serde_json::json!({"n": 2}))
                .with(Content::png(vec![1, 2]))
                .with(Content::text("two")))
        })
        .unwrap();
        assert_eq!(reply.json.as_deref(), Some(r#"{"n":2}"#));
        assert_eq!(
            reply.content,
            [Content::png(vec![1, 2]), Content::text("two")]
        );
        let wit = into_wit(Ok(reply)).unwrap();
        assert!(
            matches!(&wit.content[0], WitContent::Image(m) if m.media_type == "image/png" && m.data == [1, 2])
        );
        let only = run("{}", |_: NoInput| {
            Ok(Output::content([Content::audio("audio/wav", vec![0])]))
        })
        .unwrap();
        assert_eq!(only.json, None, "content only: no structured value");
    }

    #[test]
    fn output_schemas_are_objects_only() {
        #[derive(serde::Serialize, JsonSchema)]
        struct Sum {
            /// The sum.
            sum: f64,
        }
        let schema: serde_json::Value =
            serde_json::from_str(&output_schema::<Sum>().unwrap()).unwrap();
        assert_eq!(schema["properties"]["sum"]["description"], "The sum.");
        assert_eq!(
            output_schema::<crate::Output<Sum>>(),
            output_schema::<Sum>()
        );
        assert_eq!(output_schema::<f64>(), None);
        assert_eq!(output_schema::<Vec<Sum>>(), None);
    }

    #[test]
    fn no_input_schema_is_an_empty_object() {
        let schema: serde_json::Value = serde_json::from_str(&input_schema::<NoInput>()).unwrap();
        assert_eq!(schema["type"], "object");
    }
}
