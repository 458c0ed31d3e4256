//! `toolhost new`: for every language, the scaffold builds with its one
//! documented command (`./build.sh`) and its tool answers `toolhost call`;
//! bad names and occupied directories are refused with exit code 2.
//!
//! A language whose toolchain is missing fails its test with a message that
//! says how to install it: the README's test command (`tests/run.sh`)
//! installs every toolchain into `target/toolchains/`, and that directory is
//! put on PATH here as the build scripts do, so `cargo test` alone finds
//! them too once they are installed.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use toolhost_tests::plugins::{toolchain_path, toolhost_bin, workspace_root};

mod offers;

/// The languages whose scaffold offers a resource, a template, a prompt
/// and completions beside its tool ([`offers`]).
const OFFERS_LANGS: &[&str] = &["rust", "python", "js", "c", "go"];

fn toolhost(args: &[&str]) -> Output {
    command(args).output().expect("toolhost runs")
}

/// `toolhost ARGS` with the tests' compile cache and none of the user's
/// SDK, plugins or config.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(toolhost_bin());
    command
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env_remove("TOOLHOST_SDK")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG");
    command
}

/// `toolhost ARGS` run from `dir`, as a user standing in a project runs it.
fn toolhost_in(dir: &Path, args: &[&str]) -> Output {
    command(args)
        .current_dir(dir)
        .output()
        .expect("toolhost runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

fn has(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .env("PATH", toolchain_path())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Mirrors `toolchain_present` in plugins/build.sh.
fn toolchain_present(lang: &str) -> bool {
    match lang {
        "rust" => Command::new("rustup")
            .args(["target", "list", "--installed"])
            .output()
            .is_ok_and(|o| text(&o.stdout).lines().any(|l| l == "wasm32-wasip2")),
        "python" => has("componentize-py"),
        "js" => has("node"),
        "c" => (has("clang-14") || has("clang")) && has("wasm-tools"),
        "go" => has("go") && has("wasm-tools"),
        other => panic!("unknown language {other}"),
    }
}

/// `toolhost call TOOL --json` on the scaffold's dist/ directory.
fn call(dist: &Path, tool: &str, input: &Value) -> (Value, Output) {
    let out = toolhost(&[
        "call",
        tool,
        "--input",
        &input.to_string(),
        "--plugins",
        path(dist),
        "--json",
    ]);
    let stdout = text(&out.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {stdout}\nstderr: {}",
            text(&out.stderr)
        )
    });
    (value, out)
}

/// Scaffold plugin `name` in `lang`, build it with `./build.sh` and call its
/// tool: the greeting comes from the manifest's config, a blank name is the
/// tool's own `invalid_input` error, and an input off the schema is refused.
fn scaffold_builds_and_answers(lang: &str, name: &str) {
    assert!(
        toolchain_present(lang),
        "the {lang} toolchain is not installed: run .ci/install-guest-toolchains.sh \
         (tests/run.sh, the README's test command, does it for you)"
    );
    let parent = tempfile::tempdir().expect("a temp dir");
    let out = toolhost(&["new", "--lang", lang, name, "--dir", path(parent.path())]);
    assert!(
        out.status.success(),
        "toolhost new failed: {}",
        text(&out.stderr)
    );
    let project = parent.path().join(name);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("./build.sh") && stdout.contains(&format!("toolhost call {name}_greet")),
        "no next steps in: {stdout}"
    );
    let readme = std::fs::read_to_string(project.join("README.md")).expect("a README");
    assert!(
        readme.contains("./build.sh")
            && readme.contains(&format!(
                r#"toolhost call {name}_greet --input '{{"name":"Ada"}}' --plugins dist"#
            )),
        "{readme}"
    );

    // Before the first build, `--plugins .` (or `dist`) names the
    // project's own build script, not the toolhost checkout's.
    let greet = format!("{name}_greet");
    for dir in [".", "dist"] {
        let out = toolhost_in(
            &project,
            &["call", &greet, "--input", "{}", "--plugins", dir],
        );
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("./build.sh") && !stderr.contains("plugins/build.sh"),
            "--plugins {dir} before the build: {stderr}"
        );
        assert!(
            stderr.contains(if dir == "." {
                "holds no plugin"
            } else {
                "does not exist"
            }),
            "--plugins {dir}: {stderr}"
        );
    }
    let crash_line = add_crashing_tool(lang, name, &project);
    let lies = add_lying_tool(lang, name, &project);

    // The one documented command, run as the README says (it must be executable).
    let mut build = Command::new(project.join("build.sh"));
    build
        .current_dir(&project)
        .env_remove("TOOLHOST_SDK")
        .env("PATH", toolchain_path());
    if lang == "rust" {
        // Shared across runs so that dependencies build once; the scaffold's
        // own crate is rebuilt each time (its path differs).
        build.env(
            "CARGO_TARGET_DIR",
            workspace_root().join("target").join("scaffold-target"),
        );
    }
    let built = build.output().expect("build.sh runs");
    assert!(
        built.status.success(),
        "{lang} scaffold: ./build.sh failed\nstdout: {}\nstderr: {}",
        text(&built.stdout),
        text(&built.stderr)
    );
    let dist = project.join("dist");
    assert!(dist.join(format!("{name}.wasm")).is_file());
    assert!(dist.join(format!("{name}.toml")).is_file());

    let tool = format!("{name}_greet");
    let (value, out) = call(&dist, &tool, &json!({"name": "Ada"}));
    assert_eq!(
        value,
        json!({"ok": true, "output": {"greeting": "Hello, Ada!"}}),
        "stderr: {}",
        text(&out.stderr)
    );
    assert!(out.status.success());

    // The greeting is the manifest's: change it in dist/NAME.toml.
    let manifest = dist.join(format!("{name}.toml"));
    let edited = std::fs::read_to_string(&manifest)
        .expect("manifest")
        .replace(r#"greeting = "Hello""#, r#"greeting = "Howdy""#);
    std::fs::write(&manifest, edited).expect("write manifest");
    let (value, _) = call(&dist, &tool, &json!({"name": " Grace "}));
    assert_eq!(
        value,
        json!({"ok": true, "output": {"greeting": "Howdy, Grace!"}})
    );

    let (value, out) = call(&dist, &tool, &json!({"name": "  "}));
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["error"]["kind"], "invalid_input", "{value}");
    assert!(
        value["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("blank")),
        "{value}"
    );
    assert_eq!(out.status.code(), Some(1));

    let (value, _) = call(&dist, &tool, &json!({"who": "Ada"}));
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["error"]["kind"], "invalid_input", "{value}");

    // After the build, `--plugins .` points at dist/.
    let out = toolhost_in(
        &project,
        &["call", &greet, "--input", "{}", "--plugins", "."],
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("holds no plugin") && stderr.contains("--plugins ./dist"),
        "{stderr}"
    );

    if let Some(line) = crash_line {
        crash_shows_where(lang, name, &dist, line);
    }
    if lies {
        contract_0_2_samples_work(name, &dist);
    }
    if OFFERS_LANGS.contains(&lang) {
        // The greeting as edited above.
        offers::samples_work(name, &dist, "Howdy");
    }
}

