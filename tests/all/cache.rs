//! The compile cache is never trusted blindly: an entry that is cut short,
//! belongs to another component, or is not a plain file of ours is rebuilt,
//! never loaded; a component file that changed is hashed again, whatever
//! the cache remembers about it. A plugin the cache knows whole loads
//! without its compiled code, and makes it on its first call, under the
//! same checks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::{Plugin, PluginHost};
use toolhost::sandbox::CacheStatus;
use toolhost::tools::{CallContext, ToolRegistry};
use toolhost_tests::plugins::{plugin_dir, plugin_subset};

fn own_cache(dir: &Path) -> HostConfig {
    HostConfig {
        cache_dir: Some(dir.to_owned()),
        ..HostConfig::default()
    }
}

async fn load(cache: &Path, wasm: &Path) -> std::sync::Arc<Plugin> {
    PluginHost::new(own_cache(cache))
        .unwrap()
        .load_file(wasm)
        .await
        .unwrap()
}

/// The compiled-code entries in `cache`, by the plugin whose load made them.
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    found.sort();
    found
}

/// What `text_stats` of "one two three" answers through `plugin`.
async fn text_stats(
    plugin: &std::sync::Arc<Plugin>,
) -> Result<serde_json::Value, toolhost::tools::ToolError> {
    let registry = ToolRegistry::new();
    for t in plugin.tools() {
        registry.register(t).unwrap();
    }
    registry
        .call(
            "text_stats",
            json!({"text": "one two three"}),
            &CallContext::default(),
        )
        .await
        .output
}

/// `text_stats` answers through `plugin`: the code that runs is text's.
async fn counts_words(plugin: &std::sync::Arc<Plugin>) {
    assert_eq!(text_stats(plugin).await.unwrap()["words"], json!(3));
}

