//! Integration tests: plugins written in Python, JavaScript, C and Go, built
//! from source by `plugins/build.sh` (which runs `plugins/<lang>/build.sh`)
//! and called through the library: a success, a tool error, an input the
//! schema refuses, and the fuel limit.
//!
//! The toolchains come from `.ci/install-guest-toolchains.sh`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{plugin_dir, plugin_subset};

/// One shared compile cache: a Python component takes ~15 s to compile, so
/// each component is compiled once per test run and every later load is a
/// cache hit.
fn host_config() -> HostConfig {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    let cache = CACHE.get_or_init(|| tempfile::tempdir().expect("a temp dir"));
    HostConfig {
        cache_dir: Some(cache.path().to_owned()),
        max_instances: 32,
        ..HostConfig::default()
    }
}

/// Compile `name` into the shared cache once, one compile at a time, so that
/// parallel tests do not each compile the same big component.
async fn warm(name: &str) {
    static DONE: tokio::sync::Mutex<Option<HashSet<String>>> = tokio::sync::Mutex::const_new(None);
    let mut done = DONE.lock().await;
    let done = done.get_or_insert_with(HashSet::new);
    if done.contains(name) {
        return;
    }
    let wasm = plugin_dir().join(format!("{name}.wasm"));
    let host = PluginHost::new(host_config()).expect("a plugin host");
    let inspection = host.inspect(&wasm).await.expect("built plugin");
    if inspection.interface.is_none() {
        let error = inspection.plugin.expect_err("it did not compile");
        panic!("{name} does not compile: {error:#}");
    }
    done.insert(name.to_owned());
}

/// A registry with plugin `name` loaded from a fresh directory; `manifest`
/// replaces its `NAME.toml` when given.
async fn load(name: &str, manifest: Option<&str>) -> (ToolRegistry, tempfile::TempDir) {
    warm(name).await;
    let dir = plugin_subset(&[name]);
    if let Some(text) = manifest {
        std::fs::write(dir.path().join(format!("{name}.toml")), text).expect("write manifest");
    }
    let host = PluginHost::new(host_config()).expect("a plugin host");
    let report = host
        .load_dir(dir.path())
        .await
        .expect("the directory lists");
    assert!(
        report.errors.is_empty(),
        "{name} did not load: {:?}",
        report
            .errors
            .iter()
            .map(|e| format!("{e:#}"))
            .collect::<Vec<_>>()
    );
    (report.registry().expect("the loaded tools register"), dir)
}

async fn call(
    registry: &ToolRegistry,
    tool: &str,
    input: Value,
) -> Result<Value, (ToolErrorKind, String)> {
    registry
        .call(tool, &input.to_string(), &CallContext::default())
        .await
        .output
        .map_err(|e| (e.kind, e.message))
}

async fn expect_error(
    registry: &ToolRegistry,
    tool: &str,
    input: Value,
    kind: ToolErrorKind,
    text: &str,
) {
    match call(registry, tool, input.clone()).await {
        Ok(out) => panic!("{tool}({input}) succeeded with {out}, expected {kind:?}"),
        Err((got, message)) => {
            assert_eq!(got, kind, "{tool}({input}): {message}");
            assert!(
                message.contains(text),
                "{tool}({input}): `{message}` does not mention `{text}`"
            );
        }
    }
}

fn big_text(bytes: usize) -> String {
    "lorem ipsum dolor sit amet, ".repeat(bytes / 28 + 1)
}

// ---- Python ----

#[tokio::test]
async fn python_tool_converts_units_with_its_configured_precision() {
    let (registry, _dir) = load("py_units", None).await;
    let tool = registry.get("py_convert_units").expect("described");
    let spec = tool.spec();
    assert_eq!(
        spec.input_schema["required"],
        json!(["value", "from_unit", "to_unit"])
    );
    assert_eq!(spec.input_schema["properties"]["value"]["type"], "number");

    let out = call(
        &registry,
        "py_convert_units",
        json!({"value": 212, "from_unit": "F", "to_unit": "C"}),
    )
    .await
    .expect("converts");
    assert_eq!(
        out,
        json!({"value": 100.0, "unit": "C", "category": "temperature"})
    );
    // precision = "6" in the shipped manifest, read through the `config` import.
    let out = call(
        &registry,
        "py_convert_units",
        json!({"value": 1, "from_unit": "mi", "to_unit": "km"}),
    )
    .await
    .expect("converts");
    assert_eq!(out["value"], json!(1.609344));
    let out = call(
        &registry,
        "py_convert_units",
        json!({"value": 1, "from_unit": "in", "to_unit": "m", "precision": 2}),
    )
    .await
    .expect("converts");
    assert_eq!(out["value"], json!(0.03));
}

