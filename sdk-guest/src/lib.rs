//! Write toolhost plugins in Rust: one typed function per tool.
//!
//! A toolhost plugin is a WebAssembly component that implements the
//! `toolhost:plugin@0.2.0` contract (`wit/0.2/plugin.wit`): it `describe`s its tools,
//! each with a JSON Schema for its input, and runs `call(name, input)` on
//! JSON text. This crate hides that contract. You write ordinary functions
//! from an input type to an output type, and [`export_tools!`] does the rest:
//!
//! - the schema the model sees is derived from the input type with
//!   [`schemars`](https://docs.rs/schemars), so it cannot drift from the code;
//! - the input is deserialized with serde; a mismatch becomes an
//!   `invalid_input` error carrying serde's message, which tells the model
//!   what to fix;
//! - the output is any `Serialize` value (or [`RawJson`]), or an [`Output`]
//!   that adds content parts — an image, audio, text, an embedded resource —
//!   to the structured value; when the output type derives `JsonSchema` and
//!   is an object, its schema is the tool's output schema, which the host
//!   checks every result against;
//! - a long call reports [`progress`], and a tool can [`ask`] the person
//!   behind the call a question;
//! - resources, resource templates, prompts and completions (contract
//!   0.3) come from a type that implements [`offers::Offers`], exported
//!   with [`export_offers!`];
//! - a failure is a [`ToolError`], which the model sees as a structured tool
//!   result. A panic is not an error the model can act on: it traps the
//!   instance, and the host reports a `trap`.
//!
//! The generated bindings stay private, so a change in `wit-bindgen` is a
//! change in this crate, not in every plugin.
//!
//! # Example
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use toolhost_guest::ToolError;
//!
//! // Doc comments on the fields become descriptions in the schema, which
//! // is what the model reads.
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetInput {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! fn greet(input: GreetInput) -> Result<Greeting, ToolError> {
//!     if input.name.trim().is_empty() {
//!         return Err(ToolError::invalid_input("`name` must not be blank"));
//!     }
//!     let greeting = toolhost_guest::config("greeting").unwrap_or_else(|| "Hello".to_owned());
//!     Ok(Greeting { text: format!("{greeting}, {}!", input.name) })
//! }
//!
//! toolhost_guest::export_tools! {
//!     greet_person: "Greet a person by name." => greet,
//! }
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release` (crate type
//! `cdylib`; your crate depends on `serde` with `derive` and on `schemars`,
//! whose derives refer to those crates by name). rustc links a component
//! directly; put the `.wasm` and a `NAME.toml` manifest into a directory and
//! run `toolhost list --plugins DIR`. `docs/plugins/rust.md` walks through it.
//!
//! # State
//!
//! A plugin keeps state in ordinary statics (`static N: Mutex<u64>`,
//! `thread_local!`). That state lives exactly as long as the instance:
//! a stateless plugin (the default) gets a fresh instance for every call,
//! so its statics start from their initial values every time; a plugin whose
//! manifest says `stateful = true` gets one instance per session, so its
//! statics persist across the calls of one conversation and are never shared
//! with another. Nothing survives the session: keep durable data in a
//! granted directory instead.
//!
//! # Network
//!
//! Raw sockets are closed. A plugin whose manifest asks for HTTP origins
//! (`[permissions] http = ["https://api.example.com"]`, within what the
//! operator allows) sends requests with [`http`]; the host checks each one.
//!
//! # Files, environment, time
//!
//! Use `std::fs`, `std::env` and `std::time` as usual. The sandbox denies by
//! default: only directories and variables granted by the manifest (and
//! allowed by the operator) are visible. [`ToolError::from_io_at`] turns a
//! filesystem error into the right kind, including a path outside every grant.
//!
//! Every call runs under a fuel (CPU) budget, a wall-clock deadline, a memory
//! cap and an output size cap set by the manifest within the operator's
//! bounds; going past one ends the call with an error of that kind.

// Public only so that `export_tools!`, expanded in the plugin's crate, can
// reach it; hidden, and not part of the API.
#[doc(hidden)]
pub mod bindings;
#[doc(hidden)]
pub mod bindings_offers;
mod error;
mod export;
mod host;
pub mod http;
pub mod offers;
mod output;

pub use error::{ToolError, ToolErrorKind};
pub use export::{Annotations, input_schema, output_schema};
pub use host::{Answer, AskError, ask, config, log, progress};
pub use output::{Content, NoValue, Output, RawJson, ResourceContents, ToolOutput};

/// The input type of a tool that takes no arguments: the empty JSON object
/// (unknown fields are ignored).
///
/// ```
/// fn now(_: toolhost_guest::NoInput) -> Result<u64, toolhost_guest::ToolError> {
///     Ok(42)
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct NoInput {}

/// Used by the code [`export_tools!`] generates; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::bindings::exports::toolhost::plugin::tool::{
        Guest, ToolError as WitToolError, ToolInfo, ToolOutput as WitToolOutput,
    };
    pub use crate::bindings_offers;
    pub use crate::export::{Probe, WithSchema, WithoutSchema, describe, into_wit, probe, run};
    pub use crate::output::Reply;

    /// What `export_offers!` names (contract 0.3).
    pub mod offers {
        pub use crate::bindings_offers::exports::toolhost::plugin::completions::{
            Guest as CompletionsGuest, Target,
        };
        pub use crate::bindings_offers::exports::toolhost::plugin::prompts::Guest as PromptsGuest;
        pub use crate::bindings_offers::exports::toolhost::plugin::resources::Guest as ResourcesGuest;
        pub use crate::bindings_offers::toolhost::plugin::offer_types::{
            Completion as WitCompletion, OfferError as WitOfferError, PromptInfo, PromptReply,
            ResourceInfo, ResourcePart as WitResourcePart, TemplateInfo,
        };
    }
}
