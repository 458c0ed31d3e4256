//! What a guest can do to the host through I/O, logs, errors and file
//! handles (issue 11): special files in a grant, huge or escape-laden error
//! messages, forged log lines, file-handle exhaustion, stderr floods. Each
//! ends with an error (or a success) the caller can act on, within the
//! deadline, and the host keeps serving; the CLI exits promptly and shows
//! plugin text escaped.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::fsread;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, SessionId, ToolError, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, toolhost_bin, workspace_root};
use toolhost_tests::wait::CallLog;

/// Far longer than any call here may take (the fixture's deadline is 2 s):
/// reaching it means something hangs.
const HANG: Duration = Duration::from_secs(60);

/// The fixture's handle cap, as the docs state it (`docs/security.md`).
const MAX_OPEN_HANDLES: u64 = 128;

/// A directory with `hostile_io` and `hostile_snoop` (a plugin that just
/// reads a granted file), and a FIFO `fifo` plus a symlink `link` to it in
/// `hostile_io`'s granted `/data`.
fn plugins_with_fifo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_io", dir.path());
    copy_plugin_from(hostile_dir(), "hostile_snoop", dir.path());
    let data = dir.path().join("hostile_io.data");
    let status = Command::new("mkfifo")
        .arg(data.join("fifo"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
    std::os::unix::fs::symlink("fifo", data.join("link")).unwrap();
    dir
}

async fn registry_in(dir: &Path) -> ToolRegistry {
    let mut config = HostConfig {
        cache_dir: Some(workspace_root().join("target").join("test-cache")),
        ..HostConfig::default()
    };
    config.allow.dirs.push(dir.to_owned());
    let host = PluginHost::new(config).expect("the sandbox starts");
    let report = host.load_dir(dir).await.expect("the directory is readable");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report.registry().expect("the loaded tools register")
}

async fn call(registry: &ToolRegistry, tool: &str, input: Value) -> Result<Value, ToolError> {
    call_in(registry, tool, input, &CallContext::default()).await
}

async fn call_in(
    registry: &ToolRegistry,
    tool: &str,
    input: Value,
    cx: &CallContext,
) -> Result<Value, ToolError> {
    tokio::time::timeout(HANG, registry.call(tool, input, cx))
        .await
        .unwrap_or_else(|_| panic!("{tool} hung"))
        .output
}

/// What `toolhost` printed, once it exited.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `toolhost ARGS` with `plugins` as its plugin directory; fail the test
/// if it does not exit within [`HANG`].
fn toolhost(plugins: &Path, args: &[&str]) -> Ran {
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.extend([std::ffi::OsStr::new("--plugins"), plugins.as_os_str()]);
    toolhost_with(&all)
}

/// Run `toolhost ARGS`; fail the test if it does not exit within [`HANG`].
fn toolhost_with(args: &[&std::ffi::OsStr]) -> Ran {
    let mut child = Command::new(toolhost_bin())
        .args(args)
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolhost starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "toolhost {args:?} did not exit within {HANG:?}; stderr: {}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn json_of(ran: &Ran) -> Value {
    serde_json::from_str(ran.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", ran.stdout))
}

/// Every line of the CLI's stderr is a tagged log line, a `toolhost:`
/// progress line, the `error:` line, or a continuation of one indented by
/// four spaces (a multi-line message such as a TOML error, printed as
/// lines): no plugin text starts a line where a tag could stand.
fn assert_no_untagged_lines(stderr: &str) {
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        // tracing pads the level to five columns: at most one space before it.
        let at_margin = line.strip_prefix(' ').unwrap_or(line);
        let tagged = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
            .iter()
            .any(|level| at_margin.starts_with(level))
            || line.starts_with("error: ")
            || line.starts_with("toolhost: ")
            || line.starts_with("    ");
        assert!(
            tagged,
            "an untagged line reached stderr: {line:?}\n{stderr}"
        );
    }
    assert!(!stderr.contains('\u{1b}'), "raw ESC on stderr: {stderr:?}");
    assert!(!stderr.contains('\r'), "raw CR on stderr: {stderr:?}");
}

// --- special files -------------------------------------------------------

/// Run `body` on a runtime of its own, on a thread of its own, and fail if
/// the body or the runtime's shutdown (which waits for every blocking-pool
/// thread) does not end within [`HANG`]: a host thread left blocked on a
/// guest's file makes this fail instead of hanging the test.
fn on_own_runtime(body: impl Future<Output = ()> + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(body);
        drop(runtime);
        let _ = done.send(());
    });
    match finished.recv_timeout(HANG) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the test body failed"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("a call or the runtime's shutdown did not end within {HANG:?}")
        }
    }
}

