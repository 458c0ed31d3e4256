//! Plugin contract 0.2 end to end: a 0.2 plugin's output schema,
//! annotations and image result through the library and through `toolhost
//! serve` to the official Python SDK client; progress reports to a
//! program's sink and to an MCP client; the host's checks on what a 0.2
//! plugin declares and answers; and 0.1 plugins loading beside it,
//! unchanged.

use std::path::Path;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::{LoadReport, PluginHost};
use toolhost::tools::{CallContext, Content, ProgressSink, ToolErrorKind};
use toolhost_tests::mcp::{sdk_client, stdio_command, test_cache_dir};
use toolhost_tests::plugins::{
    copy_plugin, copy_plugin_from, fixtures_dir, hostile_dir, plugin_subset, schemas_plugin,
};

fn host(config: HostConfig) -> PluginHost {
    PluginHost::new(config.cache_dir(test_cache_dir())).expect("the sandbox starts")
}

const PNG_MAGIC: [u8; 8] = *b"\x89PNG\r\n\x1a\n";

fn draw_input() -> Value {
    json!({
        "kind": "bar",
        "title": "Sales",
        "labels": ["Jan", "Feb", "Mar"],
        "series": [{"name": "2026", "values": [3, 5, 2]}],
        "width": 320,
        "height": 200,
    })
}

async fn load(dir: &Path) -> LoadReport {
    let report = host(HostConfig::default()).load_dir(dir).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report
}

#[tokio::test]
async fn a_0_2_plugin_answers_an_image_with_a_structured_summary_that_fits_its_schema() {
    let dir = plugin_subset(&["chart"]);
    let report = load(dir.path()).await;
    let registry = report.registry().unwrap();
    let tool = registry
        .get("chart_draw")
        .expect("chart_draw is registered");
    let schema = tool
        .output_schema()
        .expect("an output schema from the output type");
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["bytes"].is_object(), "{schema}");
    let hints = tool.annotations().expect("annotations");
    assert_eq!(hints.title.as_deref(), Some("Draw a chart"));
    assert_eq!(hints.read_only_hint, Some(true));

    let call = registry
        .call(
            "chart_draw",
            &draw_input().to_string(),
            &CallContext::default(),
        )
        .await;
    let summary = call.output.expect("the chart is drawn");
    assert!(call.structured);
    assert_eq!(
        (summary["width"].clone(), summary["height"].clone()),
        (json!(320), json!(200))
    );
    assert_eq!(
        (summary["min"].clone(), summary["max"].clone()),
        (json!(2.0), json!(5.0))
    );
    let [Content::Image { media_type, data }] = call.content.as_slice() else {
        panic!("one image part: {:?}", call.content.len())
    };
    assert_eq!(media_type, "image/png");
    assert_eq!(data[..8], PNG_MAGIC);
    assert_eq!(summary["bytes"], json!(data.len()));

    // A JSON-only caller gets the structured value, as from any tool.
    let plain = registry
        .call("chart_draw", draw_input(), &CallContext::default())
        .await
        .output
        .unwrap();
    assert_eq!(plain, summary);
}

#[tokio::test]
async fn an_answer_that_breaks_its_declared_schema_is_an_error_the_model_sees() {
    let dir = tempfile::tempdir().unwrap();
    schemas_plugin(dir.path(), "liar", "liar");
    let report = load(dir.path()).await;
    let registry = report.registry().unwrap();
    let cx = CallContext::default();
    for bad in [json!({}), json!({"n": "three"}), json!({"n": 1.5})] {
        let e = registry
            .call("hostile_schemas_liar", bad.clone(), &cx)
            .await
            .output
            .unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::OutputSchemaMismatch, "{bad}: {e}");
        assert!(
            e.message.contains("does not match its output schema"),
            "{e}"
        );
    }
    let good = registry
        .call("hostile_schemas_liar", json!({"n": 3}), &cx)
        .await
        .output
        .unwrap();
    assert_eq!(good, json!({"n": 3}));
}

#[tokio::test]
async fn what_a_0_2_plugin_declares_is_held_to_budgets_and_rules() {
    let cases = [
        ("huge_output_schema", "plugins.max_schema_bytes"),
        ("output_ref_chain", "output schema"),
        ("output_not_object", "must be an object schema"),
        ("long_title", "title is longer than"),
        ("bad_meta", "metadata is not a JSON object"),
    ];
    for (mode, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        copy_plugin("calc", dir.path());
        schemas_plugin(dir.path(), mode, mode);
        let report = host(HostConfig::default())
            .load_dir(dir.path())
            .await
            .unwrap();
        let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 1, "{mode}: {errors:?}");
        assert!(errors[0].contains(&format!("{mode}.wasm")), "{errors:?}");
        assert!(errors[0].contains(expected), "{mode}: {}", errors[0]);
        // The 0.1 plugin beside it loads and answers.
        let out = report
            .registry()
            .unwrap()
            .call(
                "calc_eval",
                json!({"expression": "6*7"}),
                &CallContext::default(),
            )
            .await
            .output
            .unwrap();
        assert_eq!(out, json!({"value": 42.0}), "{mode}");
    }
}

