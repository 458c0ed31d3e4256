//! A contract 0.3 plugin whose resources, prompts and completions attack
//! the host (plugins/hostile/offers): a list of a million resources, a
//! 1 GB read, URIs with `..` or `file:`, a template that never matches, a
//! 100 MB image, a completion that never ends. Each is refused by a budget
//! or a limit with an error that says which, and the host serves on: the
//! plugin's good entries and the other plugins still answer.

use std::path::Path;

use toolhost::config::HostConfig;
use toolhost::plugin::{LoadReport, PluginHost};
use toolhost::tools::{CompletionRef, CompletionRequest};
use toolhost_tests::plugins::{assert_calc_serves, copy_plugin, hostile_dir, workspace_root};

/// `hostile_offers.wasm` (its manifest's limits) with `[config] mode`,
/// beside calc, loaded.
async fn load(dir: &Path, mode: &str) -> LoadReport {
    copy_plugin("calc", dir);
    std::fs::copy(
        hostile_dir().join("hostile_offers.wasm"),
        dir.join("hostile_offers.wasm"),
    )
    .expect("copy hostile_offers.wasm");
    let manifest = std::fs::read_to_string(hostile_dir().join("hostile_offers.toml"))
        .expect("read its manifest");
    std::fs::write(
        dir.join("hostile_offers.toml"),
        format!("{manifest}\n[config]\nmode = \"{mode}\"\n"),
    )
    .expect("write its manifest");
    let config =
        HostConfig::default().cache_dir(workspace_root().join("target").join("test-cache"));
    let host = PluginHost::new(config).expect("the sandbox starts");
    host.load_dir(dir).await.expect("the directory lists")
}

#[tokio::test]
async fn a_list_of_a_million_resources_fails_only_its_own_load() {
    let dir = tempfile::tempdir().unwrap();
    let report = load(dir.path(), "many").await;
    let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("hostile_offers.wasm"), "{errors:?}");
    assert!(
        errors[0].contains("listing its resources and prompts failed")
            && (errors[0].contains("memory") || errors[0].contains("output cap")),
        "{errors:?}"
    );
    assert_calc_serves(&report.registry().unwrap()).await;
}

#[tokio::test]
async fn a_file_uri_fails_the_load_and_a_dotdot_uri_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let report = load(dir.path(), "file").await;
    let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("file:///etc/passwd") && errors[0].contains("resource_schemes"),
        "{errors:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let report = load(dir.path(), "dotdot").await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report.registry().unwrap();
    let uris: Vec<String> = registry
        .offers()
        .resources()
        .into_iter()
        .map(|e| e.spec.uri)
        .collect();
    assert_eq!(uris, ["hostile-offers://ok"]);
    let refused = registry
        .offers()
        .read("hostile-offers://a/../../etc/passwd")
        .await
        .unwrap_err();
    assert!(refused.to_string().contains(".."), "{refused}");
    assert_calc_serves(&registry).await;
}

#[tokio::test]
async fn reads_prompts_and_completions_that_attack_meet_a_limit_and_the_host_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let report = load(dir.path(), "attacks").await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report.registry().unwrap();
    let offers = registry.offers();

    // A 1 GB read: the memory cap stops it inside the sandbox.
    let error = offers
        .read("hostile-offers://gigabyte")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("hostile_offers") && error.contains("memory"),
        "{error}"
    );
    // A part under `file:` is refused, though the plugin listed its URI.
    let error = offers
        .read("hostile-offers://passwd")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("file:///etc/passwd"), "{error}");
    // A URI that the template never matches is unknown, at once.
    let long = format!("hostile-offers://never/{}", "a-".repeat(600));
    let error = offers.read(&long).await.unwrap_err().to_string();
    assert!(error.contains("no resource has URI"), "{error}");
    // A 100 MB image in a prompt.
    let error = offers
        .get_prompt("hostile_offers_image", Default::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("memory") || error.contains("output cap"),
        "{error}"
    );
    // A completion that never ends: its deadline ends it.
    let started = std::time::Instant::now();
    let error = offers
        .complete(
            &CompletionRef::Prompt("hostile_offers_fine".into()),
            CompletionRequest {
                argument: "x".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("timeout") || error.contains("deadline") || error.contains("fuel"),
        "{error}"
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());

    // The host serves on: the plugin's good entries, its tool, and calc.
    let parts = offers.read("hostile-offers://ok").await.unwrap();
    assert_eq!(parts.len(), 1);
    let reply = offers
        .get_prompt("hostile_offers_fine", Default::default())
        .await
        .unwrap();
    assert_eq!(reply.messages.len(), 1);
    assert_calc_serves(&registry).await;
}