#[test]
fn a_fifo_in_a_grant_is_refused_at_once_and_leaves_no_thread_behind() {
    on_own_runtime(async {
        let dir = plugins_with_fifo();
        let registry = registry_in(dir.path()).await;
        for path in ["/data/fifo", "/data/link"] {
            let e = call(&registry, "hostile_io_read_fifo", json!({"path": path}))
                .await
                .unwrap_err();
            assert_eq!(e.kind, ToolErrorKind::PermissionDenied, "{path}: {e}");
        }
        let out = call(
            &registry,
            "hostile_io_read_fifo",
            json!({"path": "/data/a.txt"}),
        )
        .await
        .unwrap();
        assert_eq!(out["bytes"], json!(26));
        // The host keeps serving other plugins' file reads.
        let out = call(
            &registry,
            "hostile_read",
            json!({"path": "/data/allowed.txt"}),
        )
        .await
        .unwrap();
        assert!(out["content"].is_string(), "{out}");
    });
}

#[test]
fn cli_reading_a_fifo_ends_with_a_tool_error_and_the_process_exits() {
    let dir = plugins_with_fifo();
    let ran = toolhost(
        dir.path(),
        &[
            "call",
            "hostile_io_read_fifo",
            "--json",
            "--input",
            r#"{"path": "/data/fifo"}"#,
        ],
    );
    assert_eq!(ran.code, Some(1), "stderr: {}", ran.stderr);
    let out = json_of(&ran);
    assert_eq!(out["ok"], json!(false));
    assert_eq!(out["error"]["kind"], json!("permission_denied"), "{out}");
}

// --- error messages ------------------------------------------------------

#[tokio::test]
async fn a_huge_tool_error_message_is_cut_to_its_budget_and_says_so() {
    let dir = plugins_with_fifo();
    let registry = registry_in(dir.path()).await;
    let e = call(
        &registry,
        "hostile_io_big_error",
        json!({"bytes": 5_000_000}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::ToolFailed);
    assert!(
        e.message.len() <= 8 * 1024 + 200,
        "{} bytes",
        e.message.len()
    );
    assert!(e.message.starts_with("EEEE"), "{}", &e.message[..40]);
    assert!(
        e.message.contains("cut"),
        "{}",
        &e.message[e.message.len() - 120..]
    );
    // A small message passes as it is.
    let e = call(&registry, "hostile_io_big_error", json!({"bytes": 100}))
        .await
        .unwrap_err();
    assert_eq!(e.message, "E".repeat(100));
}

#[test]
fn cli_json_error_message_is_cut_too() {
    let dir = plugins_with_fifo();
    let ran = toolhost(
        dir.path(),
        &[
            "call",
            "hostile_io_big_error",
            "--json",
            "--input",
            r#"{"bytes": 5000000}"#,
        ],
    );
    assert!(ran.stdout.len() < 16 * 1024, "{} bytes", ran.stdout.len());
    let out = json_of(&ran);
    assert_eq!(out["error"]["kind"], json!("tool_failed"));
}

// --- log and terminal injection ---------------------------------------------

#[tokio::test]
async fn a_tool_error_shows_its_control_characters_escaped() {
    let dir = plugins_with_fifo();
    let registry = registry_in(dir.path()).await;
    let e = call(&registry, "hostile_io_escape_error", json!({}))
        .await
        .unwrap_err();
    // The message itself is kept (JSON carries it safely) ...
    assert!(e.message.contains("\n[INFO] forged line"));
    // ... but what logs and terminals print is one line without controls.
    let shown = e.to_string();
    assert!(
        !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{shown:?}"
    );
    assert!(shown.contains(r"\u{1b}[2J") && shown.contains(r"\r\n[INFO] forged"));
}

#[test]
fn cli_prints_a_tool_errors_escape_sequences_escaped_and_json_as_json() {
    let dir = plugins_with_fifo();
    let ran = toolhost(
        dir.path(),
        &["call", "hostile_io_escape_error", "--input", "{}"],
    );
    assert_eq!(ran.code, Some(1));
    assert_no_untagged_lines(&ran.stderr);
    assert!(!ran.stderr.contains('\u{202e}'), "{:?}", ran.stderr);
    assert!(ran.stderr.contains(r"\u{1b}[2J"), "{}", ran.stderr);

    let ran = toolhost(
        dir.path(),
        &["call", "hostile_io_escape_error", "--json", "--input", "{}"],
    );
    assert!(!ran.stdout.contains('\u{1b}') && !ran.stdout.contains('\u{202e}'));
    let out = json_of(&ran);
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("\u{1b}[2J") && message.contains("\r\n[INFO] forged line"));
}

