use serde_json::{Value, json};

use super::*;

fn spec(name: &str, description: &str, input_schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema,
    }
}

fn plain(name: &str, description: &str) -> ToolSpec {
    spec(name, description, json!({"type": "object"}))
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

/// A few tools like the bundled plugins' and an MCP weather server's.
fn catalogue() -> Vec<ToolSpec> {
    vec![
        spec(
            "calc_eval",
            "Evaluate an arithmetic expression exactly as written and return its value.",
            json!({"type": "object", "properties": {
                "expression": {"type": "string", "description": "An arithmetic expression, e.g. `2 * (3 + 4)`."}
            }}),
        ),
        spec(
            "get_forecast",
            "Get the weather forecast for a location.",
            json!({"type": "object", "properties": {
                "latitude": {"type": "number", "description": "Latitude of the location."},
                "longitude": {"type": "number", "description": "Longitude of the location."}
            }}),
        ),
        spec(
            "get_alerts",
            "Get weather alerts for a US state.",
            json!({"type": "object", "properties": {
                "state": {"type": "string", "description": "Two-letter US state code (e.g. CA, NY)."}
            }}),
        ),
        spec(
            "text_find",
            "Find every occurrence of a substring in a text, with line and column of each.",
            json!({"type": "object", "properties": {
                "text": {"type": "string", "description": "The text to search in."},
                "needle": {"type": "string", "description": "The substring to look for."}
            }}),
        ),
        spec(
            "files_read",
            "Read a text file from the plugin's data directory.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "The file's path."}
            }}),
        ),
        spec(
            "convertUnits",
            "Convert a quantity from one unit to another of the same kind.",
            json!({"type": "object", "properties": {
                "from_unit": {"type": "string", "description": "Unit of the value, e.g. km or lb."},
                "to_unit": {"type": "string"}
            }}),
        ),
        spec(
            "c_base64",
            "Encode a text as base64 or decode it.",
            json!({"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["encode", "decode"]}
            }}),
        ),
    ]
}

#[test]
fn a_request_in_other_words_finds_its_tool() {
    let tools = catalogue();
    let index = ToolIndex::new(&tools);
    assert_eq!(index.len(), tools.len());
    for (query, want) in [
        ("weather forecast", "get_forecast"),
        ("will it rain in Paris? check the forecasts", "get_forecast"),
        ("evaluate 2+2*7", "calc_eval"),
        ("arithmetic", "calc_eval"),
        ("any storm alerts in Texas", "get_alerts"),
        ("read the file notes.txt", "files_read"),
        ("converting miles to km", "convertUnits"),
        ("find occurrences of a word in this text", "text_find"),
    ] {
        let hits = index.search(query, 3);
        assert_eq!(
            hits.first().map(|h| h.name.as_str()),
            Some(want),
            "{query:?} found {:?}",
            names(&hits)
        );
    }
}

#[test]
fn names_split_on_separators_case_and_digits() {
    let mut words = Vec::new();
    terms(
        "get_forecast convertUnits HTTPServer base64 json.diff max-bytes 2,340",
        &mut words,
    );
    // A word split on case or digits is also a term whole; a number alone
    // is none.
    assert_eq!(
        words,
        [
            "get",
            "forecast",
            "convert",
            "unit",
            "convertunit",
            "http",
            "server",
            "httpserver",
            "bas",
            "base64",
            "json",
            "diff",
            "max",
            "byt"
        ]
    );
    let index = ToolIndex::new(&catalogue());
    // Words of a name are found on their own.
    assert_eq!(names(&index.search("base", 5)), ["c_base64"]);
    assert_eq!(names(&index.search("convert", 1)), ["convertUnits"]);
    // ... and so is the whole word, in either spelling.
    assert_eq!(names(&index.search("BASE64", 5)), ["c_base64"]);
    assert_eq!(names(&index.search("convertunits", 5)), ["convertUnits"]);
}

#[test]
fn words_are_normalised_the_same_on_both_sides() {
    for (a, b) in [
        ("files", "file"),
        ("matches", "match"),
        ("created", "create"),
        ("creating", "creates"),
        ("running", "run"),
        ("entries", "entry"),
        ("Résumé", "resume"),
        ("STATUS", "status"),
    ] {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        terms(a, &mut x);
        terms(b, &mut y);
        assert_eq!(x, y, "{a} and {b}");
    }
}