/// Add a tool `NAME_liar` whose answer breaks the output schema it
/// declares (Python: a TypedDict return type; JS: `output`); false for the
/// languages whose scaffold this does not cover.
fn add_lying_tool(lang: &str, name: &str, project: &Path) -> bool {
    let (file, addition) = match lang {
        "python" => (
            "app.py",
            format!(
                "\n\nclass Lie(TypedDict):\n    n: int\n\n\n@tool\ndef {name}_liar() -> Lie:\n    \"\"\"Breaks its output schema.\"\"\"\n    return {{\"n\": \"three\"}}\n"
            ),
        ),
        "js" => (
            "plugin.js",
            format!(
                "  {name}_liar: {{\n    description: \"Breaks its output schema.\",\n    output: {{ type: \"object\", properties: {{ n: {{ type: \"integer\" }} }}, required: [\"n\"] }},\n    run: () => ({{ n: \"three\" }}),\n  }},\n"
            ),
        ),
        _ => return false,
    };
    let path = project.join(file);
    let source = std::fs::read_to_string(&path).expect("the scaffold's source");
    let source = if lang == "python" {
        source + &addition
    } else {
        source.replacen(
            "export const tool = plugin({\n",
            &format!("export const tool = plugin({{\n{addition}"),
            1,
        )
    };
    std::fs::write(&path, source).expect("write the source");
    true
}