/// A cache holding text's entry (returned) after one compile.
async fn cached_text(cache: &Path, wasm: &Path) -> PathBuf {
    assert_eq!(
        load(cache, wasm).await.cache_status(),
        CacheStatus::Compiled
    );
    assert_eq!(load(cache, wasm).await.cache_status(), CacheStatus::Hit);
    let found = entries(cache);
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

#[tokio::test]
async fn a_truncated_entry_is_rebuilt_never_loaded() {
    let dir = plugin_subset(&["text"]);
    let wasm = dir.path().join("text.wasm");
    for cut in [1, 64, 4096, usize::MAX] {
        let cache = tempfile::tempdir().unwrap();
        let entry = cached_text(cache.path(), &wasm).await;
        let bytes = std::fs::read(&entry).unwrap();
        let keep = bytes.len().saturating_sub(cut);
        std::fs::write(&entry, &bytes[..keep]).unwrap();
        let plugin = load(cache.path(), &wasm).await;
        assert_eq!(plugin.cache_status(), CacheStatus::Rebuilt, "cut {cut}");
        counts_words(&plugin).await;
        // Written back whole.
        assert_eq!(
            load(cache.path(), &wasm).await.cache_status(),
            CacheStatus::Hit
        );
    }
}

#[tokio::test]
async fn a_grown_or_damaged_entry_is_rebuilt_never_loaded() {
    let dir = plugin_subset(&["text"]);
    let wasm = dir.path().join("text.wasm");
    let cache = tempfile::tempdir().unwrap();
    let entry = cached_text(cache.path(), &wasm).await;
    let whole = std::fs::read(&entry).unwrap();

    let mut grown = whole.clone();
    grown.extend_from_slice(&[0; 100]);
    let mut trailer_hit = whole.clone();
    let last = trailer_hit.len() - 20;
    trailer_hit[last] ^= 1;
    for bad in [grown, trailer_hit] {
        std::fs::write(&entry, &bad).unwrap();
        let plugin = load(cache.path(), &wasm).await;
        assert_eq!(plugin.cache_status(), CacheStatus::Rebuilt);
        counts_words(&plugin).await;
    }
}

#[tokio::test]
async fn another_components_entry_in_an_entrys_place_is_rebuilt_never_loaded() {
    let dir = plugin_subset(&["text", "calc"]);
    let (text, calc) = (dir.path().join("text.wasm"), dir.path().join("calc.wasm"));
    let cache = tempfile::tempdir().unwrap();
    let text_entry = cached_text(cache.path(), &text).await;
    load(cache.path(), &calc).await;
    let calc_entry = entries(cache.path())
        .into_iter()
        .find(|e| *e != text_entry)
        .unwrap();

    // A whole, valid entry, compiled for this engine, of the wrong component.
    std::fs::copy(&calc_entry, &text_entry).unwrap();
    let plugin = load(cache.path(), &text).await;
    assert_eq!(plugin.cache_status(), CacheStatus::Rebuilt);
    counts_words(&plugin).await;

    // The same, renamed into place (as the cache itself writes entries).
    let stray = cache.path().join("stray");
    std::fs::copy(&calc_entry, &stray).unwrap();
    std::fs::rename(&stray, &text_entry).unwrap();
    let plugin = load(cache.path(), &text).await;
    assert_eq!(plugin.cache_status(), CacheStatus::Rebuilt);
    counts_words(&plugin).await;
}

#[cfg(unix)]
#[tokio::test]
async fn an_entry_replaced_by_a_symlink_is_rebuilt_never_followed() {
    let dir = plugin_subset(&["text"]);
    let wasm = dir.path().join("text.wasm");
    let cache = tempfile::tempdir().unwrap();
    let entry = cached_text(cache.path(), &wasm).await;

    // A symlink to a valid entry for this very component, kept elsewhere:
    // still not ours to follow.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("entry.cwasm");
    std::fs::rename(&entry, &target).unwrap();
    std::os::unix::fs::symlink(&target, &entry).unwrap();
    let plugin = load(cache.path(), &wasm).await;
    assert_eq!(plugin.cache_status(), CacheStatus::Rebuilt);
    counts_words(&plugin).await;
    assert!(
        !std::fs::symlink_metadata(&entry).unwrap().is_symlink(),
        "the rebuilt entry replaced the link"
    );
}

#[tokio::test]
async fn a_loaded_plugin_keeps_its_code_when_its_entry_is_replaced() {
    let dir = plugin_subset(&["text", "calc"]);
    let (text, calc) = (dir.path().join("text.wasm"), dir.path().join("calc.wasm"));
    let cache = tempfile::tempdir().unwrap();
    let entry = cached_text(cache.path(), &text).await;
    let plugin = load(cache.path(), &text).await;
    assert_eq!(plugin.cache_status(), CacheStatus::Hit);

    // Entries are replaced by rename, never rewritten in place: the mapped
    // code stays the file it was mapped from, whatever takes its name.
    load(cache.path(), &calc).await;
    for other in entries(cache.path()).into_iter().filter(|e| *e != entry) {
        std::fs::copy(&other, cache.path().join("next")).unwrap();
    }
    std::fs::rename(cache.path().join("next"), &entry).unwrap();
    std::fs::remove_file(&entry).unwrap();
    for _ in 0..3 {
        counts_words(&plugin).await;
    }
}

#[tokio::test]
async fn a_changed_component_file_is_hashed_again_though_its_old_stamp_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("tool.wasm");
    std::fs::copy(plugin_dir().join("text.wasm"), &wasm).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let stamps = || {
        std::fs::read_dir(cache.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "stamp")
            })
            .count()
    };
    // A file is known by its stamp only once it has been still for the
    // settle time (a write in the same clock tick as a read would not
    // show): by default 2 s, so a file written just now is not yet.
    assert_eq!(
        load(cache.path(), &wasm).await.cache_status(),
        CacheStatus::Compiled
    );
    assert_eq!(stamps(), 0, "a file written just now is hashed again");
    // With times this file system keeps fine, none is needed.
    let load = async |cache: &Path, wasm: &Path| {
        PluginHost::new(own_cache(cache).cache_stamp_settle(Duration::ZERO))
            .unwrap()
            .load_file(wasm)
            .await
            .unwrap()
    };
    let first = load(cache.path(), &wasm).await;
    assert_eq!(first.cache_status(), CacheStatus::Hit);
    assert_eq!(stamps(), 1, "the settled file's digest is remembered");
    let second = load(cache.path(), &wasm).await;
    assert_eq!(second.cache_status(), CacheStatus::Hit);
    assert_eq!(second.digest(), first.digest());
    counts_words(&second).await;

    // Rewritten in place with other bytes (another component).
    std::fs::write(
        &wasm,
        std::fs::read(plugin_dir().join("calc.wasm")).unwrap(),
    )
    .unwrap();
    let changed = load(cache.path(), &wasm).await;
    assert_ne!(changed.digest(), first.digest());
    assert!(changed.tool_specs().iter().any(|t| t.name == "calc_eval"));

    // Replaced by rename with the first bytes again.
    let next = dir.path().join("next");
    std::fs::copy(plugin_dir().join("text.wasm"), &next).unwrap();
    std::fs::rename(&next, &wasm).unwrap();
    let back = load(cache.path(), &wasm).await;
    assert_eq!(back.digest(), first.digest());
    counts_words(&back).await;
}