#[test]
fn property_names_descriptions_and_enums_are_searched() {
    let index = ToolIndex::new(&catalogue());
    // Only in a property's name.
    assert_eq!(names(&index.search("longitude", 5)), ["get_forecast"]);
    // Only in a property's description.
    assert_eq!(names(&index.search("substring needle", 5)), ["text_find"]);
    // Only in an enum value.
    assert_eq!(names(&index.search("decode", 5)), ["c_base64"]);
    // Nested properties and array items count too.
    let nested = [
        plain("a_tool", "Does a thing."),
        spec(
            "b_tool",
            "Does another thing.",
            json!({"type": "object", "properties": {"rows": {"type": "array", "items": {
                "type": "object", "properties": {"sku": {"type": "string", "description": "A warehouse code."}}
            }}}}),
        ),
    ];
    let index = ToolIndex::new(&nested);
    assert_eq!(names(&index.search("warehouse sku", 5)), ["b_tool"]);
}

#[test]
fn a_name_word_outweighs_the_same_word_in_a_description() {
    let tools = [
        plain(
            "notes_save",
            "Keep a text for later; works with any forecast.",
        ),
        plain("forecast_show", "Show what is expected."),
    ];
    let hits = ToolIndex::new(&tools).search("forecast", 5);
    assert_eq!(names(&hits), ["forecast_show", "notes_save"]);
    assert!(hits[0].score > hits[1].score);
}

#[test]
fn a_query_with_no_known_term_finds_nothing() {
    let index = ToolIndex::new(&catalogue());
    assert!(index.search("", 5).is_empty());
    assert!(index.search("   \t ", 5).is_empty());
    assert!(
        index.search("the and of to", 5).is_empty(),
        "common words only"
    );
    assert!(index.search("zyxwvut qqqq", 5).is_empty(), "unknown words");
    // An unknown word beside a known one does not stop the search.
    assert_eq!(names(&index.search("zyxwvut arithmetic", 5)), ["calc_eval"]);
}

#[test]
fn limit_caps_the_hits() {
    let index = ToolIndex::new(&catalogue());
    let all = index.search("text", 100);
    assert!(all.len() >= 3, "{:?}", names(&all));
    assert_eq!(index.search("text", 2), all[..2]);
    assert!(index.search("text", 0).is_empty());
}

#[test]
fn ties_are_ordered_by_name() {
    let tools = [
        plain("zeta_sync", "Sync a folder."),
        plain("alpha_sync", "Sync a folder."),
        plain("mid_sync", "Sync a folder."),
    ];
    let hits = ToolIndex::new(&tools).search("sync folder", 5);
    assert_eq!(names(&hits), ["alpha_sync", "mid_sync", "zeta_sync"]);
    assert_eq!(hits[0].score, hits[2].score);
}

#[test]
fn an_exact_name_in_the_query_ranks_first() {
    let index = ToolIndex::new(&catalogue());
    // Without the name, the weather tool wins ...
    assert_eq!(
        index.search("the weather forecast", 1)[0].name,
        "get_forecast"
    );
    // ... with it, the named tool does, whatever else the query says.
    let hits = index.search("use `text_find` for the weather forecast", 3);
    assert_eq!(hits[0].name, "text_find");
    assert_eq!(hits[1].name, "get_forecast");
    // A name whose words are all unknown to the rest still counts, once.
    let index = ToolIndex::new(&[plain("x-1", "Nothing."), plain("other", "x x x")]);
    let hits = index.search("x-1 x-1", 5);
    assert_eq!(names(&hits), ["x-1", "other"]);
}

#[test]
fn an_empty_index_finds_nothing() {
    let index = ToolIndex::new(&[]);
    assert!(index.is_empty());
    assert!(index.search("anything", 5).is_empty());
    assert!(ToolIndex::default().search("anything", 5).is_empty());
}