/// A Python component is slow to instantiate (~0.5 ms), so a call that
/// finds no spare instance ready waits for the one being made rather than
/// making its own. Calls back to back, and several callers at once (one
/// waits, the others instantiate), each get their own answer, and none
/// waits for a spare that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_calls_back_to_back_and_side_by_side_each_get_their_answer() {
    let (registry, _dir) = load("py_units", None).await;
    let registry = std::sync::Arc::new(registry);
    let convert = |registry: std::sync::Arc<ToolRegistry>, km: u32| async move {
        let out = call(
            &registry,
            "py_convert_units",
            json!({"value": km, "from_unit": "km", "to_unit": "m"}),
        )
        .await
        .expect("converts");
        assert_eq!(out["value"], json!(f64::from(km) * 1000.0), "{km} km");
    };
    for km in 0..40 {
        convert(registry.clone(), km).await;
    }
    let callers = (0..4).map(|caller| {
        let registry = registry.clone();
        tokio::spawn(async move {
            for km in 0..15 {
                convert(registry.clone(), caller * 100 + km).await;
            }
        })
    });
    for caller in futures::future::join_all(callers).await {
        caller.expect("the caller finishes");
    }
}

#[tokio::test]
async fn python_tool_error_and_schema_violation_have_their_kinds() {
    let (registry, _dir) = load("py_units", None).await;
    expect_error(
        &registry,
        "py_convert_units",
        json!({"value": 1, "from_unit": "kg", "to_unit": "m"}),
        ToolErrorKind::InvalidInput,
        "cannot convert mass",
    )
    .await;
    // Refused by the host's schema check before the guest runs.
    expect_error(
        &registry,
        "py_convert_units",
        json!({"value": "one", "from_unit": "kg", "to_unit": "g"}),
        ToolErrorKind::InvalidInput,
        "value",
    )
    .await;
    expect_error(
        &registry,
        "py_list_units",
        json!({"category": "colour"}),
        ToolErrorKind::InvalidInput,
        "category",
    )
    .await;
}

#[tokio::test]
async fn python_tool_runs_out_of_fuel_on_a_big_input() {
    let manifest = "[limits]\nfuel = 3000000\n[config]\nprecision = \"6\"\n";
    let (registry, _dir) = load("py_units", Some(manifest)).await;
    // A small call fits in the budget...
    call(
        &registry,
        "py_convert_units",
        json!({"value": 1, "from_unit": "kg", "to_unit": "g"}),
    )
    .await
    .expect("a small call fits in 3 M fuel");
    // ...parsing and echoing 400 KB does not.
    let input = json!({"value": 1, "from_unit": big_text(400_000), "to_unit": "g"});
    expect_error(
        &registry,
        "py_convert_units",
        input,
        ToolErrorKind::OutOfFuel,
        "",
    )
    .await;
}

// ---- JavaScript ----

#[tokio::test]
async fn js_tool_reads_and_diffs_json() {
    let (registry, _dir) = load("js_json", None).await;
    let doc = json!({"items": [{"name": "a"}, {"name": "b", "tags": ["x"]}]}).to_string();
    let out = call(
        &registry,
        "js_json_get",
        json!({"document": doc, "path": "items[1].tags[0]"}),
    )
    .await
    .expect("finds");
    assert_eq!(out, json!({"found": true, "value": "x", "type": "string"}));
    let out = call(
        &registry,
        "js_json_get",
        json!({"document": doc, "path": "items[5]"}),
    )
    .await
    .expect("reports a miss");
    assert_eq!(out["found"], json!(false));
    let out = call(
        &registry,
        "js_json_diff",
        json!({"before": "{\"a\":1,\"b\":[1,2]}", "after": "{\"a\":2,\"b\":[1],\"c\":null}"}),
    )
    .await
    .expect("diffs");
    assert_eq!(
        out["changes"],
        json!([
            {"path": ".a", "change": "changed", "before": 1, "after": 2},
            {"path": ".b[1]", "change": "removed", "before": 2},
            {"path": ".c", "change": "added", "after": null},
        ])
    );
}