/// The Python and JS scaffolds build against contract 0.2: the sample
/// `NAME_count` answers within its output schema, and a result that breaks
/// its declared schema is `output_schema_mismatch`, an error the model sees.
fn contract_0_2_samples_work(name: &str, dist: &Path) {
    let (value, out) = call(
        dist,
        &format!("{name}_count"),
        &json!({"text": "one two\nthree"}),
    );
    assert_eq!(
        value,
        json!({"ok": true, "output": {"lines": 2, "words": 3}}),
        "stderr: {}",
        text(&out.stderr)
    );
    let (value, out) = call(dist, &format!("{name}_liar"), &json!({}));
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["error"]["kind"], "output_schema_mismatch", "{value}");
    assert_eq!(out.status.code(), Some(1));
}

/// Add a tool `NAME_crash` whose bug (an exception, a panic) fires on
/// `{"n": 0}`, as an author's mistake would; returns the source line it
/// fires on (None for C, which has no exceptions or panics to report).
fn add_crashing_tool(lang: &str, name: &str, project: &Path) -> Option<usize> {
    let (file, marker) = match lang {
        "python" => ("app.py", "1 // n"),
        "js" => ("plugin.js", "null.n"),
        "rust" => ("src/lib.rs", "crashing on purpose"),
        "go" => ("plugin.go", "xs[in.N]"),
        _ => return None,
    };
    let path = project.join(file);
    let source = std::fs::read_to_string(&path).expect("the scaffold's source");
    let source = match lang {
        "python" => format!(
            "{source}\n\n@tool\ndef {name}_crash(n: int) -> dict:\n    \"\"\"Divide one by n.\"\"\"\n    return {{\"x\": 1 // n}}\n"
        ),
        "js" => source.replacen(
            "export const tool = plugin({\n",
            &format!(
                "export const tool = plugin({{\n  {name}_crash: {{\n    description: \"Crash.\",\n    input: {{ type: \"object\", properties: {{ n: {{ type: \"integer\" }} }} }},\n    run({{ n }}) {{\n      return n === 0 ? null.n : n;\n    }},\n  }},\n"
            ),
            1,
        ),
        "rust" => source
            .replacen(
                "toolhost_guest::export_tools! {\n",
                &format!("toolhost_guest::export_tools! {{\n    {name}_crash: \"Crash.\" => crash,\n"),
                1,
            )
            + "\n/// Input of the crash tool.\n#[derive(Deserialize, JsonSchema)]\npub struct CrashInput {\n    /// Zero crashes.\n    pub n: u32,\n}\n\n/// Panics on zero.\n///\n/// # Errors\n///\n/// Never: it panics.\npub fn crash(input: CrashInput) -> Result<u32, ToolError> {\n    assert!(input.n != 0, \"crashing on purpose\");\n    Ok(input.n)\n}\n",
        "go" => format!(
            "{source}\ntype crashInput struct {{\n\tN int `json:\"n\"`\n}}\n\nfunc init() {{\n\ttoolhost.Register(\"{name}_crash\", \"Crash.\", func(in crashInput) (any, error) {{\n\t\txs := []int{{}}\n\t\treturn xs[in.N], nil\n\t}})\n}}\n"
        ),
        _ => unreachable!(),
    };
    std::fs::write(&path, &source).expect("write the source");
    let line = source
        .lines()
        .position(|l| l.contains(marker) && !l.contains("description"))
        .expect("the crash line");
    Some(line + 1)
}

