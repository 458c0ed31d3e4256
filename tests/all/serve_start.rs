//! Start at once: `serve` answers with the tools whose compiled code is in
//! the compile cache, compiles the other plugins in the background, and
//! tells clients of their tools as each is ready
//! (`notifications/tools/list_changed`); `--wait-for-plugins` compiles
//! everything first. The library's side: `ToolboxBuilder::compile_later`,
//! `Toolbox::load_deferred`.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::{PluginError, PluginHost};
use toolhost::toolbox::Toolbox;
use toolhost::tools::{CallContext, ToolOrigin};
use toolhost_tests::mcp::ServeStdio;
use toolhost_tests::plugins::{copy_plugin, plugin_dir, toolhost_bin};

fn config(cache: &Path) -> HostConfig {
    HostConfig::default().cache_dir(cache.to_owned())
}

/// Compile the plugin at `path` into the compile cache `cache`.
async fn warm(cache: &Path, path: &Path) {
    PluginHost::new(config(cache))
        .unwrap()
        .load_file(path)
        .await
        .expect("the plugin loads");
}

/// `name`'s built component with a custom section appended: the same tools
/// from bytes the compile cache has never seen.
fn unseen_copy(name: &str, dest: &Path) {
    let mut wasm = std::fs::read(plugin_dir().join(format!("{name}.wasm"))).unwrap();
    let section_name = b"toolhost-test";
    let payload = b"unseen";
    wasm.push(0);
    wasm.push(u8::try_from(1 + section_name.len() + payload.len()).unwrap());
    wasm.push(u8::try_from(section_name.len()).unwrap());
    wasm.extend_from_slice(section_name);
    wasm.extend_from_slice(payload);
    std::fs::write(dest, wasm).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolbox_that_compiles_later_serves_what_the_cache_knows_then_adds_the_rest() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("text", dir.path());
    copy_plugin("calc", dir.path());
    warm(cache.path(), &dir.path().join("text.wasm")).await;

    let toolbox = Toolbox::builder(config(cache.path()))
        .plugins(dir.path())
        .compile_later()
        .build()
        .await
        .unwrap();
    let registry = toolbox.registry();
    assert!(registry.contains("text_stats"), "the cached plugin serves");
    assert!(
        !registry.contains("calc_eval"),
        "the other is not compiled yet"
    );
    assert_eq!(toolbox.deferred(), vec![dir.path().join("calc.wasm")]);
    assert!(!toolbox.found_nothing());

    let generation = registry.generation();
    let report = toolbox.load_deferred().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.plugins.len(), 1);
    assert!(registry.generation() > generation, "subscribers are told");
    let answer = registry
        .call(
            "calc_eval",
            json!({"expression": "6 * 7"}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(answer, json!({"value": 42.0}));
    assert!(toolbox.deferred().is_empty());
    let again = toolbox.load_deferred().await;
    assert!(
        again.plugins.is_empty() && again.errors.is_empty(),
        "taken once"
    );

    // Without `compile_later`, everything is compiled by `build`.
    let cold = tempfile::tempdir().unwrap();
    let toolbox = Toolbox::builder(config(cold.path()))
        .plugins(dir.path())
        .build()
        .await
        .unwrap();
    assert!(toolbox.registry().contains("calc_eval"));
    assert!(toolbox.deferred().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_compiled_later_gets_the_names_a_full_load_would_give_it() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Around a plugin the cache knows, two that offer the same tools from
    // bytes it has never seen: both compile later.
    std::fs::copy(
        plugin_dir().join("text.wasm"),
        dir.path().join("b_text.wasm"),
    )
    .unwrap();
    warm(cache.path(), &dir.path().join("b_text.wasm")).await;
    unseen_copy("text", &dir.path().join("a_text.wasm"));
    unseen_copy("text", &dir.path().join("c_text.wasm"));

    let toolbox = Toolbox::builder(config(cache.path()))
        .plugins(dir.path())
        .compile_later()
        .build()
        .await
        .unwrap();
    let origin = |toolbox: &Toolbox| match toolbox.registry().get("text_stats").unwrap().origin() {
        ToolOrigin::Plugin { path, .. } => path.file_name().unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    assert_eq!(origin(&toolbox), "b_text.wasm");
    let report = toolbox.load_deferred().await;
    // First in file order, `a_text` owns the names, as in a full load:
    // what `b_text` served is displaced, and said so.
    assert_eq!(origin(&toolbox), "a_text.wasm");
    assert_eq!(report.plugins.len(), 1, "{report:?}");
    assert!(
        report
            .displaced
            .iter()
            .any(|lost| lost.to_string().contains("b_text.wasm")),
        "{:?}",
        report.displaced
    );
    // After both, `c_text` is refused whole.
    match &report.errors[..] {
        [PluginError::Registry { path, error }] => {
            assert_eq!(path, &dir.path().join("c_text.wasm"));
            assert!(error.to_string().contains("text_"), "{error}");
        }
        other => panic!("expected one refusal, got {other:?}"),
    }
}

/// The tool names `tools/list` answers now; `notifications/tools/list_changed`
/// that come first are counted in `changes`.
fn list(server: &mut ServeStdio, id: u64, changes: &mut usize) -> Vec<String> {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    loop {
        let message = server.next_message();
        if message["method"] == "notifications/tools/list_changed" {
            *changes += 1;
        } else if message["id"] == id {
            return message["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
        }
    }
}

/// Wait for the next `notifications/tools/list_changed`.
fn list_changed(server: &ServeStdio) {
    while server.next_message()["method"] != "notifications/tools/list_changed" {}
}

#[test]
fn serve_answers_at_once_with_what_the_cache_knows_and_tells_clients_of_the_rest() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("text", dir.path());
    let warmed = Command::new(toolhost_bin())
        .args(["list", "--cache-dir"])
        .arg(cache.path())
        .arg("--plugins")
        .arg(dir.path())
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .unwrap();
    assert!(warmed.status.success(), "{warmed:?}");
    copy_plugin("calc", dir.path());

    let mut server = ServeStdio::start_in(cache.path(), &[], dir.path(), &["--no-watch"]);
    let mut changes = 0;
    let first = list(&mut server, 1, &mut changes);
    assert!(first.contains(&"text_stats".to_owned()), "{first:?}");
    if !first.contains(&"calc_eval".to_owned()) {
        // Not compiled yet: the client is told when it is.
        if changes == 0 {
            list_changed(&server);
        }
        let second = list(&mut server, 2, &mut changes);
        assert!(second.contains(&"calc_eval".to_owned()), "{second:?}");
        assert!(second.contains(&"text_stats".to_owned()), "{second:?}");
    }
    server.call(3, "calc_eval", json!({"expression": "6 * 7"}));
    let answer = server.answer(3);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"value": 42.0}),
        "{answer}"
    );
    let stderr = server.log.lines().join("\n");
    assert!(
        stderr.contains("compiling 1 plugin(s) in the background") && stderr.contains("calc.wasm"),
        "{stderr}"
    );
}

#[test]
fn serve_with_wait_for_plugins_compiles_everything_before_it_answers() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("text", dir.path());
    copy_plugin("calc", dir.path());
    let mut server = ServeStdio::start_in(
        cache.path(),
        &["--wait-for-plugins"],
        dir.path(),
        &["--no-watch"],
    );
    let mut changes = 0;
    let tools = list(&mut server, 1, &mut changes);
    assert!(
        tools.contains(&"text_stats".to_owned()) && tools.contains(&"calc_eval".to_owned()),
        "{tools:?}"
    );
    assert!(
        !server
            .log
            .lines()
            .iter()
            .any(|line| line.contains("in the background"))
    );
}