#[test]
fn cli_plugin_log_lines_cannot_forge_a_line_of_their_own() {
    let dir = plugins_with_fifo();
    let ran = toolhost(
        dir.path(),
        &["call", "hostile_io_log_inject", "--input", "{}"],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_no_untagged_lines(&ran.stderr);
    assert!(
        ran.stderr.contains(r"first\n[ERROR] toolhost: forged line"),
        "the log line is shown, escaped: {}",
        ran.stderr
    );
}

#[test]
fn cli_a_skipped_plugins_error_stays_on_its_log_line() {
    let dir = plugins_with_fifo();
    // toml quotes the offending line back in its error, over several lines.
    std::fs::write(
        dir.path().join("hostile_snoop.toml"),
        "stateful = \"\n[ERROR] forged by a manifest\u{1b}[2J",
    )
    .unwrap();
    let ran = toolhost(dir.path(), &["list"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stderr.contains("skipped plugin"), "{}", ran.stderr);
    assert_no_untagged_lines(&ran.stderr);
    assert!(
        !ran.stdout.contains('\u{1b}') && !ran.stdout.lines().any(|l| l.starts_with("[ERROR]")),
        "{}",
        ran.stdout
    );
}

// --- file handles ----------------------------------------------------------

#[tokio::test]
async fn a_guest_opening_files_in_a_loop_runs_out_of_its_own_handles_only() {
    let dir = plugins_with_fifo();
    let registry = registry_in(dir.path()).await;
    let (sink, mut log) = CallLog::sink();
    let cx = CallContext::default().with_logs(sink);
    let greedy = registry.call(
        "hostile_io_open_many",
        json!({"dir": "/data", "count": 4000, "hold_ms": 1500}),
        &cx,
    );
    let others = async {
        // While the greedy call holds its handles, another plugin's call
        // and the host itself still open files.
        log.wait_for("holding", 1, HANG).await;
        let read = call(
            &registry,
            "hostile_read",
            json!({"path": "/data/allowed.txt"}),
        )
        .await;
        let host_open = std::fs::File::open(dir.path().join("hostile_io.toml"));
        (read, host_open)
    };
    let (greedy, (read, host_open)) =
        tokio::time::timeout(HANG, async { tokio::join!(greedy, others) })
            .await
            .expect("the calls end");
    let greedy = greedy.output.unwrap();
    let opened = greedy["opened"].as_u64().unwrap();
    assert!(opened <= MAX_OPEN_HANDLES, "{greedy}");
    assert!(
        opened >= MAX_OPEN_HANDLES - 8,
        "the cap is not far lower: {greedy}"
    );
    assert!(greedy["error"].is_string(), "{greedy}");
    assert!(read.is_ok(), "{read:?}");
    assert!(host_open.is_ok(), "{host_open:?}");

    // The budget is per store: the next call starts with all of it.
    let again = call(
        &registry,
        "hostile_io_open_many",
        json!({"dir": "/data", "count": 10}),
    )
    .await
    .unwrap();
    assert_eq!(again, json!({"opened": 10, "error": null}));
}

// --- stderr ----------------------------------------------------------------

#[tokio::test]
async fn a_stderr_flood_is_truncated_not_fatal() {
    let dir = plugins_with_fifo();
    let registry = registry_in(dir.path()).await;
    let out = call(
        &registry,
        "hostile_io_stderr_flood",
        json!({"bytes": 1_000_000}),
    )
    .await
    .unwrap();
    assert_eq!(out["written"], json!(1_000_000));
}

#[tokio::test]
async fn a_trap_reports_this_calls_stderr_not_an_earlier_calls() {
    let dir = plugins_with_fifo();
    let registry = registry_in(dir.path()).await;
    let cx = CallContext::in_session(SessionId::new("stderr"));
    call_in(
        &registry,
        "hostile_io_stderr_note",
        json!({"text": "stale note from the first call"}),
        &cx,
    )
    .await
    .unwrap();
    let e = call_in(
        &registry,
        "hostile_io_panic",
        json!({"message": "fresh failure of the second call"}),
        &cx,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Trap, "{e}");
    assert!(
        e.message.contains("fresh failure of the second call"),
        "{e}"
    );
    assert!(!e.message.contains("stale note"), "{e}");
}

// --- files the host reads (issue 21) --------------------------------------

/// A FIFO, and a (sparse) file one byte over `max`, in `dir`.
fn fifo_and_oversized(dir: &Path, max: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let fifo = dir.join(format!("fifo-{max}"));
    let status = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
    let big = dir.join(format!("big-{max}"));
    std::fs::File::create(&big)
        .unwrap()
        .set_len(max + 1)
        .unwrap();
    (fifo, big)
}

/// `toolhost ARGS` ends at once with a usage error (exit 2) that says
/// `expected`.
fn refused(args: &[&std::ffi::OsStr], expected: &str) {
    let ran = toolhost_with(args);
    assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.stderr);
    assert!(ran.stderr.contains(expected), "{args:?}: {}", ran.stderr);
    assert_no_untagged_lines(&ran.stderr);
}

#[test]
fn cli_a_host_config_or_lock_file_that_is_a_fifo_or_too_big_is_refused_at_once() {
    use std::ffi::OsStr;
    let plugins = toolhost_tests::plugins::plugin_subset(&["calc"]);
    let files = tempfile::tempdir().unwrap();
    let (fifo, big_config) = fifo_and_oversized(files.path(), fsread::HOST_CONFIG_MAX_BYTES);
    let (_, big_lock) = fifo_and_oversized(files.path(), fsread::LOCK_FILE_MAX_BYTES);
    let dev_zero = files.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &dev_zero).unwrap();
    let list = |flag: &str, file: &Path, expected: &str| {
        let args = [
            OsStr::new("list"),
            OsStr::new(flag),
            file.as_os_str(),
            OsStr::new("--plugins"),
            plugins.path().as_os_str(),
        ];
        refused(&args, expected);
    };
    list("--config", &fifo, "not a regular file");
    list("--config", &dev_zero, "not a regular file");
    list(
        "--config",
        &big_config,
        &format!("over {} bytes", fsread::HOST_CONFIG_MAX_BYTES),
    );
    list("--lock", &fifo, "not a regular file");
    list("--lock", &dev_zero, "not a regular file");
    list(
        "--lock",
        &big_lock,
        &format!("over {} bytes", fsread::LOCK_FILE_MAX_BYTES),
    );
}

