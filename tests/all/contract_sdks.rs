//! Plugin contract 0.2 from the Python and JavaScript SDKs, through the
//! library: the bundled `py_textstats` (Python) reports progress in order
//! and answers within its declared output schema; it and `js_sparkline`
//! (JavaScript) return PNG images as image parts; a question nobody can
//! answer comes back to the tool, whose own handling is what the caller
//! sees. (A Python or JS result that breaks its declared schema is covered
//! by the `toolhost new` scaffold tests in `new.rs`.)

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, Content, Progress, ProgressSink, ToolErrorKind, ToolRegistry};
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::plugin_subset;

const PNG_MAGIC: [u8; 8] = *b"\x89PNG\r\n\x1a\n";

/// A registry with the named bundled plugins, from a fresh directory.
async fn load(names: &[&str]) -> (ToolRegistry, tempfile::TempDir) {
    let dir = plugin_subset(names);
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir()))
        .expect("the sandbox starts");
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
    (report.registry().expect("the tools register"), dir)
}

/// The width and height a PNG's IHDR chunk declares.
fn png_size(data: &[u8]) -> (u32, u32) {
    assert_eq!(data[..8], PNG_MAGIC, "not a PNG");
    assert_eq!(&data[12..16], b"IHDR");
    let word = |at: usize| u32::from_be_bytes(data[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

/// Whether `value` fits `schema`, for the part of JSON Schema the SDKs
/// derive (`type`, `properties`, `required`, `items`, `enum`): an
/// independent check beside the host's own.
fn fits(value: &Value, schema: &Value) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!("{value} is not one of {options:?}"));
    }
    let kinds: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let kind_of = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let kind = kind_of(value);
    let kind_fits = kinds.is_empty()
        || kinds.contains(&kind)
        || (kind == "integer" && kinds.contains(&"number"));
    if !kind_fits {
        return Err(format!("{value} is a {kind}, not {kinds:?}"));
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if value.get(key).is_none() {
                return Err(format!("{value} lacks required `{key}`"));
            }
        }
    }
    if let (Some(properties), Some(object)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for (key, item) in object {
            if let Some(inner) = properties.get(key) {
                fits(item, inner).map_err(|e| format!("{key}: {e}"))?;
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for item in array {
            fits(item, items)?;
        }
    }
    Ok(())
}

fn recorder() -> (ProgressSink, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    (sink, seen)
}

#[tokio::test]
async fn python_word_count_reports_progress_in_order_and_answers_within_its_schema() {
    let (registry, _dir) = load(&["py_textstats"]).await;
    let tool = registry.get("py_textstats_words").expect("registered");
    let schema = tool
        .output_schema()
        .expect("an output schema from the TypedDict")
        .clone();
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["top"]["items"]["required"],
        json!(["word", "count", "share"]),
        "{schema}"
    );
    let hints = tool.annotations().expect("annotations");
    assert_eq!(hints.title.as_deref(), Some("Word frequencies"));
    assert_eq!(hints.read_only_hint, Some(true));

    // 6 000 lines: twelve chunks of 500, a report after each.
    let text = "The quick brown fox jumps over the lazy dog. The dog sleeps!\n".repeat(6000);
    let (sink, seen) = recorder();
    let cx = CallContext::default().with_progress(sink);
    let call = registry
        .call(
            "py_textstats_words",
            &json!({"text": text, "top": 3}).to_string(),
            &cx,
        )
        .await;
    let stats = call.output.expect("the words are counted");
    assert!(
        call.structured && call.content.is_empty(),
        "no chart asked for"
    );
    fits(&stats, &schema).unwrap_or_else(|e| panic!("{e}\n{stats}"));
    assert_eq!(stats["lines"], 6000);
    assert_eq!(stats["sentences"], 12000);
    assert_eq!(stats["words"], 12 * 6000);
    assert_eq!(
        stats["top"],
        json!([
            {"word": "the", "count": 18000, "share": 0.25},
            {"word": "dog", "count": 12000, "share": 0.1667},
            {"word": "brown", "count": 6000, "share": 0.0833},
        ])
    );

    let seen = seen.lock().unwrap().clone();
    // The host passes on at most one report per 20 ms, so how many of the
    // twelve arrive depends on speed; the first and the last always do.
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].done < w[1].done),
        "in order: {seen:?}"
    );
    assert!(seen.iter().all(|p| p.total == Some(6000.0)), "{seen:?}");
    assert_eq!(seen[0].done, 500.0);
    assert_eq!(
        seen[0].message.as_deref(),
        Some("counted 500 of 6000 lines")
    );
    let last = seen.last().unwrap();
    assert_eq!(
        (last.done, last.message.as_deref()),
        (6000.0, Some("counted 6000 of 6000 lines"))
    );
}