#[tokio::test]
async fn plugins_of_both_series_load_side_by_side() {
    let dir = plugin_subset(&["chart", "calc", "js_json", "py_units", "c_hash"]);
    let report = load(dir.path()).await;
    let series = |name: &str| {
        let plugin = report.plugins.iter().find(|p| p.name() == name).unwrap();
        let exports = &plugin.interface().exports;
        exports
            .iter()
            .find(|e| e.starts_with("toolhost:plugin/tool@"))
            .cloned()
            .unwrap()
    };
    for new in ["chart", "js_json"] {
        assert_eq!(series(new), "toolhost:plugin/tool@0.2.0", "{new}");
    }
    // py_units is built against 0.1 on purpose (plugins/python/py_units/contract).
    for old in ["py_units", "c_hash"] {
        assert_eq!(series(old), "toolhost:plugin/tool@0.1.0", "{old}");
    }
    let registry = report.registry().unwrap();
    let snapshot = registry.snapshot();
    for tool in snapshot.tools() {
        let name = &tool.spec().name;
        if !name.starts_with("chart_") {
            assert_eq!(tool.output_schema(), None, "{name}: declares none");
            assert_eq!(tool.annotations(), None, "{name}");
        }
    }
    let call = registry
        .call(
            "calc_eval",
            r#"{"expression": "2+2"}"#,
            &CallContext::default(),
        )
        .await;
    assert_eq!(call.output.unwrap(), json!({"value": 4.0}));
    assert!(
        call.structured && call.content.is_empty(),
        "a 0.1 answer is JSON only"
    );
}

/// Run tests/mcp/client.py over stdio against `toolhost serve`; its report.
fn serve_and_ask(plugins: &Path, steps: &Value) -> Value {
    sdk_client("stdio", &stdio_command(plugins, &[]), steps)
}

#[test]
fn serve_gives_mcp_clients_the_schema_the_hints_and_the_image() {
    let dir = plugin_subset(&["chart", "calc"]);
    copy_plugin_from(hostile_dir(), "hostile_schemas", dir.path());
    std::fs::write(
        dir.path().join("hostile_schemas.toml"),
        "[config]\nmode = \"liar\"\n",
    )
    .unwrap();
    let report = serve_and_ask(
        dir.path(),
        &json!([
            {"op": "list"},
            {"op": "call", "tool": "chart_draw", "args": draw_input()},
            {"op": "call", "tool": "hostile_schemas_liar", "args": {}},
            {"op": "call", "tool": "calc_eval", "args": {"expression": "1+1"}},
        ]),
    );
    let results = report["results"].as_array().unwrap();
    let tools = results[0]["tools"].as_array().unwrap();
    let chart = tools.iter().find(|t| t["name"] == "chart_draw").unwrap();
    assert_eq!(chart["outputSchema"]["type"], "object", "{chart}");
    assert_eq!(chart["annotations"]["title"], "Draw a chart", "{chart}");
    assert_eq!(chart["annotations"]["readOnlyHint"], true, "{chart}");
    let calc = tools.iter().find(|t| t["name"] == "calc_eval").unwrap();
    assert_eq!(calc["outputSchema"], Value::Null, "{calc}");

    // The SDK checked the structured result against the schema it listed.
    let drawn = &results[1];
    assert_eq!(drawn["is_error"], false, "{drawn}");
    assert_eq!(drawn["structured"]["width"], 320, "{drawn}");
    let blocks = drawn["blocks"].as_array().unwrap();
    assert_eq!(
        blocks[0]["type"], "text",
        "the JSON as text first: {blocks:?}"
    );
    let image = &blocks[1];
    assert_eq!(image["type"], "image", "{blocks:?}");
    assert_eq!(image["mimeType"], "image/png");
    assert_eq!(image["head"], hex(&PNG_MAGIC));
    assert_eq!(image["size"], drawn["structured"]["bytes"]);

    let liar = &results[2];
    assert_eq!(liar["is_error"], true, "{liar}");
    assert!(
        liar["text"][0]
            .as_str()
            .unwrap()
            .starts_with("output_schema_mismatch: "),
        "{liar}"
    );
    assert_eq!(
        results[3]["structured"]["value"], 2.0,
        "a 0.1 plugin as before"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_call_s_progress_reaches_the_sink_of_its_context_in_order() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    let report = load(dir.path()).await;
    let registry = report.registry().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let seen = std::sync::Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let cx = CallContext::default().with_progress(sink);
    registry
        .call("test_tool_with_progress", json!({}), &cx)
        .await
        .output
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    let done: Vec<f64> = seen.iter().map(|p| p.done).collect();
    assert_eq!(done, [0.0, 50.0, 100.0]);
    assert!(seen.iter().all(|p| p.total == Some(100.0)));
    assert_eq!(seen[1].message.as_deref(), Some("50% done"));
    // Without a sink the same call reports to no one and still answers.
    registry
        .call(
            "test_tool_with_progress",
            json!({}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
}

#[test]
fn serve_sends_progress_notifications_before_the_result() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    let report = serve_and_ask(
        dir.path(),
        &json!([
            {"op": "call", "tool": "test_tool_with_progress", "args": {}, "progress": true},
            {"op": "call", "tool": "test_tool_with_progress", "args": {}},
        ]),
    );
    let results = report["results"].as_array().unwrap();
    let with = &results[0];
    assert_eq!(with["is_error"], false, "{with}");
    let progress: Vec<f64> = with["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(
        progress,
        [0.0, 50.0, 100.0],
        "all three, in order, before the result: {with}"
    );
    assert_eq!(with["progress"][2]["total"], 100.0);
    assert_eq!(with["progress"][2]["message"], "100% done");
    assert_eq!(
        results[1]["progress"],
        json!([]),
        "no token, no notifications"
    );
}