/// `toolhost call NAME_crash` says where the tool failed: a Python or
/// JavaScript exception's traceback (`failed`), a Rust or Go panic's
/// message and FILE:LINE (`trap`, the same kind in both), and never a hint
/// (RUST_BACKTRACE) that cannot reach a plugin.
fn crash_shows_where(lang: &str, name: &str, dist: &Path, line: usize) {
    let tool = format!("{name}_crash");
    let out = toolhost(&[
        "call",
        &tool,
        "--input",
        r#"{"n":0}"#,
        "--plugins",
        path(dist),
    ]);
    let all = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{all}");
    // Compile progress may come first.
    let stderr = &all[all
        .find("error: ")
        .unwrap_or_else(|| panic!("no error line: {all}"))..];
    let (kind, located) = match lang {
        "python" => (
            "tool_failed",
            // The author's file, not where componentize-py put it
            // (`/0/app.py`, issue 36).
            format!("File \"app.py\", line {line}, in {name}_crash"),
        ),
        // The bundle's line, not the source's: a frame with a position.
        "js" => ("tool_failed", "TypeError".to_owned()),
        "rust" => ("trap", format!("panicked at src/lib.rs:{line}:")),
        "go" => (
            "trap",
            format!("plugin.go:{line}: runtime error: index out of range"),
        ),
        _ => unreachable!(),
    };
    assert!(
        stderr.starts_with(&format!("error: {kind}: ")),
        "{lang}: {stderr}"
    );
    assert!(
        stderr.contains(&located),
        "{lang}: want {located:?} in {stderr}"
    );
    assert!(!stderr.contains("RUST_BACKTRACE"), "{stderr}");
    if lang == "python" || lang == "js" {
        // The traceback is shown as lines, indented under `error:`.
        let frames: Vec<&str> = stderr.lines().skip(1).collect();
        assert!(!frames.is_empty(), "{stderr}");
        assert!(frames.iter().all(|l| l.starts_with("  ")), "{stderr}");
        assert!(!stderr.contains("\\n"), "{stderr}");
    }
    if lang == "js" {
        assert!(
            stderr
                .lines()
                .any(|l| l.trim_start().starts_with("at ") && l.contains(':')),
            "{stderr}"
        );
    }
    let (value, _) = call(dist, &tool, &json!({"n": 0}));
    assert_eq!(value["error"]["kind"], kind, "{value}");
}

#[test]
fn rust_scaffold_builds_and_answers_toolhost_call() {
    scaffold_builds_and_answers("rust", "scaffold_rs");
}

#[test]
fn python_scaffold_builds_and_answers_toolhost_call() {
    scaffold_builds_and_answers("python", "scaffold_py");
}

#[test]
fn js_scaffold_builds_and_answers_toolhost_call() {
    scaffold_builds_and_answers("js", "scaffold_js");
}

#[test]
fn c_scaffold_builds_and_answers_toolhost_call() {
    scaffold_builds_and_answers("c", "scaffold_c");
}

#[test]
fn go_scaffold_builds_and_answers_toolhost_call() {
    scaffold_builds_and_answers("go", "scaffold_go");
}

#[test]
fn new_refuses_a_non_empty_directory_with_exit_2() {
    let parent = tempfile::tempdir().expect("a temp dir");
    let project = parent.path().join("taken");
    std::fs::create_dir(&project).expect("mkdir");
    std::fs::write(project.join("notes.txt"), "mine").expect("write");
    let out = toolhost(&["new", "--lang", "c", "taken", "--dir", path(parent.path())]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("not empty") && stderr.contains("refusing to overwrite"),
        "{stderr}"
    );
    let entries: Vec<_> = std::fs::read_dir(&project).expect("ls").collect();
    assert_eq!(
        entries.len(),
        1,
        "files were added to a non-empty directory"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).expect("read"),
        "mine"
    );

    // A file in the way is refused too.
    std::fs::write(parent.path().join("afile"), "x").expect("write");
    let out = toolhost(&["new", "--lang", "go", "afile", "--dir", path(parent.path())]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
}

