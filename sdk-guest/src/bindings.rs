//! The wit-bindgen output for `wit/0.2/plugin.wit` (`toolhost:plugin@0.2.0`). Private to the SDK: plugin
//! authors use the hand-written API in the crate root, and only the
//! `export_tools!` macro reaches in here (through `__private`).

wit_bindgen::generate!({
    path: "../wit/0.2/plugin.wit",
    world: "plugin",
    // The export macro is expanded in the plugin's crate, so it must be
    // reachable from there; `export_tools!` is its only caller.
    pub_export_macro: true,
    export_macro_name: "export_plugin",
    default_bindings_module: "toolhost_guest::bindings",
});