#[test]
fn cli_a_transcript_recording_or_key_that_is_a_fifo_or_too_big_is_refused_at_once() {
    use std::ffi::OsStr;
    let files = tempfile::tempdir().unwrap();
    let (fifo, big_transcript) = fifo_and_oversized(files.path(), fsread::TRANSCRIPT_MAX_BYTES);
    let (_, big_key) = fifo_and_oversized(files.path(), fsread::KEY_FILE_MAX_BYTES);
    let plugins = toolhost_tests::plugins::plugin_subset(&["calc"]);
    let run = |extra: &[&OsStr], expected: &str| {
        let mut args: Vec<&OsStr> = [
            "run",
            "hi",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            "not-a-key",
            "--model",
            "test-model",
            "--plugins",
        ]
        .iter()
        .map(OsStr::new)
        .collect();
        args.push(plugins.path().as_os_str());
        args.extend(extra);
        refused(&args, expected);
    };
    for flag in ["--resume", "--messages"] {
        run(&[OsStr::new(flag), fifo.as_os_str()], "not a regular file");
        run(
            &[OsStr::new(flag), big_transcript.as_os_str()],
            &format!("over {} bytes", fsread::TRANSCRIPT_MAX_BYTES),
        );
    }
    let replay = [
        OsStr::new("run"),
        OsStr::new("hi"),
        OsStr::new("--provider"),
        OsStr::new("replay"),
        OsStr::new("--replay"),
        fifo.as_os_str(),
    ];
    refused(&replay, "not a regular file");
    let wasm = plugins.path().join("calc.wasm");
    for key in [&fifo, &big_key] {
        let sign = [
            OsStr::new("sign"),
            wasm.as_os_str(),
            OsStr::new("--key"),
            key.as_os_str(),
        ];
        let expected = if key == &fifo {
            "not a regular file".to_owned()
        } else {
            format!("over {} bytes", fsread::KEY_FILE_MAX_BYTES)
        };
        refused(&sign, &expected);
    }
}
