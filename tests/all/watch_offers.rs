//! Hot reload of what a plugin offers besides tools (contract 0.3): its
//! resources and prompts come with its file, go when a version without
//! them replaces it or the file is removed, come back when it is put
//! back, and each change moves the registry's list-changed feeds.

use std::sync::Arc;
use std::time::Duration;

use toolhost::config::HostConfig;
use toolhost::plugin::{PluginHost, PluginWatcher, WatchEvent};
use toolhost::tools::{ResourceContents, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin_from, fixtures_dir, plugin_dir, workspace_root};

const DEBOUNCE: Duration = Duration::from_millis(150);

async fn next(watcher: &mut PluginWatcher) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(60), watcher.next())
        .await
        .expect("a change event within 60 s")
        .expect("the watcher runs")
}

/// Replace `dest` the way an installer should: write beside it, rename.
fn install(bytes: &[u8], dest: &std::path::Path) {
    let tmp = dest.with_extension("wasm.part");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dest).unwrap();
}

fn offered(registry: &ToolRegistry) -> (Vec<String>, Vec<String>) {
    let offers = registry.offers();
    let uris = offers.resources().into_iter().map(|e| e.spec.uri).collect();
    let prompts = offers.prompts().into_iter().map(|e| e.spec.name).collect();
    (uris, prompts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_resources_and_prompts_come_and_go_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let host = PluginHost::new(
        HostConfig::default().cache_dir(workspace_root().join("target").join("test-cache")),
    )
    .expect("the sandbox starts");
    let registry = Arc::new(ToolRegistry::new());
    let mut resources_changed = registry.offers().resource_changes();
    let mut prompts_changed = registry.offers().prompt_changes();
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();
    let file = dir.path().join("mcp_conformance.wasm");
    let with_offers = std::fs::read(fixtures_dir().join("mcp_conformance.wasm")).unwrap();

    // Added: its resources and prompts are listed and read.
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Loaded { .. }
    ));
    let (uris, prompts) = offered(&registry);
    assert!(uris.contains(&"test://static-text".to_owned()), "{uris:?}");
    assert!(
        prompts.contains(&"test_simple_prompt".to_owned()),
        "{prompts:?}"
    );
    assert!(resources_changed.has_changed().unwrap());
    assert!(prompts_changed.has_changed().unwrap());
    resources_changed.mark_unchanged();
    prompts_changed.mark_unchanged();
    let parts = registry.offers().read("test://static-text").await.unwrap();
    assert!(matches!(&parts[0].contents, ResourceContents::Text(t) if !t.is_empty()));

    // Replaced by a plugin without offers: they leave with the old version.
    install(
        &std::fs::read(plugin_dir().join("calc.wasm")).unwrap(),
        &file,
    );
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Loaded { replaced: true, .. }
    ));
    assert_eq!(offered(&registry), (Vec::new(), Vec::new()));
    assert!(resources_changed.has_changed().unwrap());
    assert!(prompts_changed.has_changed().unwrap());
    assert!(registry.offers().read("test://static-text").await.is_err());

    // Put back: they come back.
    install(&with_offers, &file);
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Loaded { .. }
    ));
    assert!(
        offered(&registry)
            .0
            .contains(&"test://static-text".to_owned())
    );
    registry.offers().read("test://static-text").await.unwrap();

    // Removed: gone again.
    std::fs::remove_file(&file).unwrap();
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Removed { .. }
    ));
    assert_eq!(offered(&registry), (Vec::new(), Vec::new()));
}
