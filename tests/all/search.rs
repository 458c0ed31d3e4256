//! `toolhost search`: what the tool index finds, as a user runs it on the
//! bundled plugins.

use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::plugins::{plugin_subset, toolhost_bin, workspace_root};

fn search(plugins: &std::path::Path, args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .arg("search")
        .arg("--plugins")
        .arg(plugins)
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
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
