//! MCP Apps from a plugin, and a plugin's resources, prompts and
//! completions, as the official TypeScript SDK 2 client sees them
//! (tests/mcp/checkers/apps_client.mjs, with `@modelcontextprotocol/ext-apps`'
//! own constants): the bundled chart plugin's tool is listed with its UI
//! resource's `_meta`, in both revisions, and its HTML is read with the Apps
//! MIME type exactly as the plugin returns it; the conformance fixture's
//! offers are listed, read, got and completed, over stdio and HTTP. And a
//! chart manifest whose `[ui]` names another plugin's view does not load.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost_tests::mcp::{ServeHttp, stdio_command, test_cache_dir};
use toolhost_tests::plugins::{copy_plugin_from, fixtures_dir, plugin_subset, workspace_root};

use super::peers::{checkers, node};

const VIEW: &str = "ui://chart/view.html";
const APP_MIME: &str = "text/html;profile=mcp-app";

/// The chart plugin and the conformance fixture, side by side.
fn plugins() -> tempfile::TempDir {
    let dir = plugin_subset(&["chart"]);
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    dir
}

/// The client's report for `mode` (`apps` or `offers`) in `revision`
/// (`2025` or `2026`) against `target` over `transport`.
fn client(transport: &str, target: &str, mode: &str, revision: &str) -> Value {
    let out = Command::new(node())
        .current_dir(checkers())
        .args(["apps_client.mjs", transport, target, mode, revision])
        .output()
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the TypeScript SDK client failed ({transport}, {mode}, {revision}): {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not a report ({e}): {stdout}"))
}

/// The chart tool found the way an Apps host finds it, the view listed and
/// read with the extension's MIME type, the HTML the plugin's own.
fn check_apps(report: &Value, revision: &str) {
    let version = if revision == "2026" {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    assert_eq!(report["protocol_version"], version, "{report}");
    // toolhost's constants are the extension's.
    let ext = &report["ext_apps"];
    assert_eq!(ext["RESOURCE_MIME_TYPE"], APP_MIME, "{report}");
    assert_eq!(
        ext["EXTENSION_ID"], "io.modelcontextprotocol/ui",
        "{report}"
    );
    let legacy = ext["RESOURCE_URI_META_KEY"].as_str().unwrap();
    let apps = report["apps"].as_object().unwrap();
    assert_eq!(
        apps.keys().collect::<Vec<_>>(),
        ["chart_draw"],
        "only the chart tool has a view: {report}"
    );
    let chart = &apps["chart_draw"];
    assert_eq!(
        chart["meta"],
        json!({"ui": {"resourceUri": VIEW}, legacy: VIEW}),
        "{report}"
    );
    assert_eq!(
        report["ui_resources"],
        json!([{"uri": VIEW, "mimeType": APP_MIME, "name": "chart view"}]),
        "{report}"
    );
    let contents = chart["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{report}");
    assert_eq!(contents[0]["uri"], VIEW, "{report}");
    assert_eq!(contents[0]["mimeType"], APP_MIME, "{report}");
    let page = workspace_root().join("plugins/rust/chart/src/view.html");
    assert_eq!(
        contents[0]["text"].as_str(),
        Some(std::fs::read_to_string(page).unwrap().as_str()),
        "the HTML exactly as the plugin returns it"
    );
}

/// The conformance fixture's offers, as tests/all/mcp/offers.rs checks an
/// upstream's with the Python SDK.
fn check_offers(report: &Value) {
    let caps = &report["capabilities"];
    assert_eq!(caps["resources"]["listChanged"], true, "{report}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{report}");
    assert!(caps["completions"].is_object(), "{report}");
    let resources = report["resources"].as_array().unwrap();
    for uri in ["test://static-text", "test://static-binary", VIEW] {
        assert!(resources.contains(&json!(uri)), "{uri}: {report}");
    }
    assert_eq!(
        report["templates"],
        json!(["test://template/{id}/data"]),
        "{report}"
    );
    let prompts = report["prompts"].as_array().unwrap();
    assert!(
        prompts.contains(&json!({"name": "test_prompt_with_arguments",
            "arguments": [["arg1", true], ["arg2", true]]})),
        "{report}"
    );
    assert_eq!(
        report["read_text"][0]["text"], "This is the content of the static text resource.",
        "{report}"
    );
    let blob = &report["read_blob"][0];
    assert_eq!(blob["mimeType"], "image/png", "{report}");
    assert_eq!(blob["blob"], "iVBORw0KGgo=", "{report}");
    let templated = report["read_template"][0]["text"].as_str().unwrap();
    assert!(templated.contains("Data for ID: 42"), "{report}");
    assert_eq!(report["unknown"]["code"], -32602, "{report}");
    assert_eq!(
        report["unknown"]["data"]["uri"], "test://no/such/thing",
        "{report}"
    );
    assert_eq!(
        report["prompt"],
        json!([{"role": "user", "type": "text",
                "text": "Prompt with arguments: arg1='Warsaw', arg2='Mazovia'"}]),
        "{report}"
    );
    assert_eq!(report["prompt_missing"]["code"], -32602, "{report}");
    assert_eq!(
        report["completion"],
        json!(["testValue1", "testValue2"]),
        "{report}"
    );
    assert_eq!(report["template_completion"], json!(["456"]), "{report}");
}

#[test]
fn the_typescript_sdk_finds_the_chart_app_and_reads_its_html_and_offers_over_stdio() {
    let dir = plugins();
    let command = stdio_command(dir.path(), &[]);
    for revision in ["2025", "2026"] {
        check_apps(&client("stdio", &command, "apps", revision), revision);
    }
    check_offers(&client("stdio", &command, "offers", "2025"));
}

#[test]
fn the_typescript_sdk_finds_the_chart_app_and_reads_its_html_and_offers_over_http() {
    let dir = plugins();
    let server = ServeHttp::start(dir.path(), &[], &[]);
    for revision in ["2025", "2026"] {
        check_apps(&client("http", &server.url, "apps", revision), revision);
        check_offers(&client("http", &server.url, "offers", revision));
    }
}

/// The chart plugin with `manifest` in place of its own.
async fn load_chart_with(dir: &Path, manifest: &str) -> String {
    std::fs::write(dir.join("chart.toml"), manifest).unwrap();
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir())).unwrap();
    match host.load_file(&dir.join("chart.wasm")).await {
        Ok(_) => panic!("loaded with {manifest}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_ui_declaration_the_plugin_does_not_own_fails_its_load_saying_what_to_fix() {
    let dir = plugin_subset(&["chart"]);
    let e = load_chart_with(
        dir.path(),
        "[ui]\nchart_draw = \"ui://weather/view.html\"\n",
    )
    .await;
    assert!(e.contains("must start with `ui://chart/`"), "{e}");
    let e = load_chart_with(dir.path(), "[ui]\nchart_draw = \"ui://chart/other.html\"\n").await;
    assert!(e.contains("lists no such resource"), "{e}");
    let e = load_chart_with(dir.path(), "[ui]\nchart_draw = \"https://example.com/\"\n").await;
    assert!(e.contains("must have the `ui` scheme"), "{e}");
    let e = load_chart_with(dir.path(), "[ui]\nchart_plot = \"ui://chart/view.html\"\n").await;
    assert!(e.contains("does not export"), "{e}");
}