#[tokio::test]
async fn js_tool_error_and_schema_violation_have_their_kinds() {
    let (registry, _dir) = load("js_json", None).await;
    expect_error(
        &registry,
        "js_json_get",
        json!({"document": "{not json", "path": "a"}),
        ToolErrorKind::InvalidInput,
        "document is not valid JSON",
    )
    .await;
    expect_error(
        &registry,
        "js_json_get",
        json!({"document": "{}"}),
        ToolErrorKind::InvalidInput,
        "path",
    )
    .await;
    expect_error(
        &registry,
        "js_json_diff",
        json!({"before": "1", "after": "2", "max_changes": 0}),
        ToolErrorKind::InvalidInput,
        "max_changes",
    )
    .await;
}

#[tokio::test]
async fn js_tool_runs_out_of_fuel_on_a_big_diff() {
    let (registry, _dir) = load("js_json", Some("[limits]\nfuel = 5000000\n")).await;
    call(
        &registry,
        "js_json_diff",
        json!({"before": "[1]", "after": "[2]"}),
    )
    .await
    .expect("a small diff fits in 5 M fuel");
    let items: Vec<Value> = (0..3000).map(|i| json!({"id": i, "v": i})).collect();
    let changed: Vec<Value> = (0..3000).map(|i| json!({"id": i, "v": i + 1})).collect();
    let input = json!({"before": json!(items).to_string(), "after": json!(changed).to_string(), "max_changes": 1000});
    expect_error(
        &registry,
        "js_json_diff",
        input,
        ToolErrorKind::OutOfFuel,
        "",
    )
    .await;
}

// ---- C ----

#[tokio::test]
async fn c_tool_hashes_and_encodes() {
    let (registry, _dir) = load("c_hash", None).await;
    let out = call(&registry, "c_hash", json!({"text": "hello world"}))
        .await
        .expect("hashes");
    // zlib.crc32(b"hello world") == 0x0d4a1185
    assert_eq!(
        out,
        json!({"algorithm": "crc32", "hex": "0d4a1185", "value": 0x0d4a_1185_u32, "bytes": 11})
    );
    let out = call(
        &registry,
        "c_hash",
        json!({"text": "", "algorithm": "fnv1a64"}),
    )
    .await
    .expect("hashes");
    assert_eq!(out["hex"], "cbf29ce484222325");
    let out = call(
        &registry,
        "c_base64",
        json!({"mode": "encode", "text": "héllo \"q\"\n"}),
    )
    .await
    .expect("encodes");
    assert_eq!(out, json!({"text": "aMOpbGxvICJxIgo="}));
    let out = call(
        &registry,
        "c_base64",
        json!({"mode": "decode", "text": "aMOpbGxvICJxIgo="}),
    )
    .await
    .expect("decodes");
    assert_eq!(out, json!({"text": "héllo \"q\"\n", "bytes": 11}));
}

#[tokio::test]
async fn c_tool_reads_its_default_from_the_manifest_config() {
    let (registry, _dir) = load(
        "c_hash",
        Some("[config]\ndefault_algorithm = \"fnv1a32\"\n"),
    )
    .await;
    let out = call(&registry, "c_hash", json!({"text": "a"}))
        .await
        .expect("hashes");
    assert_eq!(out["algorithm"], "fnv1a32");
    assert_eq!(out["hex"], "e40c292c");
}

#[tokio::test]
async fn c_tool_error_and_schema_violation_have_their_kinds() {
    let (registry, _dir) = load("c_hash", None).await;
    expect_error(
        &registry,
        "c_base64",
        json!({"mode": "decode", "text": "!!"}),
        ToolErrorKind::InvalidInput,
        "not base64",
    )
    .await;
    // 0xff is not UTF-8: the tool refuses rather than emit a broken string.
    expect_error(
        &registry,
        "c_base64",
        json!({"mode": "decode", "text": "/w=="}),
        ToolErrorKind::InvalidInput,
        "UTF-8",
    )
    .await;
    expect_error(
        &registry,
        "c_hash",
        json!({"text": "x", "algorithm": "md5"}),
        ToolErrorKind::InvalidInput,
        "algorithm",
    )
    .await;
    expect_error(
        &registry,
        "c_base64",
        json!({"text": "x"}),
        ToolErrorKind::InvalidInput,
        "mode",
    )
    .await;
}

