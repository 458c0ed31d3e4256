//! `toolhost call NAME` loads only the plugin that owns NAME, and it is the
//! plugin a full load of the directory would have given NAME: the same
//! answer, the same owner, the same errors, the same names.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::{LoadReport, PluginHost, ToolLoad};
use toolhost::tools::CallContext;
use toolhost_tests::plugins::{copy_plugin, plugin_dir, toolhost_bin};

/// A directory where names are contested and one plugin is broken:
/// `a_calc` and `calc` are one component (the first by file name owns
/// `calc_eval`, the second is refused whole), `bad` has a manifest that does
/// not parse, `text` stands alone. The cache of [`host`] knows its files by
/// their stamps at once.
fn contested_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    copy_plugin("text", dir.path());
    // The same manifest too: the cache keeps one tool list per component.
    for ext in ["wasm", "toml"] {
        let from = plugin_dir().join(format!("calc.{ext}"));
        if from.is_file() {
            std::fs::copy(from, dir.path().join(format!("a_calc.{ext}"))).unwrap();
        }
    }
    std::fs::copy(plugin_dir().join("text.wasm"), dir.path().join("bad.wasm")).unwrap();
    std::fs::write(dir.path().join("bad.toml"), "[limits\n").unwrap();
    dir
}

/// A host on `cache` that trusts file stamps as soon as they are taken
/// (this file system keeps fine times), so the files just written are
/// known without being read.
fn host(cache: &Path) -> PluginHost {
    let config = HostConfig::default()
        .cache_dir(cache.to_owned())
        .cache_stamp_settle(Duration::ZERO);
    PluginHost::new(config).unwrap()
}

fn errors(report: &LoadReport) -> Vec<String> {
    report.errors.iter().map(ToString::to_string).collect()
}

fn names(report: &LoadReport) -> Vec<String> {
    let mut names: Vec<String> = report
        .plugins
        .iter()
        .flat_map(|p| p.tool_specs().iter().map(|t| t.name.clone()))
        .collect();
    names.sort();
    names
}

async fn answer(load: &LoadReport, tool: &str, input: Value) -> Value {
    load.registry()
        .unwrap()
        .call(tool, input, &CallContext::default())
        .await
        .output
        .unwrap()
}

#[tokio::test]
async fn loading_for_one_tool_gives_it_the_owner_a_full_load_gives_it() {
    let dir = contested_dir();
    let cache = tempfile::tempdir().unwrap();
    // The first load (nothing cached) and then a warm one: the reference.
    host(cache.path()).load_dir(dir.path()).await.unwrap();
    let full = host(cache.path()).load_dir(dir.path()).await.unwrap();
    assert_eq!(full.errors.len(), 2, "{:?}", full.errors);

    for (tool, input, owner) in [
        ("calc_eval", json!({"expression": "6*7"}), "a_calc.wasm"),
        ("text_stats", json!({"text": "a b"}), "text.wasm"),
    ] {
        let ToolLoad {
            report,
            owned,
            partial,
        } = host(cache.path())
            .load_dir_for_tool(dir.path(), tool)
            .await
            .unwrap();
        assert!(
            partial,
            "{tool}: known from the cache, so only its owner loads"
        );
        assert_eq!(report.plugins.len(), 1);
        assert_eq!(report.plugins[0].path(), dir.path().join(owner), "{tool}");
        let full_owner = full
            .plugins
            .iter()
            .find(|p| p.tool_specs().iter().any(|t| t.name == tool))
            .unwrap();
        assert_eq!(report.plugins[0].path(), full_owner.path());
        assert_eq!(owned, names(&full), "{tool}");
        assert_eq!(errors(&report), errors(&full), "{tool}");
        assert_eq!(
            answer(&report, tool, input.clone()).await,
            answer(&full, tool, input).await
        );
    }

    // A name nobody owns: the full load, for a complete report.
    let none = host(cache.path())
        .load_dir_for_tool(dir.path(), "no_such_tool")
        .await
        .unwrap();
    assert!(!none.partial);
    assert_eq!(names(&none.report), names(&full));
    assert_eq!(errors(&none.report), errors(&full));
}

#[tokio::test]
async fn a_plugin_the_cache_does_not_know_yet_means_a_full_load() {
    let dir = contested_dir();
    let cache = tempfile::tempdir().unwrap();
    host(cache.path()).load_dir(dir.path()).await.unwrap();
    // Added after the cache learnt the directory: its tools are unknown,
    // and it could own the name (it is first by file name).
    std::fs::copy(
        plugin_dir().join("calc.wasm"),
        dir.path().join("0_calc.wasm"),
    )
    .unwrap();
    let load = host(cache.path())
        .load_dir_for_tool(dir.path(), "calc_eval")
        .await
        .unwrap();
    assert!(!load.partial);
    let owner = load
        .report
        .plugins
        .iter()
        .find(|p| p.tool_specs().iter().any(|t| t.name == "calc_eval"))
        .unwrap();
    assert_eq!(owner.path(), dir.path().join("0_calc.wasm"));
}

#[test]
fn toolhost_call_answers_as_before_once_the_cache_knows_the_directory() {
    let dir = contested_dir();
    let cache = tempfile::tempdir().unwrap();
    // Stamps trusted at once, as [`host`]'s.
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("toolhost.toml");
    std::fs::write(&config, "cache_stamp_settle_ms = 0\n").unwrap();
    let call = |tool: &str, input: &str| {
        let out = Command::new(toolhost_bin())
            .args(["call", tool, "--json", "--input", input, "--plugins"])
            .arg(dir.path())
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .env("TOOLHOST_CONFIG", &config)
            .env_remove("TOOLHOST_PLUGINS")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cold = call("calc_eval", r#"{"expression":"6*7"}"#);
    let warm = call("calc_eval", r#"{"expression":"6*7"}"#);
    assert_eq!(cold.0, Some(0), "{cold:?}");
    assert_eq!(cold.1, warm.1);
    assert_eq!(
        serde_json::from_str::<Value>(&warm.1).unwrap(),
        json!({"ok": true, "output": {"value": 42.0}})
    );
    // The broken plugin and the refused duplicate are reported alike.
    for stderr in [&cold.2, &warm.2] {
        assert!(stderr.contains("bad.toml"), "{stderr}");
        assert!(stderr.contains("is exported by both"), "{stderr}");
    }
    // An unknown name: the full report, as before.
    let unknown = call("nope", "{}");
    assert_eq!(unknown.0, Some(1), "{unknown:?}");
    assert!(unknown.1.contains("no tool named `nope`"), "{unknown:?}");
    assert!(unknown.1.contains("bad.toml"), "{unknown:?}");
}