#[test]
fn hostile_specs_are_bounded() {
    // A huge description and a deep, wide schema index without blowing up,
    // and what lies past the caps is not indexed.
    let mut deep = json!({"type": "object", "properties": {"deepword": {"type": "string"}}});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"p": deep}});
    }
    let wide: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| (format!("field{i}"), json!({"type": "string"})))
        .collect();
    let tools = [
        spec("deep", "Deep.", deep),
        spec(
            "wide",
            "Wide.",
            json!({"type": "object", "properties": wide}),
        ),
        plain("long", &format!("{} tailword", "word ".repeat(10_000))),
    ];
    let index = ToolIndex::new(&tools);
    assert!(index.search("deepword", 5).is_empty());
    assert!(index.search("tailword", 5).is_empty());
    assert_eq!(names(&index.search("field0", 5)), ["wide"]);
}

#[test]
fn a_snapshot_keeps_its_index_and_a_registry_change_makes_a_new_one() {
    use crate::tools::{NativeTool, ToolRegistry};
    let tool = |name: &str, description: &str| {
        NativeTool::new(name, description, json!({"type": "object"}), |_| async {
            Ok(json!(null))
        })
    };
    let registry = ToolRegistry::new();
    registry
        .register(tool("get_forecast", "Weather forecast."))
        .unwrap();
    let before = registry.snapshot();
    let index = before.index();
    assert!(
        std::sync::Arc::ptr_eq(&index, &before.index()),
        "built once"
    );
    assert!(before.index().search("glacier", 5).is_empty());
    registry
        .register(tool("glacier_melt", "Glacier melt rates."))
        .unwrap();
    let after = registry.snapshot();
    assert_eq!(after.index().len(), 2);
    assert_eq!(names(&after.index().search("glacier", 5)), ["glacier_melt"]);
    // The old snapshot's index is unchanged.
    assert!(before.index().search("glacier", 5).is_empty());
}

#[test]
fn synonyms_find_a_tool_described_in_other_words_at_a_lower_score() {
    let index = ToolIndex::new(&catalogue());
    assert_eq!(index.search("sum numbers", 1)[0].name, "calc_eval");
    let tools = [
        plain("cal_event_add", "Put an event on the calendar."),
        plain("files_remove", "Remove a file."),
    ];
    let index = ToolIndex::new(&tools);
    assert_eq!(
        names(&index.search("book an appointment", 5)),
        ["cal_event_add"]
    );
    let direct = index.search("remove", 1)[0].score;
    let synonym = index.search("delete", 1);
    assert_eq!(synonym[0].name, "files_remove");
    assert!(synonym[0].score < direct);
}

#[test]
fn a_naming_style_does_not_change_a_tools_rank() {
    // The same tool named the MCP way and the REST way, among others that
    // share its words: both score alike, so neither style wins a tie.
    let tools = [
        plain("k8s-listPod", "List the pods of a cluster."),
        plain("k9s_list_pod", "List the pods of a cluster."),
        plain("k8s-getNode", "Fetch one node of a cluster."),
    ];
    let hits = ToolIndex::new(&tools).search("list the pods", 5);
    assert_eq!(names(&hits[..2]), ["k8s-listPod", "k9s_list_pod"]);
    assert!((hits[0].score - hits[1].score).abs() < 1e-9, "{hits:?}");
    // The whole camelCase run is still a term of its own.
    let hits = ToolIndex::new(&tools).search("listpod", 5);
    assert_eq!(names(&hits), ["k8s-listPod"]);
}

#[test]
fn a_word_finds_the_longer_words_it_begins_at_a_lower_score() {
    let tools = [
        plain("wiki_upload_attachment", "Upload an attachment to a page."),
        plain("wiki_attach_label", "Attach a label to a page."),
        plain("wiki_page_get", "Fetch one page."),
    ];
    let index = ToolIndex::new(&tools);
    let hits = index.search("attach", 5);
    assert_eq!(
        names(&hits),
        ["wiki_attach_label", "wiki_upload_attachment"]
    );
    assert!(hits[0].score > hits[1].score);
    // Short words do not: `get` finds no `getter`, `page` is whole.
    let index = ToolIndex::new(&[plain("getter_make", "Make a getter.")]);
    assert!(index.search("get", 5).is_empty());
}
