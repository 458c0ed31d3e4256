//! What the benches share: finding, building and loading the bundled
//! plugins.

use std::path::Path;

use toolhost::plugin::PluginHost;
use toolhost::tools::ToolRegistry;

/// Build the bundled Rust plugins (`plugins/build.sh rust`) unless every
/// file in `needed` is already there.
pub fn ensure_rust_plugins(root: &Path, needed: &[&Path]) {
    if needed.iter().all(|p| p.is_file()) {
        return;
    }
    let ok = std::process::Command::new("bash")
        .arg(root.join("plugins/build.sh"))
        .arg("rust")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "plugins/build.sh rust failed");
}

/// Load `NAME.wasm` from `plugins` for each of `names` and register their
/// tools in `registry`.
pub async fn register_plugins(
    host: &PluginHost,
    plugins: &Path,
    names: &[&str],
    registry: &ToolRegistry,
) {
    for name in names {
        let plugin = host
            .load_file(&plugins.join(format!("{name}.wasm")))
            .await
            .unwrap();
        for tool in plugin.tools() {
            registry.register(tool).unwrap();
        }
    }
}