#[tokio::test]
async fn python_csv_statistics_fit_their_schema() {
    let (registry, _dir) = load(&["py_textstats"]).await;
    let schema = registry
        .get("py_textstats_csv")
        .expect("registered")
        .output_schema()
        .expect("an output schema")
        .clone();
    let table =
        "city;population;country\nLyon;522000;FR\nGraz;291000;AT\nTurin;848000;IT\nNice;;FR\n";
    let stats = registry
        .call(
            "py_textstats_csv",
            json!({"table": table}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    fits(&stats, &schema).unwrap_or_else(|e| panic!("{e}\n{stats}"));
    assert_eq!(stats["delimiter"], ";", "detected");
    assert_eq!(stats["rows"], 4);
    let population = &stats["columns"][1];
    assert_eq!(population["kind"], "number", "{population}");
    assert_eq!(
        (population["filled"].clone(), population["empty"].clone()),
        (json!(3), json!(1))
    );
    assert_eq!(population["median"], 522000.0);
    assert_eq!(population["max"], 848000.0);
    assert_eq!(stats["columns"][2]["most_common"], json!({"FR": 2}));
}

#[tokio::test]
async fn a_question_no_one_can_answer_comes_back_to_the_tool_which_says_what_it_needs() {
    let (registry, _dir) = load(&["py_textstats"]).await;
    // One column: no delimiter to detect, so the tool asks the person, and
    // with no one to ask (no approver in this context) it says what to pass.
    let table = "word\nalpha\nbeta\n";
    let e = registry
        .call(
            "py_textstats_csv",
            json!({"table": table}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
    assert!(
        e.message
            .contains("cannot tell this table's delimiter and could not ask the user ("),
        "{e}"
    );
    assert!(e.message.contains("pass `delimiter`"), "{e}");
    // Told the delimiter, it does not need to ask.
    let stats = registry
        .call(
            "py_textstats_csv",
            json!({"table": table, "delimiter": ","}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(stats["columns"][0]["distinct"], 2);
}

#[tokio::test]
async fn python_and_js_tools_return_png_images_as_image_parts() {
    let (registry, _dir) = load(&["py_textstats", "js_sparkline"]).await;
    let cx = CallContext::default();

    let words = registry
        .call(
            "py_textstats_words",
            &json!({"text": "b a b c b a", "top": 3, "chart": true}).to_string(),
            &cx,
        )
        .await;
    let stats = words.output.expect("counted");
    assert!(words.structured);
    assert_eq!(
        stats["top"][0],
        json!({"word": "b", "count": 3, "share": 0.5})
    );
    let [Content::Image { media_type, data }] = words.content.as_slice() else {
        panic!("one image part: {:?}", words.content.len())
    };
    assert_eq!(media_type, "image/png");
    // One 14-pixel bar per word, 4 pixels apart.
    assert_eq!(png_size(data), (320, 4 + 3 * 18));

    let tool = registry.get("js_sparkline_draw").expect("registered");
    let schema = tool
        .output_schema()
        .expect("the declared output schema")
        .clone();
    assert_eq!(
        tool.annotations().and_then(|a| a.title.clone()).as_deref(),
        Some("Draw a sparkline")
    );
    let call = registry
        .call(
            "js_sparkline_draw",
            &json!({"values": [3, 1, 4, 1, 5, 9, 2, 6], "width": 64, "height": 16}).to_string(),
            &cx,
        )
        .await;
    let summary = call.output.expect("drawn");
    fits(&summary, &schema).unwrap_or_else(|e| panic!("{e}\n{summary}"));
    assert_eq!(
        (
            summary["min"].clone(),
            summary["max"].clone(),
            summary["last"].clone()
        ),
        (json!(1), json!(9), json!(6))
    );
    let [Content::Image { media_type, data }] = call.content.as_slice() else {
        panic!("one image part: {:?}", call.content.len())
    };
    assert_eq!(media_type, "image/png");
    assert_eq!(png_size(data), (64, 16));
    assert_eq!(summary["bytes"], json!(data.len()));

    // An input its schema refuses is still refused before the tool runs.
    let e = registry
        .call("js_sparkline_draw", json!({"values": []}), &cx)
        .await
        .output
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
}
