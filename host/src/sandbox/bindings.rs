//! Host bindings for `wit/plugin.wit`. Generated code stays in this private
//! module; the rest of the crate uses the small surface re-exported here.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    exports: { default: async },
});

// `self::` because the generated `toolhost` module shares its name with
// this crate, which doctests see as an extern crate.
pub(crate) use self::exports::toolhost::plugin::tool::ToolError as WitToolError;
pub(crate) use self::toolhost::plugin::host::{Host as HostImports, Level};
pub(crate) use self::toolhost::plugin::types::Host as TypesHost;
