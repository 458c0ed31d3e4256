//! What the benches share: finding and building the bundled plugins.

use std::path::Path;

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