#[test]
fn new_fills_an_existing_empty_directory() {
    let parent = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(parent.path().join("empty")).expect("mkdir");
    let out = toolhost(&[
        "new",
        "--lang",
        "python",
        "empty",
        "--dir",
        path(parent.path()),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let app = std::fs::read_to_string(parent.path().join("empty").join("app.py")).expect("app.py");
    assert!(app.contains("def empty_greet("), "{app}");
}

#[test]
fn new_rejects_an_invalid_name_with_exit_2() {
    let parent = tempfile::tempdir().expect("a temp dir");
    for name in ["Bad-Name", "9lives", "with space"] {
        let out = toolhost(&["new", "--lang", "js", name, "--dir", path(parent.path())]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("invalid plugin name"),
            "{name}: {}",
            text(&out.stderr)
        );
    }
    let out = toolhost(&[
        "new",
        "--lang",
        "rust",
        "serde",
        "--dir",
        path(parent.path()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_dir(parent.path()).expect("ls").count(),
        0,
        "a rejected name created something"
    );
}

#[test]
fn new_rejects_a_directory_that_is_not_a_toolhost_checkout() {
    let parent = tempfile::tempdir().expect("a temp dir");
    let not_sdk = tempfile::tempdir().expect("a temp dir");
    let out = toolhost(&[
        "new",
        "--lang",
        "c",
        "demo",
        "--dir",
        path(parent.path()),
        "--sdk-root",
        path(not_sdk.path()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("wit/plugin.wit") && stderr.contains("--sdk-root"),
        "{stderr}"
    );
    assert!(!parent.path().join("demo").exists());
}

#[test]
fn new_bakes_the_sdk_root_it_was_given_into_the_project() {
    let parent = tempfile::tempdir().expect("a temp dir");
    let root = workspace_root();
    let out = toolhost(&[
        "new",
        "--lang",
        "rust",
        "pinned",
        "--dir",
        path(parent.path()),
        "--sdk-root",
        path(&root),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cargo =
        std::fs::read_to_string(parent.path().join("pinned").join("Cargo.toml")).expect("read");
    let sdk = std::fs::canonicalize(root.join("sdk-guest")).expect("sdk-guest");
    assert!(
        cargo.contains(&format!("path = \"{}\"", sdk.display())),
        "{cargo}"
    );
    assert!(cargo.contains("[workspace]"), "{cargo}");
}

#[test]
fn a_second_export_tools_block_names_the_fix() {
    assert!(
        toolchain_present("rust"),
        "the wasm32-wasip2 target is not installed"
    );
    let parent = tempfile::tempdir().expect("a temp dir");
    let out = toolhost(&[
        "new",
        "--lang",
        "rust",
        "twice",
        "--dir",
        path(parent.path()),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let project = parent.path().join("twice");
    let lib = project.join("src").join("lib.rs");
    let source = std::fs::read_to_string(&lib).expect("lib.rs");
    std::fs::write(
        &lib,
        format!("{source}\ntoolhost_guest::export_tools! {{\n    twice_again: \"Again.\" => greet,\n}}\n"),
    )
    .expect("write lib.rs");
    let built = Command::new(project.join("build.sh"))
        .current_dir(&project)
        .env_remove("TOOLHOST_SDK")
        .env("PATH", toolchain_path())
        .env(
            "CARGO_TARGET_DIR",
            workspace_root().join("target").join("scaffold-target"),
        )
        .output()
        .expect("build.sh runs");
    let stderr = text(&built.stderr);
    assert!(!built.status.success(), "two blocks built: {stderr}");
    assert!(
        stderr.contains("export_tools_may_appear_once_per_crate__list_every_tool_in_one_call"),
        "{stderr}"
    );
}
