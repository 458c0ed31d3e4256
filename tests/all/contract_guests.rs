//! Plugin contract 0.2 through the C and Go guest SDKs, called through the
//! library: `c_barcode` and `go_mandelbrot` declare an output schema and
//! annotations, answer a PNG beside a structured summary, report progress,
//! and ask the user (who cannot be asked here); and a project made by
//! `toolhost new` in either language declares its greeting's output schema,
//! reports progress, and gets `output_schema_mismatch` for a tool added to
//! it whose answer breaks its schema.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{
    CallContext, CallReport, Content, Progress, ProgressSink, ToolErrorKind, ToolRegistry,
};
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::{plugin_subset, toolchain_path, toolhost_bin};

const PNG_MAGIC: [u8; 8] = *b"\x89PNG\r\n\x1a\n";

fn host() -> PluginHost {
    PluginHost::new(HostConfig::default().cache_dir(test_cache_dir())).expect("the sandbox starts")
}

async fn load(dir: &Path) -> ToolRegistry {
    let report = host().load_dir(dir).await.expect("the directory lists");
    let errors: Vec<String> = report.errors.iter().map(|e| format!("{e:#}")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    report.registry().expect("the loaded tools register")
}

/// A call with a progress sink; its report and the progress passed on.
async fn call_with_progress(
    registry: &ToolRegistry,
    tool: &str,
    input: &Value,
) -> (CallReport, Vec<Progress>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let cx = CallContext::default().with_progress(sink);
    let report = registry.call(tool, &input.to_string(), &cx).await;
    let seen = seen.lock().unwrap().clone();
    (report, seen)
}

/// Reports came in order, each of `total`, the last one the whole.
fn assert_progress_in_order(seen: &[Progress], total: f64) {
    assert!(!seen.is_empty(), "no progress reached the sink");
    assert!(
        seen.windows(2).all(|w| w[0].done < w[1].done),
        "out of order: {seen:?}"
    );
    assert!(seen.iter().all(|p| p.total == Some(total)), "{seen:?}");
    assert_eq!(seen.last().unwrap().done, total, "{seen:?}");
}

/// The one image part of a result: its bytes, after checking it is a PNG
/// of `width` x `height`.
fn png_part(content: &[Content], width: u32, height: u32) -> &[u8] {
    let [Content::Image { media_type, data }] = content else {
        panic!("one image part, not {content:?}")
    };
    assert_eq!(media_type, "image/png");
    assert_eq!(data[..8], PNG_MAGIC);
    assert_eq!(&data[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(data[at..at + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (width, height), "the PNG's size");
    data
}

/// Code 128's check symbol for code set B: the start symbol (104) plus each
/// symbol's value times its position, mod 103.
fn code128_check(text: &str) -> u64 {
    let weighted: u64 = text
        .bytes()
        .enumerate()
        .map(|(i, b)| u64::from(b - 32) * (i as u64 + 1))
        .sum();
    (104 + weighted) % 103
}

#[tokio::test]
async fn a_c_tool_declares_its_output_schema_and_answers_a_png_with_progress() {
    let dir = plugin_subset(&["c_barcode"]);
    let registry = load(dir.path()).await;
    let tool = registry.get("c_barcode").expect("c_barcode is registered");
    let schema = tool.output_schema().expect("an output schema");
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["check_symbol"].is_object(), "{schema}");
    let hints = tool.annotations().expect("annotations");
    assert_eq!(hints.title.as_deref(), Some("Draw a barcode"));
    assert_eq!(
        (
            hints.read_only_hint,
            hints.idempotent_hint,
            hints.open_world_hint
        ),
        (Some(true), Some(true), Some(false))
    );
    assert_eq!(hints.destructive_hint, None, "not set, not sent");

    let text = "toolhost 0.2";
    let input = json!({"text": text, "module_px": 3, "height_px": 40});
    let (call, progress) = call_with_progress(&registry, "c_barcode", &input).await;
    let summary = call.output.expect("the barcode is drawn");
    assert!(call.structured);
    // Quiet zones, start, the text, the check symbol and the 13-module stop.
    let modules = 10 + 11 * (text.len() + 2) + 13 + 10;
    let png = png_part(&call.content, 3 * modules as u32, 40);
    assert_eq!(
        summary,
        json!({
            "text": text,
            "symbology": "code128-b",
            "check_symbol": code128_check(text),
            "width": 3 * modules,
            "height": 40,
            "bytes": png.len(),
        })
    );
    assert_progress_in_order(&progress, 40.0);
    assert_eq!(progress[0].message.as_deref(), Some("encoding rows"));
}

#[tokio::test]
async fn a_c_tool_that_needs_an_answer_hears_that_no_one_can_be_asked() {
    let dir = plugin_subset(&["c_barcode"]);
    let registry = load(dir.path()).await;
    // No text: the tool asks the user, and the host has no one to ask.
    let e = registry
        .call("c_barcode", json!({}), &CallContext::default())
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
    assert!(
        e.message
            .contains("`text` is missing, and no one can be asked for it here ("),
        "{e}"
    );
    assert!(e.message.ends_with("): pass `text`"), "{e}");
}

#[tokio::test]
async fn a_go_tool_derives_its_output_schema_and_answers_a_png_with_progress() {
    let dir = plugin_subset(&["go_mandelbrot"]);
    let registry = load(dir.path()).await;
    let tool = registry
        .get("go_mandelbrot")
        .expect("go_mandelbrot is registered");
    let schema = tool.output_schema().expect("an output schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["inside"]["type"], "number", "{schema}");
    assert_eq!(
        schema["required"],
        json!(["width", "height", "max_iterations", "inside", "bytes"]),
        "from the summary struct: {schema}"
    );
    let hints = tool.annotations().expect("annotations");
    assert_eq!(hints.title.as_deref(), Some("Render the Mandelbrot set"));
    assert_eq!(hints.read_only_hint, Some(true));

    let input = json!({"width": 64, "height": 48, "max_iterations": 40});
    let (call, progress) = call_with_progress(&registry, "go_mandelbrot", &input).await;
    let summary = call.output.expect("the view is rendered");
    let png = png_part(&call.content, 64, 48);
    assert_eq!(summary["bytes"], json!(png.len()));
    assert_eq!(
        (
            &summary["width"],
            &summary["height"],
            &summary["max_iterations"]
        ),
        (&json!(64), &json!(48), &json!(40))
    );
    let inside = summary["inside"].as_f64().unwrap();
    assert!(
        inside > 0.05 && inside < 0.95,
        "the default view shows the set: {inside}"
    );
    assert_progress_in_order(&progress, 48.0);
    assert_eq!(
        progress.last().unwrap().message.as_deref(),
        Some("row 48 of 48")
    );
}

#[tokio::test]
async fn a_go_tool_that_needs_a_go_ahead_hears_that_no_one_can_be_asked() {
    let dir = plugin_subset(&["go_mandelbrot"]);
    let registry = load(dir.path()).await;
    // Past the plugin's work budget: it asks before rendering.
    let input = json!({"width": 1024, "height": 1024, "max_iterations": 5000});
    let (call, progress) = call_with_progress(&registry, "go_mandelbrot", &input).await;
    let e = call.output.unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
    assert!(
        e.message
            .contains("needs the user's go-ahead, and no one can be asked here ("),
        "{e}"
    );
    assert!(progress.is_empty(), "nothing rendered: {progress:?}");
}

/// `toolhost new --lang LANG NAME` in a temp dir, `add` applied to its
/// source, built with its `./build.sh`; the registry of its dist/.
async fn scaffold(lang: &str, name: &str, add: impl FnOnce(&str) -> String) -> ToolRegistry {
    let parent = tempfile::tempdir().expect("a temp dir");
    let made = Command::new(toolhost_bin())
        .args(["new", "--lang", lang, name, "--dir"])
        .arg(parent.path())
        .env_remove("TOOLHOST_SDK")
        .output()
        .expect("toolhost runs");
    assert!(made.status.success(), "toolhost new: {made:?}");
    let project = parent.path().join(name);
    let source = project.join(if lang == "c" { "plugin.c" } else { "plugin.go" });
    let text = std::fs::read_to_string(&source).expect("the scaffold's source");
    std::fs::write(&source, add(&text)).expect("write the source");
    let built = Command::new(project.join("build.sh"))
        .current_dir(&project)
        .env_remove("TOOLHOST_SDK")
        .env("PATH", toolchain_path())
        .output()
        .expect("build.sh runs");
    assert!(
        built.status.success(),
        "{lang}: ./build.sh failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let registry = load(&project.join("dist")).await;
    drop(parent);
    registry
}

/// The scaffold's greeting declares its output schema and reports its
/// progress; the added `NAME_liar` answers `{"n": 3}` for 3, which fits
/// its schema, and `{"n": "three"}` otherwise, which does not.
async fn scaffold_and_liar(lang: &str, name: &str, add: impl FnOnce(&str) -> String) {
    let registry = scaffold(lang, name, add).await;
    let greet = format!("{name}_greet");
    let schema = registry
        .get(&greet)
        .expect("the greeting")
        .output_schema()
        .expect("the scaffold declares an output schema")
        .clone();
    assert_eq!(
        schema["properties"]["greeting"]["type"], "string",
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["greeting"]), "{schema}");
    let (call, progress) = call_with_progress(&registry, &greet, &json!({"name": "Ada"})).await;
    assert_eq!(call.output.unwrap(), json!({"greeting": "Hello, Ada!"}));
    let done: Vec<f64> = progress.iter().map(|p| p.done).collect();
    assert_eq!(done, [0.0, 1.0], "{lang}: {progress:?}");

    let liar = format!("{name}_liar");
    let cx = CallContext::default();
    let good = registry.call(&liar, json!({"n": 3}), &cx).await.output;
    assert_eq!(good.unwrap(), json!({"n": 3}), "{lang}");
    let e = registry
        .call(&liar, json!({"n": 4}), &cx)
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::OutputSchemaMismatch, "{lang}: {e}");
    assert!(
        e.message.contains("does not match its output schema"),
        "{e}"
    );
}

const LIAR_OUTPUT_SCHEMA: &str =
    r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;

#[tokio::test]
async fn a_c_scaffold_declares_its_schema_and_a_tool_that_breaks_its_schema_is_caught() {
    let c_string = |json: &str| format!("{json:?}");
    scaffold_and_liar("c", "cguest", |source| {
        let liar = format!(
            "static th_status liar(const th_input *in, th_output *out) {{\n\
             \x20   int64_t n = 0;\n\
             \x20   th_get_int(in, \"n\", &n);\n\
             \x20   th_object_begin(out);\n\
             \x20   th_key(out, \"n\");\n\
             \x20   if (n == 3) th_int(out, n); else th_cstring(out, \"three\");\n\
             \x20   th_object_end(out);\n\
             \x20   return TH_OK;\n\
             }}\n\n\
             TOOLHOST_PLUGIN(\n\
             \x20   {{.name = \"cguest_liar\", .description = \"Answers n, or not.\",\n\
             \x20    .input_schema = {},\n\
             \x20    .run = liar, .output_schema = {}}},\n",
            c_string(r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#),
            c_string(LIAR_OUTPUT_SCHEMA),
        );
        source.replacen("TOOLHOST_PLUGIN(\n", &liar, 1)
    })
    .await;
}

#[tokio::test]
async fn a_go_scaffold_declares_its_schema_and_a_tool_that_breaks_its_schema_is_caught() {
    scaffold_and_liar("go", "goguest", |source| {
        format!(
            "{source}\n\
             type liarInput struct {{\n\
             \tN int `json:\"n\"`\n\
             }}\n\n\
             func init() {{\n\
             \ttoolhost.Register(\"goguest_liar\", \"Answers n, or not.\", func(in liarInput) (any, error) {{\n\
             \t\tif in.N == 3 {{\n\
             \t\t\treturn map[string]int{{\"n\": 3}}, nil\n\
             \t\t}}\n\
             \t\treturn map[string]string{{\"n\": \"three\"}}, nil\n\
             \t}}, toolhost.OutputSchema(map[string]any{{\"type\": \"object\", \"required\": []string{{\"n\"}},\n\
             \t\t\"properties\": map[string]any{{\"n\": map[string]any{{\"type\": \"integer\"}}}}}}))\n\
             }}\n"
        )
    })
    .await;
}
