//! The wit-bindgen output for contract 0.3's `offers` world
//! (`wit/0.3/plugin.wit`): the `resources`, `prompts` and `completions`
//! interfaces a plugin exports beside 0.2's `tool`. Private to the SDK, like
//! [`bindings`](crate::bindings): only `export_offers!` reaches in here.
//! The linker merges this world with 0.2's `plugin` into the component's.

wit_bindgen::generate!({
    path: "../wit/0.3/plugin.wit",
    world: "offers",
    pub_export_macro: true,
    export_macro_name: "export_offers_world",
    default_bindings_module: "toolhost_guest::bindings_offers",
});
