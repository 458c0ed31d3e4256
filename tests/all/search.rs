//! `toolhost search`: what the tool index finds, as a user runs it on the
//! bundled plugins.

use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::{plugin_subset, toolhost_bin};

fn search(plugins: &std::path::Path, args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .arg("search")
        .arg("--plugins")
        .arg(plugins)
        .args(args)
        .env("TOOLHOST_CACHE_DIR", test_cache_dir())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("toolhost runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

#[test]
fn search_ranks_the_tools_for_a_request_in_words() {
    let plugins = plugin_subset(&["calc", "text", "py_units", "scratchpad"]);
    let out = stdout(&search(
        plugins.path(),
        &["convert 5 miles into kilometres"],
    ));
    let first = out.lines().next().expect("one line per hit");
    // rank, name, score, the description's first line
    let fields: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(fields[..2], ["1", "py_convert_units"], "{out}");
    assert!(fields[2].parse::<f64>().is_ok(), "{out}");
    assert!(first.contains("Convert a quantity"), "{out}");

    let out = stdout(&search(
        plugins.path(),
        &["save a note for later", "--limit", "2", "--json"],
    ));
    let hits: Value = serde_json::from_str(&out).expect("a JSON list");
    let hits = hits.as_array().expect("a list");
    assert_eq!(hits.len(), 2, "{out}");
    assert_eq!(hits[0]["rank"], 1);
    assert_eq!(hits[0]["name"], "scratchpad_put", "{out}");
    assert_eq!(hits[1]["rank"], 2);
    assert!(hits[0]["score"].as_f64() >= hits[1]["score"].as_f64());
    assert!(hits[0]["description"].as_str().is_some());
    assert_eq!(hits[0]["input_schema"]["type"], "object");
}

#[test]
fn search_for_an_exact_name_puts_it_first_and_unknown_words_find_nothing() {
    let plugins = plugin_subset(&["calc", "text"]);
    let out = stdout(&search(plugins.path(), &["text_stats", "--json"]));
    let hits: Value = serde_json::from_str(&out).expect("a JSON list");
    assert_eq!(hits[0]["name"], "text_stats", "{out}");

    let out = search(plugins.path(), &["zyxwvut qqqq", "--json"]);
    assert_eq!(stdout(&out).trim(), "[]");
    let out = search(plugins.path(), &["zyxwvut qqqq"]);
    assert!(stdout(&out).is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no tool matches"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `serve --tool-search` as a client sees it, over the fast lane and
/// through rmcp: the list, a search, and calls of tools found and not.
#[test]
fn serve_with_tool_search_lists_the_always_on_set_and_the_search_tool() {
    use serde_json::json;
    use toolhost_tests::mcp::ServeStdio;

    let plugins = plugin_subset(&["calc", "text", "py_units"]);
    for lane in [&[][..], &["--no-fast-lane"][..]] {
        let mut flags = vec!["--tool-search", "--always-list", "calc_*"];
        flags.extend_from_slice(lane);
        let mut serve = ServeStdio::start(plugins.path(), &flags);
        let (listed, names) = tool_list(&mut serve);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(names, ["calc_eval", "tool_search"], "{lane:?}: {listed}");
        let search = &listed["result"]["tools"][1];
        assert_eq!(search["inputSchema"]["required"], json!(["query"]));

        serve.call(
            3,
            "tool_search",
            json!({"query": "convert miles to km", "limit": 2}),
        );
        let found = serve.answer(3);
        let result = &found["result"];
        assert_eq!(result["isError"], false, "{lane:?}: {found}");
        let tools = result["structuredContent"]["tools"]
            .as_array()
            .expect("found tools");
        assert!(tools.len() <= 2, "{found}");
        assert_eq!(tools[0]["name"], "py_convert_units", "{found}");
        assert!(tools[0]["description"].as_str().is_some());
        assert_eq!(tools[0]["inputSchema"]["type"], "object");
        // The same as text, for clients that read only content.
        let text = result["content"][0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            result["structuredContent"]
        );

        // A found tool is called by name; so is one never found or listed.
        serve.call(
            4,
            "py_convert_units",
            json!({"value": 1, "from_unit": "mi", "to_unit": "km"}),
        );
        let converted = serve.answer(4);
        assert_ne!(converted["result"]["isError"], true, "{converted}");
        serve.call(5, "text_stats", json!({"text": "two words"}));
        let stats = serve.answer(5);
        assert_ne!(stats["result"]["isError"], true, "{stats}");
        assert!(stats["result"].to_string().contains("words"), "{stats}");

        // A search that finds nothing, and one without a query.
        serve.call(6, "tool_search", json!({"query": "zyxwvut"}));
        let none = serve.answer(6);
        assert_eq!(
            none["result"]["structuredContent"],
            json!({"tools": []}),
            "{none}"
        );
        serve.call(7, "tool_search", json!({"limit": 3}));
        let bad = serve.answer(7);
        assert_eq!(bad["result"]["isError"], true, "{bad}");
    }
}

#[test]
fn serve_without_tool_search_lists_every_tool_and_no_search_tool() {
    use serde_json::json;
    use toolhost_tests::mcp::ServeStdio;

    let plugins = plugin_subset(&["calc", "text"]);
    let mut serve = ServeStdio::start(plugins.path(), &[]);
    let (listed, names) = tool_list(&mut serve);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert!(
        names.contains(&"text_stats") && names.contains(&"calc_eval"),
        "{listed}"
    );
    assert!(!names.contains(&"tool_search"), "{listed}");
    serve.call(3, "tool_search", json!({"query": "words"}));
    let answer = serve.answer(3);
    assert!(
        answer.get("error").is_some() || answer["result"]["isError"] == true,
        "{answer}"
    );
}

/// `tools/list` of `serve`: the answer, and the names it lists in order.
fn tool_list(serve: &mut toolhost_tests::mcp::ServeStdio) -> (Value, Vec<String>) {
    serve.send(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = serve.answer(2);
    let names = listed["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| Some(t["name"].as_str()?.to_owned()))
        .collect();
    (listed, names)
}
