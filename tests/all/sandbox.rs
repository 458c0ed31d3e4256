//! The sandbox through the library: plugins load, calls run under their
//! limits, hostile plugins end with the right error kind and the host keeps
//! serving, state stays in its session, the compile cache is never trusted
//! blindly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::environ::Environment;
use toolhost::plugin::{LoadReport, PluginError, PluginHost};
use toolhost::sandbox::{CacheStatus, MemoryInit};
use toolhost::tools::{CallContext, ExecOverrides, SessionId, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{
    copy_plugin, copy_plugin_from, hostile_dir, plugin_subset, workspace_root,
};

/// A host whose cache is shared by all tests (so big components compile once).
fn host_with(mut config: HostConfig) -> PluginHost {
    config.cache_dir = Some(workspace_root().join("target").join("test-cache"));
    PluginHost::new(config).expect("the sandbox starts")
}

fn host() -> PluginHost {
    host_with(HostConfig::default())
}

async fn load(host: &PluginHost, dir: &Path) -> LoadReport {
    host.load_dir(dir).await.expect("the directory is readable")
}

async fn registry_of(names: &[&str]) -> (tempfile::TempDir, ToolRegistry) {
    let dir = plugin_subset(names);
    let report = load(&host(), dir.path()).await;
    assert!(
        report.errors.is_empty(),
        "unexpected load errors: {:?}",
        report.errors
    );
    (dir, report.registry().expect("the loaded tools register"))
}

async fn call(
    registry: &ToolRegistry,
    tool: &str,
    input: Value,
) -> Result<Value, toolhost::tools::ToolError> {
    registry
        .call(tool, input, &CallContext::default())
        .await
        .output
}

async fn hostile_registry() -> (tempfile::TempDir, LoadReport) {
    // The hostile fixtures plus a well-behaved plugin, to show the host keeps
    // serving good calls after each bad one.
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(hostile_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wasm") {
            let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
            copy_plugin_from(hostile_dir(), &name, dir.path());
        }
    }
    copy_plugin("calc", dir.path());
    // hostile_snoop is granted its own data directory, and nothing else.
    let mut config = HostConfig::default();
    config.allow.dirs.push(dir.path().to_owned());
    let host = host_with(config);
    let report = load(&host, dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, report)
}