#[tokio::test]
async fn c_tool_runs_out_of_fuel_on_a_big_input() {
    let (registry, _dir) = load("c_hash", Some("[limits]\nfuel = 1000000\n")).await;
    call(&registry, "c_hash", json!({"text": "short"}))
        .await
        .expect("fits in 1 M fuel");
    // CRC-32 bit by bit: ~100 fuel per byte.
    expect_error(
        &registry,
        "c_hash",
        json!({"text": big_text(200_000)}),
        ToolErrorKind::OutOfFuel,
        "",
    )
    .await;
}

// ---- Go ----

#[tokio::test]
async fn go_tool_finds_and_replaces_with_re2() {
    let (registry, _dir) = load("go_regex", None).await;
    let out = call(
        &registry,
        "go_regex_find",
        json!({"pattern": "(\\w+)@(\\w+)\\.com", "text": "a@b.com, cc@dd.com"}),
    )
    .await
    .expect("finds");
    assert_eq!(out["count"], 2);
    assert_eq!(
        out["matches"][1],
        json!({"match": "cc@dd.com", "start": 9, "end": 18, "groups": ["cc", "dd"]})
    );
    let out = call(
        &registry,
        "go_regex_replace",
        json!({"pattern": "(\\w+)@", "text": "a@b.com", "replacement": "<$1>@"}),
    )
    .await
    .expect("replaces");
    assert_eq!(out, json!({"text": "<a>@b.com", "replacements": 1}));
}

#[tokio::test]
async fn go_tool_error_and_schema_violation_have_their_kinds() {
    let (registry, _dir) = load("go_regex", None).await;
    expect_error(
        &registry,
        "go_regex_find",
        json!({"pattern": "(", "text": "x"}),
        ToolErrorKind::InvalidInput,
        "does not compile",
    )
    .await;
    expect_error(
        &registry,
        "go_regex_find",
        json!({"pattern": "x", "text": "x", "max_matches": 0}),
        ToolErrorKind::InvalidInput,
        "max_matches",
    )
    .await;
    expect_error(
        &registry,
        "go_regex_replace",
        json!({"pattern": "x", "text": "x"}),
        ToolErrorKind::InvalidInput,
        "replacement",
    )
    .await;
}

#[tokio::test]
async fn go_tool_runs_out_of_fuel_on_a_big_input() {
    // The Go runtime's start-up alone burns ~5 M fuel per fresh instance.
    let (registry, _dir) = load("go_regex", Some("[limits]\nfuel = 12000000\n")).await;
    call(
        &registry,
        "go_regex_find",
        json!({"pattern": "a", "text": "banana"}),
    )
    .await
    .expect("a small call fits in 12 M fuel");
    let input =
        json!({"pattern": "(\\w+) (\\w+)", "text": big_text(400_000), "max_matches": 10000});
    expect_error(
        &registry,
        "go_regex_find",
        input,
        ToolErrorKind::OutOfFuel,
        "",
    )
    .await;
}

// ---- all together ----

#[tokio::test]
async fn every_language_loads_into_one_registry() {
    let names = ["py_units", "js_json", "c_hash", "go_regex"];
    for name in names {
        warm(name).await;
    }
    let dir = plugin_subset(&names);
    let host = PluginHost::new(host_config()).expect("a plugin host");
    let report = host
        .load_dir(dir.path())
        .await
        .expect("the directory lists");
    assert!(
        report.errors.is_empty(),
        "{:?}",
        report
            .errors
            .iter()
            .map(|e| format!("{e:#}"))
            .collect::<Vec<_>>()
    );
    let registry = report.registry().expect("the loaded tools register");
    let mut tools: Vec<String> = registry.snapshot().keys().collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "c_base64",
            "c_hash",
            "go_regex_find",
            "go_regex_replace",
            "js_json_diff",
            "js_json_get",
            "py_convert_units",
            "py_list_units",
        ]
    );
    let plugins: Vec<PathBuf> = report.plugins.iter().map(|p| p.path().to_owned()).collect();
    assert!(
        plugins
            .iter()
            .all(|p| p.parent() == Some(Path::new(dir.path())))
    );
}