#[tokio::test]
async fn a_known_plugin_loads_without_its_code_and_makes_it_on_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("tool.wasm");
    std::fs::copy(plugin_dir().join("text.wasm"), &wasm).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let load = async |wasm: &Path| {
        PluginHost::new(own_cache(cache.path()).cache_stamp_settle(Duration::ZERO))
            .unwrap()
            .load_file(wasm)
            .await
            .unwrap()
    };
    let first = load(&wasm).await;
    assert_eq!(first.cache_status(), CacheStatus::Compiled);
    assert!(first.code_loaded());

    // Known file, cached code, remembered tools: listed without the code.
    let known = load(&wasm).await;
    assert_eq!(known.cache_status(), CacheStatus::Hit);
    assert!(!known.code_loaded(), "a warm load maps no compiled code");
    assert!(known.tools_from_cache());
    assert_eq!(known.tool_specs(), first.tool_specs());
    assert_eq!(known.interface(), first.interface());
    counts_words(&known).await;
    assert!(known.code_loaded(), "the first call made it");

    // The entry gone after the load: the first call compiles the file.
    let known = load(&wasm).await;
    assert!(!known.code_loaded());
    for entry in entries(cache.path()) {
        std::fs::remove_file(entry).unwrap();
    }
    counts_words(&known).await;
    assert_eq!(entries(cache.path()).len(), 1, "written back");

    // Another component's entry in its place: not run; the file is.
    let calc = tempfile::tempdir().unwrap();
    let calc_wasm = calc.path().join("calc.wasm");
    std::fs::copy(plugin_dir().join("calc.wasm"), &calc_wasm).unwrap();
    let known = load(&wasm).await;
    assert!(!known.code_loaded());
    let text_entry = entries(cache.path()).remove(0);
    load(&calc_wasm).await;
    let calc_entry = entries(cache.path())
        .into_iter()
        .find(|e| *e != text_entry)
        .unwrap();
    std::fs::copy(&calc_entry, &text_entry).unwrap();
    counts_words(&known).await;

    // The entry gone and the file changed since the load: refused, never
    // the new component's code under the old component's tools.
    let known = load(&wasm).await;
    assert!(!known.code_loaded());
    std::fs::remove_file(&text_entry).unwrap();
    std::fs::copy(&calc_wasm, &wasm).unwrap();
    let refused = text_stats(&known).await.unwrap_err();
    assert_eq!(refused.kind, toolhost::tools::ToolErrorKind::PluginLoad);
    assert!(refused.message.contains("changed since"), "{refused}");
}
