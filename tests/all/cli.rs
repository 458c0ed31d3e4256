//! The `toolhost` binary, as a user runs it: exit codes, `--json` shapes,
//! input from flags, files and stdin.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolhost_tests::plugins::{
    copy_plugin_from, hostile_dir, plugin_dir, plugin_subset, toolhost_bin, workspace_root,
};

fn toolhost(args: &[&str]) -> Output {
    toolhost_stdin(args, None)
}

fn toolhost_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(toolhost_bin())
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolhost starts");
    let mut pipe = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// stdout as exactly one JSON value.
fn json_out(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn dir(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn call_prints_one_json_object_and_exits_0_on_success() {
    let plugins = plugin_subset(&["calc"]);
    let out = toolhost(&[
        "call",
        "calc_eval",
        "--input",
        r#"{"expression":"6*7"}"#,
        "--plugins",
        dir(plugins.path()),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        json_out(&out),
        json!({"ok": true, "output": {"value": 42.0}})
    );
}

#[test]
fn call_reads_input_from_a_file_and_from_stdin() {
    let plugins = plugin_subset(&["calc"]);
    let input = plugins.path().join("input.json");
    std::fs::write(&input, r#"{"expression":"1+2"}"#).unwrap();
    let out = toolhost(&[
        "call",
        "calc_eval",
        "--input-file",
        dir(&input),
        "-p",
        dir(plugins.path()),
        "--json",
    ]);
    assert_eq!(json_out(&out)["output"], json!({"value": 3.0}));

    let out = toolhost_stdin(
        &["call", "calc_eval", "-p", dir(plugins.path()), "--json"],
        Some(r#"{"expression":"2+2"}"#),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_out(&out)["output"], json!({"value": 4.0}));
}

#[test]
fn failed_calls_exit_1_with_a_kind() {
    let plugins = plugin_subset(&["calc"]);
    let p = dir(plugins.path());
    let cases = [
        (
            vec!["call", "calc_eval", "--input", "{oops", "-p", p, "--json"],
            "invalid_input",
        ),
        (
            vec![
                "call",
                "calc_eval",
                "--input",
                r#"{"expression": 5}"#,
                "-p",
                p,
                "--json",
            ],
            "invalid_input",
        ),
        (
            vec![
                "call",
                "calc_eval",
                "--input",
                r#"{"expression":"1/0"}"#,
                "-p",
                p,
                "--json",
            ],
            "invalid_input",
        ),
        (
            vec!["call", "nope", "--input", "{}", "-p", p, "--json"],
            "unknown_tool",
        ),
    ];
    for (args, kind) in cases {
        let out = toolhost(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let v = json_out(&out);
        assert_eq!(v["ok"], json!(false), "{v}");
        assert_eq!(v["error"]["kind"], json!(kind), "{args:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
}

#[test]
fn sandbox_limits_surface_as_kinds_on_the_command_line() {
    let h = hostile_dir();
    for (tool, kind) in [
        ("hostile_spin", "timeout"),
        ("hostile_burn", "out_of_fuel"),
        ("hostile_membomb", "memory_limit"),
        ("hostile_panic", "trap"),
    ] {
        let wasm = h.join(format!("{}.wasm", tool_plugin(tool)));
        let out = toolhost(&["call", tool, "--input", "{}", "-p", dir(&wasm), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        assert_eq!(json_out(&out)["error"]["kind"], json!(kind), "{tool}");
    }
}

fn tool_plugin(tool: &str) -> &'static str {
    match tool {
        "hostile_spin" => "hostile_spin",
        "hostile_burn" => "hostile_fuel",
        "hostile_membomb" => "hostile_membomb",
        _ => "hostile_crash",
    }
}

#[test]
fn usage_and_configuration_errors_exit_2() {
    let out = toolhost(&[
        "call",
        "calc_eval",
        "--input",
        "{}",
        "-p",
        "/no/such/dir",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_out(&out)["ok"], json!(false));

    let out = toolhost(&["call", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));

    let plugins = plugin_subset(&["calc"]);
    let bad = plugins.path().join("toolhost.toml");
    std::fs::write(&bad, "limits = 3").unwrap();
    let out = toolhost(&["list", "-p", dir(plugins.path()), "--config", dir(&bad)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid host config"));
}

#[test]
fn list_shows_every_tool_with_its_plugin_limits_and_grants() {
    // The bundled `fetch` asks for these origins; without them it is refused.
    let allow_fetch = [
        "--allow-http",
        "https://api.github.com",
        "--allow-http",
        "https://*.wikipedia.org",
    ];
    let list = |json: bool| {
        let mut args = vec!["list", "--plugins", dir(plugin_dir())];
        args.extend(allow_fetch);
        if json {
            args.push("--json");
        }
        toolhost(&args)
    };
    let out = list(true);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v = json_out(&out);
    let tools = v["tools"].as_array().unwrap();
    let calc = tools
        .iter()
        .find(|t| t["name"] == "calc_eval")
        .expect("calc_eval listed");
    assert_eq!(calc["input_schema"]["required"], json!(["expression"]));
    assert_eq!(calc["source"]["plugin"], json!("calc"));
    assert!(calc["source"]["limits"]["fuel"].as_u64().unwrap() > 0);
    let files = tools
        .iter()
        .find(|t| t["name"] == "files_read")
        .expect("files_read listed");
    assert_eq!(
        files["source"]["permissions"]["dirs"][0]["guest"],
        json!("/data")
    );
    let fetch = tools
        .iter()
        .find(|t| t["name"] == "fetch_json")
        .expect("fetch_json listed");
    assert_eq!(
        fetch["source"]["permissions"]["http"]["origins"],
        json!(["https://api.github.com", "https://*.wikipedia.org"])
    );
    assert_eq!(v["errors"], json!([]));

    let text = list(false);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("calc_eval")
            && text.contains("limits:")
            && text.contains("grants: dir")
            && text.contains("grants: http https://api.github.com"),
        "{text}"
    );
}

#[test]
fn a_cold_start_reports_each_compile_and_a_warm_start_compiles_nothing() {
    let plugins = plugin_subset(&["calc", "text", "scratchpad"]);
    let cache = tempfile::tempdir().unwrap();
    let list = || {
        let out = toolhost(&[
            "list",
            "-p",
            dir(plugins.path()),
            "--cache-dir",
            dir(cache.path()),
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let tools = json_out(&out)["tools"].as_array().unwrap().len();
        (tools, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // The three compile side by side; each start and end is reported.
    let (tools, stderr) = list();
    assert!(tools >= 3, "{stderr}");
    for name in ["calc", "text", "scratchpad"] {
        assert!(
            stderr.contains(&format!("compiling plugin {name} ")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("compiled plugin {name} in")),
            "{stderr}"
        );
    }
    let (warm_tools, stderr) = list();
    assert_eq!(warm_tools, tools);
    assert!(!stderr.contains("compil"), "{stderr}");
}

#[test]
fn list_reports_a_broken_plugin_and_still_lists_the_rest() {
    let plugins = plugin_subset(&["calc"]);
    std::fs::write(plugins.path().join("broken.wasm"), b"nope").unwrap();
    let out = toolhost(&["list", "-p", dir(plugins.path()), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(v["tools"][0]["name"], json!("calc_eval"));
    assert!(
        v["errors"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("broken.wasm"),
        "{v}"
    );
}

#[test]
fn inspect_shows_the_world_the_manifest_and_the_cache_state() {
    let plugins = plugin_subset(&["files"]);
    let wasm = plugins.path().join("files.wasm");
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let out = Command::new(toolhost_bin())
            .args([
                "inspect",
                dir(&wasm),
                "--json",
                "--cache-dir",
                dir(cache.path()),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        json_out(&out)
    };
    let first = run();
    assert!(
        first["exports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "toolhost:plugin/tool@0.2.0"),
        "{first}"
    );
    assert!(
        first["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "toolhost:plugin/host@0.2.0"),
        "{first}"
    );
    assert_eq!(first["cache"]["cached_before"], json!(false));
    assert_eq!(
        first["plugin"]["permissions"]["dirs"][0]["guest"],
        json!("/data")
    );
    assert!(
        first["plugin"]["manifest"]
            .as_str()
            .unwrap()
            .ends_with("files.toml")
    );
    assert_eq!(first["cache"]["tools_from_cache"], json!(false));
    let second = run();
    assert_eq!(second["cache"]["cached_before"], json!(true));
    assert_eq!(second["cache"]["tools_from_cache"], json!(true));
    assert_eq!(second["tools"], first["tools"]);

    let text = Command::new(toolhost_bin())
        .args(["inspect", dir(&wasm), "--cache-dir", dir(cache.path())])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("exports:") && text.contains("limits:") && text.contains("dir "),
        "{text}"
    );
}

#[test]
fn inspect_explains_a_file_that_is_not_a_plugin() {
    let dir_ = tempfile::tempdir().unwrap();
    let bad = dir_.path().join("x.wasm");
    std::fs::write(&bad, b"\0asm\x01\0\0\0").unwrap();
    let out = toolhost(&["inspect", dir(&bad), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        json_out(&out)["error"]
            .as_str()
            .unwrap()
            .contains("component")
    );
}

#[test]
fn a_load_error_says_why_not_only_what() {
    let temp = tempfile::tempdir().unwrap();
    let missing = temp.path().join("no-such-dir");
    let out = toolhost(&["list", "--plugins", dir(&missing)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read plugin directory") && stderr.contains("No such file"),
        "{stderr}"
    );

    // A file that is not a component: the compiler's reason is in the message.
    std::fs::write(temp.path().join("junk.wasm"), b"\0asm junk").unwrap();
    let out = toolhost(&["list", "--plugins", dir(temp.path()), "--json"]);
    let errors = json_out(&out)["errors"].to_string();
    assert!(
        errors.contains("junk.wasm: could not load the component: not a WebAssembly component"),
        "{errors}"
    );
}

/// `[[mcp]]` table `name`: `toolhost serve` on `dir`, its tools without a
/// prefix (so they may clash with others').
fn twin_server(name: &str, dir: &Path) -> String {
    format!(
        "[[mcp]]\nname = {}\ncommand = {}\nargs = [\"serve\", \"--plugins\", {}, \"--cache-dir\", {}]\nprefix = \"\"\n",
        json!(name),
        json!(toolhost_bin()),
        json!(dir),
        json!(workspace_root().join("target").join("test-cache")),
    )
}

#[test]
fn list_shows_only_the_served_tools_and_each_refused_one_as_an_error() {
    // calc_eval is the plugin's; server `one` serves calc_eval (refused)
    // and text_*; server `two` the same (all refused: `one` comes first).
    let plugins = plugin_subset(&["calc"]);
    let served = plugin_subset(&["calc", "text"]);
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        [
            twin_server("one", served.path()),
            twin_server("two", served.path()),
        ]
        .join("\n"),
    )
    .unwrap();
    let args = |json: bool| {
        let mut args = vec![
            "list",
            "--plugins",
            dir(plugins.path()),
            "--config",
            dir(&config),
        ];
        if json {
            args.push("--json");
        }
        args
    };
    let out = toolhost(&args(true));
    assert!(out.status.success(), "{out:?}");
    let listed = json_out(&out);
    let tools = listed["tools"].as_array().unwrap();
    let sources = |name: &str| -> Vec<Value> {
        tools
            .iter()
            .filter(|t| t["name"] == name)
            .map(|t| t["source"].clone())
            .collect()
    };
    let calc = sources("calc_eval");
    assert_eq!(calc.len(), 1, "calc_eval listed more than once: {calc:?}");
    assert_eq!(calc[0]["plugin"], "calc", "{calc:?}");
    let stats = sources("text_stats");
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!(stats[0]["server"], "one", "{stats:?}");
    let errors = listed["errors"].as_array().unwrap();
    let refusals = |tool: &str, by: &str| {
        errors.iter().any(|e| {
            e["tool"] == tool
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("MCP server `{by}`")))
        })
    };
    assert!(refusals("calc_eval", "one"), "{errors:?}");
    assert!(refusals("calc_eval", "two"), "{errors:?}");
    assert!(refusals("text_stats", "two"), "{errors:?}");

    // For people: each tool once, each refusal on a `failed:` line.
    let out = toolhost(&args(false));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("  - calc_eval:").count(), 1, "{text}");
    assert_eq!(text.matches("  - text_stats:").count(), 1, "{text}");
    let failed: Vec<&str> = text.lines().filter(|l| l.starts_with("failed: ")).collect();
    assert!(
        failed
            .iter()
            .any(|l| l.contains("calc_eval") && l.contains("MCP server `two`")),
        "{text}"
    );
    // `call` runs what `list` shows: the plugin's calc_eval.
    let out = toolhost(&[
        "call",
        "calc_eval",
        "--input",
        r#"{"expression": "6*7"}"#,
        "--plugins",
        dir(plugins.path()),
        "--config",
        dir(&config),
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// A directory with no plugin in it (a project's source, not its build) is
/// said to be so by every command, with where the plugins likely are: a
/// `dist/` or `target/plugins` beside it, or the project's own build.sh.
#[test]
fn a_plugin_dir_without_plugins_says_so_and_where_they_are() {
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path();
    std::fs::write(project.join("build.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(project.join("plugin.toml"), "").unwrap();
    let build = project.join("build.sh").display().to_string();

    // Not built: call names the project's build script, not the checkout's.
    let out = toolhost(&[
        "call",
        "x_greet",
        "--input",
        "{}",
        "-p",
        dir(project),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let message = json_out(&out)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("holds no plugin"), "{message}");
    assert!(message.contains(&build), "{message}");
    assert!(
        !message.contains("available: ,") && !message.ends_with("available: "),
        "{message}"
    );
    // list (and every other command) warns on stderr.
    let out = toolhost(&["list", "-p", dir(project)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("holds no plugin") && stderr.contains(&build),
        "{stderr}"
    );
    // The build's directory is missing: so is said, with the same advice.
    let dist = project.join("dist");
    let out = toolhost(&["list", "-p", dir(&dist)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not exist") && stderr.contains(&build),
        "{stderr}"
    );
    assert!(!stderr.contains("plugins/build.sh"), "{stderr}");

    // Built (a dist/, or a target/plugins): the directory to pass instead.
    for built in [dist.clone(), project.join("target").join("plugins")] {
        let with = tempfile::tempdir().unwrap();
        let root = with.path();
        std::fs::create_dir_all(root.join(built.strip_prefix(project).unwrap())).unwrap();
        let built = root.join(built.strip_prefix(project).unwrap());
        toolhost_tests::plugins::copy_plugin("calc", &built);
        let out = toolhost(&[
            "call",
            "calc_eval",
            "--input",
            "{}",
            "-p",
            dir(root),
            "--json",
        ]);
        let message = json_out(&out)["error"]["message"].to_string();
        assert!(
            message.contains(&format!("--plugins {}", built.display())),
            "{message}"
        );
    }
}

/// A TOML error is several lines (the line, a caret under the column):
/// shown as lines, indented under the error, never with `\n` escapes, and
/// a control character from the file stays escaped.
#[test]
fn toml_errors_print_as_lines() {
    let plugins = plugin_subset(&["calc"]);
    let config = plugins.path().join("host.toml");
    std::fs::write(&config, "max_instances = \"many\x1b[2J\"\n").unwrap();
    let out = toolhost(&["list", "-p", dir(plugins.path()), "--config", dir(&config)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: invalid host config"), "{stderr}");
    assert!(stderr.lines().count() >= 3, "{stderr}");
    assert!(
        stderr.lines().skip(1).all(|l| l.starts_with("  ")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("\\n") && !stderr.contains('\x1b'),
        "{stderr}"
    );
    assert!(stderr.contains("\\u{1b}[2J"), "{stderr}");

    // A plugin's manifest: the same, where list reports the plugin.
    std::fs::write(plugins.path().join("calc.toml"), "[limits\nfuel = 1\n").unwrap();
    let out = toolhost(&["list", "-p", dir(plugins.path())]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed = &stdout[stdout.find("failed: ").expect("a failed line")..];
    assert!(failed.contains("invalid manifest"), "{stdout}");
    assert!(failed.lines().count() >= 3, "{stdout}");
    assert!(
        failed.lines().skip(1).all(|l| l.starts_with("    ")),
        "{stdout}"
    );
    assert!(!failed.contains("\\n"), "{stdout}");
}

/// Input for `chart_draw`: a small bar chart.
fn chart_input() -> String {
    json!({
        "kind": "bar",
        "title": "Sales",
        "labels": ["Jan", "Feb", "Mar"],
        "series": [{"name": "2026", "values": [3, 5, 2]}],
        "width": 320,
        "height": 200,
    })
    .to_string()
}

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The paths `call` printed on stderr for the parts it wrote, by media
/// type.
fn saved_paths(out: &Output) -> Vec<(String, std::path::PathBuf)> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| {
            let (head, path) = line.split_once(" bytes): ")?;
            let (media_type, _) = head.split_once(" (")?;
            Some((media_type.to_owned(), path.into()))
        })
        .collect()
}

#[test]
fn call_writes_a_tools_image_to_a_file_and_prints_its_path() {
    let plugins = plugin_subset(&["chart"]);
    let media = tempfile::tempdir().unwrap();
    let input = chart_input();
    let args = |media_dir: Option<&str>| {
        let mut args = vec![
            "call",
            "chart_draw",
            "--input",
            &input,
            "--plugins",
            dir(plugins.path()),
        ];
        if let Some(media_dir) = media_dir {
            args.extend(["--media-dir", media_dir]);
        }
        toolhost(&args)
    };
    // Into the directory asked for; a second call never overwrites the
    // first's file.
    let mut written = Vec::new();
    for _ in 0..2 {
        let out = args(Some(dir(media.path())));
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        // stdout is still the output alone.
        let summary = json_out(&out);
        let saved = saved_paths(&out);
        let [(media_type, path)] = saved.as_slice() else {
            panic!("one image path on stderr: {out:?}")
        };
        assert_eq!(media_type, "image/png");
        assert_eq!(path.parent(), Some(media.path()), "{path:?}");
        assert_eq!(path.extension().unwrap(), "png");
        let png = std::fs::read(path).unwrap();
        assert_eq!(&png[..8], PNG_MAGIC);
        assert_eq!(summary["bytes"], json!(png.len()), "{summary}");
        written.push(path.clone());
    }
    assert_ne!(written[0], written[1], "a new name for the second file");
    // Without --media-dir: a new directory in the temp directory.
    let out = args(None);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let saved = saved_paths(&out);
    let [(_, path)] = saved.as_slice() else {
        panic!("one image path on stderr: {out:?}")
    };
    assert!(path.starts_with(std::env::temp_dir()), "{path:?}");
    assert_eq!(&std::fs::read(path).unwrap()[..8], PNG_MAGIC);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    // A tool without media writes nothing and says nothing of files.
    let calc = plugin_subset(&["calc"]);
    let out = toolhost(&[
        "call",
        "calc_eval",
        "--input",
        r#"{"expression":"1+1"}"#,
        "--plugins",
        dir(calc.path()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(saved_paths(&out).is_empty(), "{out:?}");
}

#[test]
fn call_json_carries_a_tools_image_as_base64_with_its_media_type() {
    use base64::Engine as _;
    let plugins = plugin_subset(&["chart"]);
    let input = chart_input();
    let base = [
        "call",
        "chart_draw",
        "--input",
        &input,
        "--plugins",
        dir(plugins.path()),
        "--json",
    ];
    let out = toolhost(&base);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let answer = json_out(&out);
    assert_eq!(answer["ok"], true, "{answer}");
    let parts = answer["content"].as_array().expect("content parts");
    let [image] = parts.as_slice() else {
        panic!("one part: {answer}")
    };
    assert_eq!(image["type"], "image", "{image}");
    assert_eq!(image["media_type"], "image/png", "{image}");
    assert!(image.get("path").is_none(), "no file unless asked: {image}");
    let png = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().expect("base64 data"))
        .unwrap();
    assert_eq!(&png[..8], PNG_MAGIC);
    assert_eq!(answer["output"]["bytes"], json!(png.len()), "{answer}");
    assert!(
        saved_paths(&out).is_empty(),
        "stderr names no file: {out:?}"
    );
    // With --media-dir too, each part also says where it was written.
    let media = tempfile::tempdir().unwrap();
    let mut args = base.to_vec();
    args.extend(["--media-dir", dir(media.path())]);
    let out = toolhost(&args);
    let answer = json_out(&out);
    let path = answer["content"][0]["path"].as_str().expect("a path");
    assert_eq!(std::fs::read(path).unwrap(), png);
}

#[test]
fn call_has_no_one_to_ask_so_a_tools_question_is_answered_unavailable() {
    let plugins = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_ask", plugins.path());
    for json in [false, true] {
        let mut args = vec![
            "call",
            "hostile_ask",
            "--input",
            "{}",
            "--plugins",
            dir(plugins.path()),
        ];
        if json {
            args.push("--json");
        }
        let out = toolhost(&args);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("no one to ask"), "{stdout}");
    }
}
