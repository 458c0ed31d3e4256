//! Hot reload (`PluginHost::watch`): real plugin files added, replaced,
//! half-written and removed in a directory; the registry follows, and
//! tools from elsewhere in it are never touched. Only a change of content
//! reloads (issue 21): reads, `touch` and special files do not, and a name
//! two sources offer goes to the one that takes precedence, whatever the
//! order of changes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::mcp::{McpDecl, McpServer};
use toolhost::plugin::{PluginHost, PluginWatcher, ReloadError, WatchEvent};
use toolhost::tools::{CallContext, NativeTool, ToolOrigin, ToolRegistry};
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::{copy_plugin, plugin_dir, toolhost_bin, workspace_root};
use toolhost_tests::wait::until;

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
        .call("calc_eval", json!({"expression": "6*7"}), &cx)
        .await
        .output
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
        .call("text_stats", json!({"text": "a b"}), &cx)
        .await
        .output
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
        .call("calc_eval", json!({"expression": "1+1"}), &cx)
        .await
        .output
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
        .call("text_stats", json!({}), &CallContext::default())
        .await
        .output
        .unwrap();
    assert_eq!(out, json!("native"));
}

/// `dest` replaced by `make(tmp)` in one rename, as an attacker (or a
/// careless script) would swap in a special file.
fn swap_in(dest: &Path, make: impl FnOnce(&Path)) {
    let tmp = dest.with_extension("swap");
    make(&tmp);
    std::fs::rename(&tmp, dest).unwrap();
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
}

/// The next event is `file` loading: nothing else happened first.
async fn next_is_loaded(watcher: &mut PluginWatcher, file: &str) {
    let event = next(watcher).await;
    let WatchEvent::Loaded { plugin, .. } = &event else {
        panic!("expected {file} to load first, got {event:?}");
    };
    assert_eq!(plugin.path().file_name().unwrap(), file, "{event:?}");
}