#[tokio::test]
async fn calculator_answers_and_reports_bad_input_as_invalid_input() {
    let (_dir, registry) = registry_of(&["calc"]).await;
    let out = call(
        &registry,
        "calc_eval",
        json!({"expression": "2 * (3 + 4) ^ 2"}),
    )
    .await;
    assert_eq!(out.unwrap(), json!({"value": 98.0}));

    let e = call(&registry, "calc_eval", json!({"expression": "1 / 0"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);
    assert!(e.message.contains("division by zero"), "{}", e.message);

    // Schema validation happens in the host, before the plugin runs.
    let e = call(&registry, "calc_eval", json!({"expr": "1"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);
    assert!(e.message.contains("expression"), "{}", e.message);

    let e = registry
        .call("calc_eval", "{not json", &CallContext::default())
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);

    let e = call(&registry, "no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::UnknownTool);
}

#[tokio::test]
async fn every_hostile_plugin_ends_with_its_kind_and_the_host_keeps_serving() {
    let (_dir, report) = hostile_registry().await;
    let registry = report.registry().expect("the loaded tools register");
    let cases: &[(&str, Value, ToolErrorKind)] = &[
        ("hostile_spin", json!({}), ToolErrorKind::Timeout),
        ("hostile_sleep", json!({}), ToolErrorKind::Timeout),
        ("hostile_burn", json!({}), ToolErrorKind::OutOfFuel),
        ("hostile_membomb", json!({}), ToolErrorKind::MemoryLimit),
        ("hostile_recurse", json!({}), ToolErrorKind::Trap),
        ("hostile_panic", json!({}), ToolErrorKind::Trap),
        ("hostile_abort", json!({}), ToolErrorKind::Trap),
        ("hostile_exit", json!({}), ToolErrorKind::Trap),
        ("hostile_bigout", json!({}), ToolErrorKind::OutputTooLarge),
        ("hostile_bad_json", json!({}), ToolErrorKind::InvalidOutput),
        (
            "hostile_read",
            json!({"path": "/etc/passwd"}),
            ToolErrorKind::PermissionDenied,
        ),
        (
            "hostile_read",
            json!({"path": "/data/../../../../etc/passwd"}),
            ToolErrorKind::PermissionDenied,
        ),
        (
            "hostile_read",
            json!({"path": "../allowed.txt"}),
            ToolErrorKind::PermissionDenied,
        ),
        (
            "hostile_write",
            json!({"path": "/data/new.txt"}),
            ToolErrorKind::PermissionDenied,
        ),
    ];
    for (tool, input, kind) in cases {
        let e = call(&registry, tool, input.clone())
            .await
            .expect_err(&format!("{tool} must fail"));
        assert_eq!(e.kind, *kind, "{tool}({input}): {}", e.message);
        // And the host still serves a good call right after.
        let ok = call(&registry, "calc_eval", json!({"expression": "1 + 1"})).await;
        assert_eq!(ok.unwrap(), json!({"value": 2.0}), "after {tool}");
    }
}

#[tokio::test]
async fn a_panic_message_reaches_the_error() {
    let (_dir, report) = hostile_registry().await;
    let e = call(
        &report.registry().expect("the loaded tools register"),
        "hostile_panic",
        json!({}),
    )
    .await
    .unwrap_err();
    assert!(e.message.contains("panicking on purpose"), "{}", e.message);
    // Where, and no hint that cannot reach a plugin.
    assert!(
        e.message.contains("panicked at ") && e.message.contains("src/lib.rs:"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("RUST_BACKTRACE"), "{}", e.message);
}

#[tokio::test]
async fn the_granted_directory_is_readable_and_nothing_else_is() {
    let (_dir, report) = hostile_registry().await;
    let registry = report.registry().expect("the loaded tools register");
    let out = call(
        &registry,
        "hostile_read",
        json!({"path": "/data/allowed.txt"}),
    )
    .await
    .unwrap();
    assert!(out.to_string().contains("allowed"), "{out}");

    // The environment is empty unless granted: not even HOME leaks in.
    let seen = call(&registry, "hostile_env", json!({"key": "HOME"}))
        .await
        .unwrap();
    assert_eq!(seen["value"], Value::Null, "{seen}");
    assert_eq!(seen["visible"], json!([]), "{seen}");
}

#[tokio::test]
async fn a_granted_environment_variable_is_visible_only_when_the_operator_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_snoop", dir.path());
    let manifest = dir.path().join("hostile_snoop.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text = format!("[permissions]\nenv = [\"PATH\"]\n{}", text);
    std::fs::write(&manifest, text).unwrap();

    // Not allowed by the operator: refused at load, with the reason.
    let report = load(&host(), dir.path()).await;
    assert!(report.plugins.is_empty());
    let message = report.errors[0].to_string();
    assert!(
        matches!(report.errors[0], PluginError::NotAllowed { .. }),
        "{message}"
    );
    assert!(message.contains("PATH"), "{message}");

    // Allowed, but the program gave the host no values: the library never
    // reads the process environment, so the variable is simply absent.
    let mut config = HostConfig::default();
    config.allow.env.push("PATH".into());
    config.allow.dirs.push(dir.path().to_owned());
    let report = load(&host_with(config.clone()), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let seen = call(
        &report.registry().expect("the loaded tools register"),
        "hostile_env",
        json!({"key": "PATH"}),
    )
    .await
    .unwrap();
    assert_eq!(seen["value"], serde_json::Value::Null, "{seen}");

    // Allowed, with the program's environment handed in: the guest sees
    // exactly that variable, with its value.
    let config = config.environment(Environment::from_vars(std::env::vars()));
    let report = load(&host_with(config), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let seen = call(
        &report.registry().expect("the loaded tools register"),
        "hostile_env",
        json!({"key": "PATH"}),
    )
    .await
    .unwrap();
    assert_eq!(seen["value"], json!(std::env::var("PATH").unwrap()));
    assert_eq!(seen["visible"], json!(["PATH"]));
}

#[tokio::test]
async fn directory_grants_outside_the_allowed_roots_are_refused() {
    let dir = plugin_subset(&["files"]);
    // HostConfig::default() allows no directory at all.
    let report = load(&host(), dir.path()).await;
    assert_eq!(report.plugins.len(), 0);
    let message = report.errors[0].to_string();
    assert!(message.contains("read-only access to"), "{message}");
    assert!(message.contains("allow.dirs"), "{message}");

    let mut config = HostConfig::default();
    config.allow.dirs.push(dir.path().to_owned());
    let report = load(&host_with(config), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let out = call(
        &report.registry().expect("the loaded tools register"),
        "files_read",
        json!({"path": "hello.txt"}),
    )
    .await
    .unwrap();
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("Hello from the files plugin")
    );
}

#[tokio::test]
async fn a_manifest_asking_for_more_than_the_ceiling_is_refused_not_trimmed() {
    let dir = plugin_subset(&["calc"]);
    std::fs::write(dir.path().join("calc.toml"), "[limits]\nmemory_mb = 4096\n").unwrap();
    let report = load(&host(), dir.path()).await;
    let message = report
        .errors
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        message.contains("memory_mb") && message.contains("4096") && message.contains("1024"),
        "{message}"
    );

    // A raised ceiling lets it load with exactly what it asked for.
    let mut config = HostConfig::default();
    config.limits.max.memory_mb = Some(4096);
    let report = load(&host_with(config), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.plugins[0].limits().memory_bytes, 4096 << 20);
}

#[tokio::test]
async fn broken_plugins_are_reported_by_file_and_the_rest_still_load() {
    let dir = plugin_subset(&["calc", "text"]);
    let p = dir.path();
    std::fs::write(p.join("garbage.wasm"), b"this is not wasm").unwrap();
    // A valid core module, but not a component.
    std::fs::write(p.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    // A real component with a manifest that is not valid TOML.
    std::fs::copy(p.join("calc.wasm"), p.join("badmanifest.wasm")).unwrap();
    std::fs::write(p.join("badmanifest.toml"), "stateful = maybe").unwrap();
    // A manifest with an unknown key is an error too, not silently ignored.
    std::fs::copy(p.join("calc.wasm"), p.join("typo.wasm")).unwrap();
    std::fs::write(p.join("typo.toml"), "[limits]\nmemory_gb = 1\n").unwrap();

    let report = load(&host(), p).await;
    let loaded: Vec<&str> = report.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(loaded, ["calc", "text"]);
    let mut failed: Vec<String> = report
        .errors
        .iter()
        .map(|e| e.path().file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        ["badmanifest.toml", "core.wasm", "garbage.wasm", "typo.toml"]
    );
    let registry = report.registry().expect("the loaded tools register");
    let out = call(&registry, "text_stats", json!({"text": "two words"}))
        .await
        .unwrap();
    assert_eq!(out["words"], json!(2), "{out}");
}

#[tokio::test]
async fn two_plugins_with_the_same_tool_name_is_an_error_naming_both() {
    let dir = plugin_subset(&["calc"]);
    std::fs::copy(
        dir.path().join("calc.wasm"),
        dir.path().join("calc_copy.wasm"),
    )
    .unwrap();
    let report = load(&host(), dir.path()).await;
    assert_eq!(report.plugins.len(), 1);
    let message = report.errors[0].to_string();
    assert!(matches!(
        report.errors[0],
        PluginError::DuplicateTool { .. }
    ));
    assert!(
        message.contains("calc.wasm")
            && message.contains("calc_copy.wasm")
            && message.contains("calc_eval"),
        "{message}"
    );
}

#[tokio::test]
async fn stateful_plugins_keep_one_instance_per_session_and_never_share_it() {
    let (_dir, registry) = registry_of(&["scratchpad"]).await;
    let a = CallContext::in_session(SessionId::new("a"));
    let b = CallContext::in_session(SessionId::new("b"));
    let inc = |cx: CallContext| {
        let registry = &registry;
        async move {
            registry
                .call("scratchpad_increment", json!({}), &cx)
                .await
                .output
                .unwrap()["value"]
                .clone()
        }
    };
    assert_eq!(inc(a.clone()).await, json!(1));
    assert_eq!(inc(a.clone()).await, json!(2));
    assert_eq!(
        inc(b.clone()).await,
        json!(1),
        "session b must not see a's state"
    );
    assert_eq!(inc(a.clone()).await, json!(3));

    // Without a session every call is a fresh instance: nothing leaks.
    assert_eq!(inc(CallContext::default()).await, json!(1));
    assert_eq!(inc(CallContext::default()).await, json!(1));

    // Ending the session drops its instance.
    registry.end_session(&SessionId::new("a"));
    assert_eq!(inc(a.clone()).await, json!(1));
}

#[tokio::test]
async fn a_stateful_instance_is_dropped_after_the_idle_ttl() {
    let dir = plugin_subset(&["scratchpad"]);
    let manifest = dir.path().join("scratchpad.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("idle_ttl_secs = 600", "idle_ttl_secs = 0");
    std::fs::write(&manifest, text).unwrap();
    let report = load(&host(), dir.path()).await;
    let plugin = Arc::clone(&report.plugins[0]);
    let registry = report.registry().expect("the loaded tools register");
    let a = CallContext::in_session(SessionId::new("a"));
    registry
        .call("scratchpad_increment", json!({}), &a)
        .await
        .output
        .unwrap();
    assert_eq!(plugin.live_sessions(), 1);
    // Any later call sweeps idle sessions (here: `a`, idle for > 0 s).
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let b = CallContext::in_session(SessionId::new("b"));
    registry
        .call("scratchpad_increment", json!({}), &b)
        .await
        .output
        .unwrap();
    assert_eq!(plugin.live_sessions(), 1, "a was swept, b is live");
    let out = registry
        .call("scratchpad_increment", json!({}), &a)
        .await
        .output
        .unwrap();
    assert_eq!(
        out["value"],
        json!(1),
        "a's state was dropped with its instance"
    );
}

#[tokio::test]
async fn a_tool_error_in_a_stateful_session_keeps_its_state() {
    let (_dir, registry) = registry_of(&["scratchpad"]).await;
    let a = CallContext::in_session(SessionId::new("a"));
    registry
        .call("scratchpad_increment", json!({}), &a)
        .await
        .output
        .unwrap();
    // A tool-level error keeps the instance (and its state).
    let e = registry
        .call(
            "scratchpad_put",
            json!({"key": "k", "value": "x".repeat(5000)}),
            &a,
        )
        .await
        .output
        .unwrap_err();
    assert_ne!(e.kind, ToolErrorKind::Trap, "{e}");
    let out = registry
        .call("scratchpad_increment", json!({}), &a)
        .await
        .output
        .unwrap();
    assert_eq!(out["value"], json!(2));
}

/// Wait until `plugin` has at least `n` spare instances (they are made in
/// the background), or fail after a generous while.
async fn spares_reach(plugin: &toolhost::plugin::Plugin, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while plugin.spare_instances() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "expected {n} spare instances, have {}",
            plugin.spare_instances()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spare_instances_serve_one_call_each_and_survive_hostile_calls() {
    let (_dir, report) = hostile_registry().await;
    let scratchpad_dir = plugin_subset(&["scratchpad"]);
    let scratchpad = host()
        .load_file(&scratchpad_dir.path().join("scratchpad.wasm"))
        .await
        .unwrap();
    // None are made before the first call: loading a directory costs no
    // instances for plugins nobody calls.
    assert_eq!(scratchpad.spare_instances(), 0);
    let registry = ToolRegistry::new();
    for tool in scratchpad.tools() {
        registry.register(tool).unwrap();
    }
    for round in 0..20 {
        // Without a session each call gets a never-used instance, whether it
        // was made ahead of time or not: the counter always starts at 0.
        let out = call(&registry, "scratchpad_increment", json!({}))
            .await
            .unwrap();
        assert_eq!(out["value"], json!(1), "round {round}");
        // The pool is refilled when it runs dry, so one is always ready
        // once calls have started.
        if round % 4 == 0 {
            spares_reach(&scratchpad, 1).await;
        }
    }
    // The first call found none and had the pool filled to the target.
    assert!(scratchpad.spare_instances() <= 2);
    spares_reach(&scratchpad, 1).await;

    // A guest that traps, panics or runs out of fuel on a spare instance
    // gets its error kind; the next call still gets a working instance.
    let hostile = report.registry().expect("the loaded tools register");
    let crash = report
        .plugins
        .iter()
        .find(|p| p.name() == "hostile_crash")
        .unwrap();
    for _ in 0..3 {
        let e = call(&hostile, "hostile_panic", json!({}))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::Trap, "{e}");
        spares_reach(crash, 1).await;
    }
    let e = call(&hostile, "hostile_burn", json!({})).await.unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::OutOfFuel, "{e}");
    let out = call(&hostile, "calc_eval", json!({"expression": "1 + 2"}))
        .await
        .unwrap();
    assert_eq!(out["value"], json!(3.0));
}

#[tokio::test]
async fn with_spare_instances_off_none_are_made() {
    let dir = plugin_subset(&["text"]);
    let report = load(
        &host_with(HostConfig {
            spare_instances: 0,
            ..HostConfig::default()
        }),
        dir.path(),
    )
    .await;
    let registry = report.registry().expect("the loaded tools register");
    for _ in 0..3 {
        call(&registry, "text_stats", json!({"text": "a b"}))
            .await
            .unwrap();
    }
    tokio::task::yield_now().await;
    assert_eq!(report.plugins[0].spare_instances(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_memory_copied_at_instantiation_calls_stay_isolated() {
    let dir = plugin_subset(&["scratchpad", "text"]);
    let host = host_with(HostConfig {
        memory_init: MemoryInit::Copy,
        ..HostConfig::default()
    });
    let report = load(&host, dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report.registry().expect("the loaded tools register");
    // Each stateless call starts from the component's own initial memory,
    // on spares and inline instances alike: the counter is always 1.
    for round in 0..10 {
        let out = call(&registry, "scratchpad_increment", json!({}))
            .await
            .unwrap();
        assert_eq!(out["value"], json!(1), "round {round}");
        let out = call(&registry, "text_stats", json!({"text": "a b c"}))
            .await
            .unwrap();
        assert_eq!(out["words"], json!(3));
    }
    // A session keeps its own instance and state.
    let cx = CallContext::in_session(SessionId::new("copy"));
    for expected in 1..=3 {
        let out = registry
            .call("scratchpad_increment", json!({}), &cx)
            .await
            .output
            .unwrap();
        assert_eq!(out["value"], json!(expected));
    }
    // Limits hold as before.
    let hostile = load(&host, hostile_dir())
        .await
        .registry()
        .expect("the loaded tools register");
    let e = call(&hostile, "hostile_membomb", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::MemoryLimit, "{e}");
}

#[tokio::test]
async fn many_concurrent_calls_all_complete_correctly() {
    let (_dir, registry) = registry_of(&["calc", "text"]).await;
    let registry = Arc::new(registry);
    let mut tasks = Vec::new();
    for i in 0..64 {
        let registry = Arc::clone(&registry);
        tasks.push(tokio::spawn(async move {
            let out = registry
                .call(
                    "calc_eval",
                    json!({"expression": format!("{i} * 2")}),
                    &CallContext::default(),
                )
                .await
                .output
                .unwrap();
            assert_eq!(out["value"], json!((i * 2) as f64));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// A host config with a cache directory of the test's own.
fn own_cache(dir: &Path) -> HostConfig {
    HostConfig {
        cache_dir: Some(dir.to_owned()),
        ..HostConfig::default()
    }
}

#[tokio::test]
async fn the_compile_cache_is_used_and_a_corrupt_entry_is_rebuilt() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_subset(&["text"]);
    let config = own_cache(cache.path());
    let new_host = || PluginHost::new(config.clone()).unwrap();
    let wasm = dir.path().join("text.wasm");

    // Each plugin is dropped before its entry is damaged: a loaded plugin's
    // code is mapped from the entry, which the cache only ever replaces by
    // rename (an entry cut short in place under a live mapping is SIGBUS;
    // see docs/security.md).
    let first = new_host().load_file(&wasm).await.unwrap();
    assert_eq!(first.cache_status(), CacheStatus::Compiled);
    drop(first);
    let second = new_host().load_file(&wasm).await.unwrap();
    assert_eq!(second.cache_status(), CacheStatus::Hit);
    drop(second);

    let entries: Vec<PathBuf> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(entries.len(), 1);
    // A flipped bit in the trailer that names the entry's length and
    // component (tests/all/cache.rs has the other ways an entry goes bad).
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let near_end = bytes.len() - 30;
    bytes[near_end] ^= 0xff;
    std::fs::write(&entries[0], &bytes).unwrap();

    let third = new_host().load_file(&wasm).await.unwrap();
    assert_eq!(third.cache_status(), CacheStatus::Rebuilt);
    let registry = {
        let r = ToolRegistry::new();
        for t in third.tools() {
            r.register(t).unwrap();
        }
        r
    };
    let out = call(&registry, "text_stats", json!({"text": "a b c"}))
        .await
        .unwrap();
    assert_eq!(out["words"], json!(3));
    let fourth = new_host().load_file(&wasm).await.unwrap();
    assert_eq!(
        fourth.cache_status(),
        CacheStatus::Hit,
        "the rebuilt entry was written back"
    );
    drop(fourth);

    // Truncated to nothing: also rebuilt, never trusted.
    std::fs::write(&entries[0], b"").unwrap();
    assert_eq!(
        new_host().load_file(&wasm).await.unwrap().cache_status(),
        CacheStatus::Rebuilt
    );
}

#[tokio::test]
async fn the_tool_list_is_remembered_per_manifest_and_a_damaged_one_is_asked_again() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_subset(&["text"]);
    let config = own_cache(cache.path());
    let wasm = dir.path().join("text.wasm");
    let load = || async {
        PluginHost::new(config.clone())
            .unwrap()
            .load_file(&wasm)
            .await
            .unwrap()
    };
    let notes = || -> Vec<PathBuf> {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "tools"))
            .collect()
    };

    let first = load().await;
    assert!(!first.tools_from_cache(), "nothing to remember yet");
    assert_eq!(notes().len(), 1, "the answer is kept beside the entry");
    let second = load().await;
    assert!(second.tools_from_cache());
    assert_eq!(second.tool_specs(), first.tool_specs());

    // What `describe` sees changed (a config value): ask it again.
    let manifest = dir.path().join("text.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap_or_default();
    text.push_str("\n[config]\nnote = \"changed\"\n");
    std::fs::write(&manifest, text).unwrap();
    let third = load().await;
    assert!(!third.tools_from_cache(), "a changed manifest asks again");
    assert_eq!(third.tool_specs(), first.tool_specs());
    assert!(load().await.tools_from_cache());

    // A damaged note is not trusted: describe runs and the note is rewritten.
    let note = &notes()[0];
    let mut bytes = std::fs::read(note).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x20;
    std::fs::write(note, &bytes).unwrap();
    let fourth = load().await;
    assert!(!fourth.tools_from_cache());
    assert_eq!(fourth.tool_specs(), first.tool_specs());
    assert!(load().await.tools_from_cache());
    std::fs::write(note, b"").unwrap();
    assert!(!load().await.tools_from_cache());

    // Without a cache there is nothing to remember.
    let uncached = PluginHost::new(HostConfig::default())
        .unwrap()
        .load_file(&wasm)
        .await
        .unwrap();
    assert!(!uncached.tools_from_cache());
}

/// `hostile_spin` (a CPU loop, stopped by epochs) and `hostile_sleep` (a
/// host wait, stopped by the async deadline) with a 1 s sandbox deadline.
async fn slow_hostiles() -> (tempfile::TempDir, ToolRegistry) {
    let dir = tempfile::tempdir().unwrap();
    for name in ["hostile_spin", "hostile_sleep"] {
        copy_plugin_from(hostile_dir(), name, dir.path());
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            "[limits]\ntimeout_ms = 1000\nfuel = 100000000000\n",
        )
        .unwrap();
    }
    let report = load(&host(), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, report.registry().expect("the loaded tools register"))
}

/// Call `tool` with an outer `timeout`; it must end as `timeout`. Returns
/// how long it ran.
async fn timed_out_after(registry: &ToolRegistry, tool: &str, timeout: Duration) -> Duration {
    {
        let cx = CallContext::default().with_overrides(ExecOverrides {
            timeout: Some(timeout),
            ..ExecOverrides::default()
        });
        let started = std::time::Instant::now();
        let report = registry.call(tool, "{}", &cx).await;
        let elapsed = started.elapsed();
        let e = report.output.expect_err("the call must not finish");
        assert_eq!(e.kind, ToolErrorKind::Timeout, "{tool}: {}", e.message);
        assert_eq!(report.options.timeout, Some(timeout));
        assert_eq!(report.attempts, 1);
        elapsed
    }
}

#[tokio::test]
async fn a_shorter_outer_timeout_ends_a_plugin_call_before_its_sandbox_deadline() {
    let (_dir, registry) = slow_hostiles().await;
    for tool in ["hostile_spin", "hostile_sleep"] {
        let elapsed = timed_out_after(&registry, tool, Duration::from_millis(100)).await;
        assert!(
            elapsed < Duration::from_millis(700),
            "{tool} ran {elapsed:?}, past the 100 ms override"
        );
    }
}

#[tokio::test]
async fn a_longer_outer_timeout_never_lengthens_the_sandbox_deadline() {
    let (_dir, registry) = slow_hostiles().await;
    for tool in ["hostile_spin", "hostile_sleep"] {
        let elapsed = timed_out_after(&registry, tool, Duration::from_secs(60)).await;
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(10),
            "{tool} ran {elapsed:?}; its sandbox deadline is 1 s"
        );
    }
}

#[tokio::test]
async fn a_manifest_exec_table_and_version_set_its_tools_defaults() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "version = \"2.0.0\"\n[exec]\ntimeout_ms = 100\nretries = 1\nretry_delay_ms = 10\n\
         backoff = \"fixed\"\n[limits]\ntimeout_ms = 1000\n",
    )
    .unwrap();
    let report = load(&host(), dir.path()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report.registry().expect("the loaded tools register");
    assert_eq!(
        registry.snapshot().keys().collect::<Vec<_>>(),
        ["hostile_sleep@2.0.0"]
    );
    let started = std::time::Instant::now();
    let report = registry
        .call("hostile_sleep@2.0.0", "{}", &CallContext::default())
        .await;
    assert_eq!(report.output.unwrap_err().kind, ToolErrorKind::Timeout);
    assert_eq!(report.options.timeout, Some(Duration::from_millis(100)));
    assert_eq!(report.options.retries, 1);
    assert_eq!(report.attempts, 2, "a timeout is retried once");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "[exec]\nretries = 99\n",
    )
    .unwrap();
    let refused = load(&host(), dir.path()).await;
    let message = refused
        .errors
        .iter()
        .map(|e| format!("{e:#}"))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(message.contains("[exec] retries = 99"), "{message}");
}
