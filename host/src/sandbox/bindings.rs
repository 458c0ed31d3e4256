//! Host bindings for `wit/plugin.wit`. Generated code stays in this private
//! module; the rest of the crate uses the small surface re-exported here.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    exports: { default: async },
});

pub(crate) use exports::toolhost::plugin::tool::ToolError as WitToolError;
pub(crate) use toolhost::plugin::host::{Host as HostImports, Level};
pub(crate) use toolhost::plugin::types::Host as TypesHost;