async fn increment(registry: &ToolRegistry, cx: &CallContext) -> i64 {
    let out = registry
        .call("scratchpad_increment", json!({}), cx)
        .await
        .output
        .unwrap();
    out["value"].as_i64().unwrap_or_else(|| panic!("{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_or_a_link_to_a_device_over_a_plugin_leaves_the_old_version_serving() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let host = host();
    let registry = Arc::new(host.load_dir(dir.path()).await.unwrap().registry().unwrap());
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();
    let path = dir.path().join("calc.wasm");
    let cx = CallContext::default();
    let calc_serves = || async {
        let out = registry
            .call("calc_eval", json!({"expression": "6*7"}), &cx)
            .await
            .output
            .expect("the old calc still serves");
        assert_eq!(out["value"], 42.0, "{out}");
    };
    let original = std::fs::read(&path).unwrap();

    for special in ["fifo", "/dev/zero", "/dev/null"] {
        swap_in(&path, |tmp| match special {
            "fifo" => mkfifo(tmp),
            device => std::os::unix::fs::symlink(device, tmp).unwrap(),
        });
        let event = next(&mut watcher).await;
        let WatchEvent::Failed {
            path: failed,
            error: ReloadError::Load(error),
        } = &event
        else {
            panic!("{special} over calc.wasm was not refused: {event:?}");
        };
        assert_eq!(failed, &path);
        assert!(
            error.to_string().contains("not a regular file"),
            "{special}: {error}"
        );
        calc_serves().await;
    }

    // The same bytes back: the version serving is that one already.
    install(&original, &path);
    copy_plugin("text", dir.path());
    next_is_loaded(&mut watcher, "text.wasm").await;
    calc_serves().await;
    // A FIFO for a manifest is refused too, and calc serves on.
    swap_in(&dir.path().join("calc.toml"), mkfifo);
    let event = next(&mut watcher).await;
    assert!(
        matches!(&event, WatchEvent::Failed { error: ReloadError::Load(e), .. } if e.to_string().contains("not a regular file")),
        "{event:?}"
    );
    calc_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_touching_or_loading_the_files_again_reloads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("scratchpad", dir.path());
    // Refused at startup: it must not be refused (and logged) again on
    // every read.
    std::fs::write(dir.path().join("broken.wasm"), b"\0asm not really").unwrap();
    let host = host();
    let report = host.load_dir(dir.path()).await.unwrap();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let registry = Arc::new(report.registry().unwrap());
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();
    let cx = CallContext::in_session(toolhost::tools::SessionId::new("counting"));
    assert_eq!(increment(&registry, &cx).await, 1);
    assert_eq!(increment(&registry, &cx).await, 2);

    for file in ["scratchpad.wasm", "scratchpad.toml", "broken.wasm"] {
        let path = dir.path().join(file);
        assert!(path.is_file(), "no {file}");
        // `cat`.
        drop(std::fs::read(&path).unwrap());
        // `touch`: opened for writing, closed, times changed.
        let opened = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        opened
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
            .unwrap();
        drop(opened);
    }
    // A second host loading the same directory (a second `serve` starting).
    let second = host.load_dir(dir.path()).await.unwrap();
    assert_eq!(second.plugins.len(), 1);
    tokio::time::sleep(DEBOUNCE * 2).await;

    // The next event is a real change, not a reload of what was read.
    copy_plugin("calc", dir.path());
    next_is_loaded(&mut watcher, "calc.wasm").await;
    assert_eq!(
        increment(&registry, &cx).await,
        3,
        "the session was restarted"
    );
    // The same bytes written again are no change either.
    let path = dir.path().join("scratchpad.wasm");
    install(&std::fs::read(&path).unwrap(), &path);
    copy_plugin("text", dir.path());
    next_is_loaded(&mut watcher, "text.wasm").await;
    assert_eq!(increment(&registry, &cx).await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_plugins_offering_one_name_the_first_file_owns_it_whatever_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let calc = wasm("calc");
    std::fs::write(dir.path().join("a.wasm"), &calc).unwrap();
    std::fs::write(dir.path().join("b.wasm"), &calc).unwrap();
    let host = host();
    let report = host.load_dir(dir.path()).await.unwrap();
    assert_eq!(report.plugins.len(), 1);
    let registry = Arc::new(report.registry().unwrap());
    let owner = || match registry.get("calc_eval").map(|t| t.origin()) {
        Some(ToolOrigin::Plugin { plugin, .. }) => plugin,
        other => panic!("calc_eval is not a plugin's: {other:?}"),
    };
    assert_eq!(owner(), "a");
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();

    // a goes: b, refused at startup for the name, takes it.
    let a = dir.path().join("a.wasm");
    std::fs::remove_file(&a).unwrap();
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Removed { .. }
    ));
    next_is_loaded(&mut watcher, "b.wasm").await;
    assert_eq!(owner(), "b");

    // a comes back: it takes the name back, and b is out of service whole.
    install(&calc, &a);
    let event = next(&mut watcher).await;
    let WatchEvent::Loaded { displaced, .. } = &event else {
        panic!("a did not load: {event:?}");
    };
    assert_eq!(displaced.len(), 1, "{displaced:?}");
    assert!(
        displaced[0].to_string().contains("b.wasm"),
        "{}",
        displaced[0]
    );
    let event = next(&mut watcher).await;
    assert!(
        matches!(&event, WatchEvent::Failed { path, error: ReloadError::Register { .. } } if path.ends_with("b.wasm")),
        "{event:?}"
    );
    assert_eq!(owner(), "a");
    let out = registry
        .call(
            "calc_eval",
            json!({"expression": "2+2"}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(out["value"], 4.0, "{out}");
}

/// What a server on the other end of a pipe does takes its own time.
const SERVER_PATIENCE: Duration = Duration::from_secs(60);

/// Where `name` comes from now.
fn origin(registry: &ToolRegistry, name: &str) -> Option<ToolOrigin> {
    registry.get(name).map(|tool| tool.origin())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_put_back_takes_its_names_back_from_an_mcp_server_that_listed_them_meanwhile() {
    // The MCP server: `toolhost serve` on a directory of its own, serving
    // calc_eval too (no prefix), and telling its clients when it changes.
    let served = tempfile::tempdir().unwrap();
    copy_plugin("calc", served.path());
    let decl: McpDecl = toml::from_str(&format!(
        "name = \"twin\"\ncommand = {}\nargs = [\"serve\", \"--plugins\", {}, \"--cache-dir\", {}]\nprefix = \"\"\n",
        json!(toolhost_bin()),
        json!(served.path()),
        json!(test_cache_dir()),
    ))
    .unwrap();
    let server = McpServer::new(decl, &HostConfig::default().mcp_rules()).unwrap();
    assert!(server.start().await, "{:?}", server.summary());

    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let host = host();
    let registry = Arc::new(host.load_dir(dir.path()).await.unwrap().registry().unwrap());
    let refused = server.attach(&registry);
    assert!(
        refused.iter().any(|e| e.tool_name() == "calc_eval"),
        "{refused:?}"
    );
    let plugin = || {
        matches!(
            origin(&registry, "calc_eval"),
            Some(ToolOrigin::Plugin { .. })
        )
    };
    let mcp = || matches!(origin(&registry, "calc_eval"), Some(ToolOrigin::Mcp { .. }));
    assert!(plugin());
    let mut watcher = host
        .watch(dir.path(), Arc::clone(&registry), DEBOUNCE)
        .unwrap();

    // The plugin goes, and the server re-lists meanwhile: the free name
    // is the server's.
    let path = dir.path().join("calc.wasm");
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        next(&mut watcher).await,
        WatchEvent::Removed { .. }
    ));
    copy_plugin("text", served.path());
    until("the server's calc_eval", SERVER_PATIENCE, mcp).await;

    // The plugin comes back: it takes its name back, whatever happened
    // meanwhile, and says whose tool it displaced.
    install(&wasm("calc"), &path);
    let event = next(&mut watcher).await;
    let WatchEvent::Loaded { displaced, .. } = &event else {
        panic!("calc did not come back: {event:?}");
    };
    assert!(
        displaced
            .iter()
            .any(|e| e.tool_name() == "calc_eval" && e.to_string().contains("MCP server `twin`")),
        "{displaced:?}"
    );
    assert!(plugin());
    let out = registry
        .call(
            "calc_eval",
            json!({"expression": "6*7"}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(out["value"], 42.0, "{out}");

    // The server re-lists again: its calc_eval is refused again.
    copy_plugin("scratchpad", served.path());
    until("the server's scratchpad tools", SERVER_PATIENCE, || {
        registry.contains("scratchpad_increment")
    })
    .await;
    assert!(plugin());
}
