//! Plugin-supplied data the host handles outside the sandbox: tool lists,
//! schemas, manifests, component files, and the model's inputs. Each attack
//! ends with a per-file (or per-call) error that names the budget or rule it
//! broke; the host never crashes, and the other plugins load and serve.

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::{LoadReport, PluginHost};
use toolhost::tools::{CallContext, ToolErrorKind};
use toolhost_tests::plugins::{assert_calc_serves, copy_plugin, schemas_plugin, workspace_root};

fn host(config: HostConfig) -> PluginHost {
    PluginHost::new(config.cache_dir(workspace_root().join("target").join("test-cache")))
        .expect("the sandbox starts")
}

/// The one load error of `report`, for the plugin called `name`.
fn error_of(report: &LoadReport, name: &str) -> String {
    let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&format!("{name}.wasm")), "{errors:?}");
    errors[0].clone()
}

/// calc loaded beside the bad plugin and answers.
async fn calc_still_serves(report: &LoadReport) {
    assert_calc_serves(&report.registry().expect("the loaded tools register")).await;
}

#[tokio::test]
async fn every_hostile_tool_list_fails_its_own_load_only() {
    let cases = [
        ("ref_chain", "`$ref`"),
        ("ref_cycle", "cycle"),
        ("anyof_ladder", "`$ref`"),
        ("remote_ref", "not local"),
        ("deep", "nested more than 32 levels"),
        ("huge_schema", "plugins.max_schema_bytes"),
        ("many_tools", "plugins.max_tools"),
        ("long_description", "plugins.max_description_bytes"),
        ("bad_name", "is not valid"),
    ];
    for (mode, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        copy_plugin("calc", dir.path());
        schemas_plugin(dir.path(), mode, mode);
        // Room for the bytes, so that the structural rules are what stop
        // the schemas (the 150 KB chain once aborted the host).
        let mut config = HostConfig::default();
        if mode != "huge_schema" {
            config.plugins.max_schema_bytes = 1 << 20;
        }
        let report = host(config).load_dir(dir.path()).await.unwrap();
        let error = error_of(&report, mode);
        assert!(error.contains(expected), "{mode}: {error}");
        assert!(
            !error.contains('\u{1b}') && !error.contains("\nINFO"),
            "{mode}: plugin text reached the message raw: {error:?}"
        );
        calc_still_serves(&report).await;
    }
}

#[tokio::test]
async fn the_operator_sets_the_tool_list_budgets() {
    let dir = tempfile::tempdir().unwrap();
    schemas_plugin(dir.path(), "long", "long_description");
    let mut config = HostConfig::default();
    config.plugins.max_description_bytes = 2 << 20;
    let report = host(config).load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(
        report.registry().expect("the loaded tools register").len(),
        1
    );

    // With room for 50 001 tools, the repeated name is what is refused,
    // found in linear time.
    let dir = tempfile::tempdir().unwrap();
    schemas_plugin(dir.path(), "dups", "duplicates");
    let mut config = HostConfig::default();
    config.plugins.max_tools = 60_000;
    let report = host(config).load_dir(dir.path()).await.unwrap();
    let error = error_of(&report, "dups");
    assert!(
        error.contains("`hostile_schemas_d0` is listed twice"),
        "{error}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn special_or_oversized_manifests_fail_their_own_load_only() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let calc = dir.path().join("calc.wasm");
    for name in ["fifo", "zero", "big", "dir"] {
        std::fs::copy(&calc, dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    let fifo = dir.path().join("fifo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.toml")).unwrap();
    std::fs::write(
        dir.path().join("big.toml"),
        format!("# {}\n", "x".repeat(100 << 10)),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("dir.toml")).unwrap();

    let report = host(HostConfig::default())
        .load_dir(dir.path())
        .await
        .unwrap();
    let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    for (name, expected) in [
        ("fifo.toml", "not a regular file"),
        ("zero.toml", "not a regular file"),
        ("big.toml", "plugins.max_manifest_bytes"),
        ("dir.toml", "not a regular file"),
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e.contains(name) && e.contains(expected)),
            "{name}: {errors:?}"
        );
    }
    // Of the five copies only calc itself has a readable manifest.
    assert_eq!(
        report.registry().expect("the loaded tools register").len(),
        1
    );
    calc_still_serves(&report).await;
}

#[tokio::test]
async fn oversized_or_deep_inputs_are_refused_before_the_plugin_runs() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    let report = host(HostConfig::default())
        .load_dir(dir.path())
        .await
        .unwrap();
    let registry = report.registry().expect("the loaded tools register");
    let cx = CallContext::default();

    let mut deep = json!("1+1");
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let e = registry
        .call("calc_eval", json!({"expression": deep}), &cx)
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);
    assert!(e.message.contains("nested more than"), "{}", e.message);

    let huge = format!("{{\"expression\": \"{}\"}}", "1+".repeat(1 << 20));
    let e = registry
        .call("calc_eval", &huge, &cx)
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);
    assert!(e.message.contains("bytes"), "{}", e.message);

    let wide = Value::Array(vec![json!(1); 200_000]);
    let e = registry
        .call("calc_eval", json!({"expression": wide}), &cx)
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput);
    assert!(e.message.contains("JSON values"), "{}", e.message);
}
