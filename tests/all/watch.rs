//! Hot reload (`PluginHost::watch`): real plugin files added, replaced,
//! half-written and removed in a directory; the registry follows, and
//! tools from elsewhere in it are never touched.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::plugin::{HostConfig, PluginHost, PluginWatcher, ReloadError, WatchEvent};
use toolhost::tools::{CallContext, NativeTool, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin, plugin_dir, workspace_root};

/// Short, so the tests are quick; what it guards is the same.
const DEBOUNCE: Duration = Duration::from_millis(150);

fn host() -> PluginHost {
    PluginHost::new(
        HostConfig::default().cache_dir(workspace_root().join("target").join("test-cache")),
    )
    .expect("the sandbox starts")
}

/// A tool the watcher does not own: it must survive every reload.
fn native(name: &str) -> NativeTool {
    NativeTool::new(
        name,
        "Not a plugin.",
        json!({"type": "object"}),
        |_| async { Ok(json!("native")) },
    )
}

async fn next(watcher: &mut PluginWatcher) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(60), watcher.next())
        .await
        .expect("a change event within 60 s")
        .expect("the watcher runs")
}

/// Replace `dest` the way an installer should: write beside it, rename.
fn install(bytes: &[u8], dest: &Path) {
    let tmp = dest.with_extension("wasm.part");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dest).unwrap();
}

fn wasm(name: &str) -> Vec<u8> {
    std::fs::read(plugin_dir().join(format!("{name}.wasm"))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_replaced_and_removed_plugins_swap_only_their_own_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = host();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(native("native_echo")).unwrap();
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();

    // Added.
    copy_plugin("calc", dir.path());
    let WatchEvent::Loaded {
        replaced, added, ..
    } = next(&mut watcher).await
    else {
        panic!("calc did not load");
    };
    assert!(!replaced);
    assert_eq!(added, ["calc_eval"]);
    let cx = CallContext::default();
    let out = registry
        .call_value("calc_eval", json!({"expression": "6*7"}), &cx)
        .await
        .unwrap();
    assert_eq!(out["value"], 42.0, "{out}");

    // Replaced by a different component (its manifest stays).
    install(&wasm("text"), &dir.path().join("calc.wasm"));
    let event = next(&mut watcher).await;
    let WatchEvent::Loaded {
        replaced,
        added,
        removed,
        ..
    } = &event
    else {
        panic!("the new calc.wasm did not load: {event:?}");
    };
    assert!(replaced);
    assert!(added.contains(&"text_stats".to_owned()), "{added:?}");
    assert_eq!(removed, &["calc_eval"]);
    assert!(!registry.contains("calc_eval"));
    let out = registry
        .call_value("text_stats", json!({"text": "a b"}), &cx)
        .await
        .unwrap();
    assert_eq!(out["words"], 2, "{out}");

    // Removed.
    std::fs::remove_file(dir.path().join("calc.wasm")).unwrap();
    let WatchEvent::Removed { tools, .. } = next(&mut watcher).await else {
        panic!("no removal");
    };
    assert!(tools.contains(&"text_stats".to_owned()), "{tools:?}");
    assert!(!registry.contains("text_stats"));
    assert_eq!(
        registry.snapshot().keys().collect::<Vec<_>>(),
        ["native_echo"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_plugin_leaves_the_old_version_serving_until_it_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let host = host();
    let registry = Arc::new(host.load_dir(dir.path()).await.unwrap().registry().unwrap());
    // Adopts calc's tools, loaded before watching began.
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();
    let path = dir.path().join("calc.wasm");
    let text = wasm("text");

    // Written in place, and the writer stalls half-way.
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let event = next(&mut watcher).await;
    let WatchEvent::Failed {
        path: failed,
        error: ReloadError::Load(error),
    } = &event
    else {
        panic!("a truncated component loaded? {event:?}");
    };
    assert_eq!(failed, &path);
    assert!(error.to_string().contains("calc.wasm"), "{error}");
    let cx = CallContext::default();
    let out = registry
        .call_value("calc_eval", json!({"expression": "1+1"}), &cx)
        .await
        .expect("the old version still serves");
    assert_eq!(out["value"], 2.0, "{out}");

    // The writer finishes: the next change loads it.
    std::fs::write(&path, &text).unwrap();
    let event = next(&mut watcher).await;
    assert!(
        matches!(&event, WatchEvent::Loaded { replaced: true, removed, .. } if removed == &["calc_eval"]),
        "{event:?}"
    );
    assert!(registry.contains("text_stats") && !registry.contains("calc_eval"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_change_reloads_its_plugin_and_a_clash_keeps_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let host = host();
    let registry = Arc::new(host.load_dir(dir.path()).await.unwrap().registry().unwrap());
    registry.register(native("text_stats")).unwrap();
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();

    // A new manifest: the same component, now with a version.
    let manifest = dir.path().join("calc.toml");
    let mut toml = std::fs::read_to_string(&manifest).unwrap();
    toml.insert_str(0, "version = \"2.0.0\"\n");
    std::fs::write(&manifest, toml).unwrap();
    let event = next(&mut watcher).await;
    assert!(
        matches!(&event, WatchEvent::Loaded { replaced: true, added, removed, .. } if added.is_empty() && removed.is_empty()),
        "{event:?}"
    );
    let calc = registry.get("calc_eval").expect("calc_eval");
    assert_eq!(calc.version(), Some("2.0.0"));

    // A plugin whose tool name is taken by a tool from elsewhere: refused,
    // and the other tool is untouched.
    install(&wasm("text"), &dir.path().join("words.wasm"));
    let event = next(&mut watcher).await;
    let WatchEvent::Failed {
        error: ReloadError::Register { error, .. },
        ..
    } = &event
    else {
        panic!("a clashing plugin was not refused: {event:?}");
    };
    assert!(error.to_string().contains("text_stats"), "{error}");
    let out = registry
        .call_value("text_stats", json!({}), &CallContext::default())
        .await
        .unwrap();
    assert_eq!(out, json!("native"));
}
