//! What the MCP tests share: the toolchains venv's Python (the official MCP
//! SDK client and the Python MCP servers live there), the SDK client script
//! tests/mcp/client.py, the compile cache the CLI tests use, and
//! `toolhost serve` on loopback HTTP ([`ServeHttp`]) or on stdio, for a
//! client to start ([`stdio_command`]) or spoken to as raw JSON-RPC
//! ([`ServeStdio`]).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;

use serde_json::{Value, json};

use crate::plugins::{toolhost_bin, workspace_root};
use crate::wait::{LogLines, PATIENCE};

/// The venv's Python, where .ci/toolchains.sh puts it.
///
/// # Panics
///
/// When it is not there, with the command that installs it.
pub fn venv_python() -> PathBuf {
    let toolchains = std::env::var_os("TOOLHOST_TOOLCHAINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target").join("toolchains"));
    let python = toolchains.join("venv").join("bin").join("python3");
    assert!(
        python.is_file(),
        "no {}: run .ci/install-guest-toolchains.sh mcp to install the MCP SDK and peers",
        python.display()
    );
    python
}

/// Run one of the Python MCP client scripts of the tests (`script`, under
/// the workspace root) in the venv with `args`; the JSON it prints.
///
/// # Panics
///
/// When the script fails (with its stderr) or prints no JSON.
pub fn python_client(script: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(venv_python())
        .arg(workspace_root().join(script))
        .args(args)
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "the MCP client {script} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("the MCP client {script} printed no JSON ({e}):\n{text}"))
}

/// tests/mcp/client.py, the official Python SDK's client, over `transport`
/// (`stdio` or `http`) to `target` (a [`stdio_command`] or a URL), running
/// `steps` (the script's opening comment lists them); its JSON report.
///
/// # Panics
///
/// As [`python_client`].
pub fn sdk_client(transport: &str, target: &str, steps: &Value) -> Value {
    python_client(
        "tests/mcp/client.py",
        &[transport, target, &steps.to_string()],
    )
}

/// `toolhost serve` over stdio on `plugins`, with the tests' compile cache
/// and `extra` flags, as an MCP client's config names it: the program and
/// its arguments as a JSON list.
pub fn stdio_command(plugins: &Path, extra: &[&str]) -> String {
    let mut argv = vec![
        json!(toolhost_bin()),
        json!("serve"),
        // Every plugin compiled before the first answer: a test lists once.
        json!("--wait-for-plugins"),
        json!("--plugins"),
        json!(plugins),
        json!("--cache-dir"),
        json!(test_cache_dir()),
    ];
    argv.extend(extra.iter().map(|flag| json!(flag)));
    Value::Array(argv).to_string()
}

/// The `initialize` request (id 1) of a raw 2025-11-25 client.
pub fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// The compile cache the CLI tests share (`target/test-cache`).
pub fn test_cache_dir() -> PathBuf {
    workspace_root().join("target").join("test-cache")
}

/// A `toolhost serve --http 127.0.0.1:0` process, killed when dropped.
#[derive(Debug)]
pub struct ServeHttp {
    pub child: Child,
    /// `http://ADDR/mcp`, as the server printed it.
    pub url: String,
    /// `ADDR`: the bound address and port.
    pub addr: String,
    /// Its stderr after the line that says where it listens: its log,
    /// plugins' log lines included.
    pub log: LogLines,
}

impl Drop for ServeHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServeHttp {
    /// Start it on `plugins` with `extra` flags and `env` added; returns
    /// once it listens.
    ///
    /// # Panics
    ///
    /// When it exits before saying where it listens.
    pub fn start(plugins: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_on("127.0.0.1:0", plugins, extra, env)
    }

    /// As [`start`](Self::start), bound to `bind` (a port known before
    /// it starts, for a config that names the server's URL).
    ///
    /// # Panics
    ///
    /// When it exits before saying where it listens.
    pub fn start_on(bind: &str, plugins: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(toolhost_bin())
            .args(["serve", "--wait-for-plugins", "--http", bind])
            .arg("--cache-dir")
            .arg(test_cache_dir())
            .arg("--plugins")
            .arg(plugins)
            .args(extra)
            .envs(env.iter().copied())
            .env_remove("TOOLHOST_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolhost starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("toolhost serve printed its address before exiting")
                .expect("stderr is text");
            if let Some(url) = line.strip_prefix("toolhost serve: listening on ") {
                break url.to_owned();
            }
        };
        // Kept for the test (and drained so the server never blocks on a
        // full pipe).
        let log = LogLines::from_lines(lines.map_while(Result::ok));
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .expect("http://ADDR/mcp")
            .to_owned();
        Self {
            child,
            url,
            addr,
            log,
        }
    }
}

/// `toolhost serve` on stdio, spoken to as raw JSON-RPC lines and past its
/// handshake; killed when dropped.
#[derive(Debug)]
pub struct ServeStdio {
    pub child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    /// Its stderr: its log, plugins' log lines included.
    pub log: LogLines,
}

impl Drop for ServeStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServeStdio {
    /// Start it on `plugins` with `extra` flags; returns once it has
    /// answered `initialize` and been sent `notifications/initialized`.
    ///
    /// # Panics
    ///
    /// When it does not answer the handshake as toolhost.
    pub fn start(plugins: &Path, extra: &[&str]) -> Self {
        Self::start_in(&test_cache_dir(), &["--wait-for-plugins"], plugins, extra)
    }

    /// As [`start`](Self::start), with the compile cache `cache` and the
    /// `serve` flags `first` (none: plugins not in the cache compile in
    /// the background).
    pub fn start_in(cache: &Path, first: &[&str], plugins: &Path, extra: &[&str]) -> Self {
        Self::start_with(cache, first, plugins, extra, &initialize_request())
    }

    /// As [`start_in`](Self::start_in), with the client's own
    /// `initialize` request (id 1): its revision and capabilities.
    pub fn start_with(
        cache: &Path,
        first: &[&str],
        plugins: &Path,
        extra: &[&str],
        initialize: &Value,
    ) -> Self {
        let mut child = Command::new(toolhost_bin())
            .arg("serve")
            .args(first)
            .arg("--cache-dir")
            .arg(cache)
            .arg("--plugins")
            .arg(plugins)
            .args(extra)
            .env_remove("TOOLHOST_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolhost starts");
        let log = LogLines::read(child.stderr.take().expect("stderr"));
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (send, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str(&line) {
                    let _ = send.send(message);
                }
            }
        });
        let mut server = Self {
            stdin: child.stdin.take(),
            child,
            messages,
            log,
        };
        server.send(initialize);
        let answer = server.answer(1);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "toolhost",
            "{answer}"
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// Send one message, as one line.
    pub fn send(&mut self, message: &Value) {
        self.write_raw(&format!("{message}\n"));
    }

    /// Write `text` as it is (a test may send half a message).
    pub fn write_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Send a `tools/call` of `tool` with `args` as request `id`.
    pub fn call(&mut self, id: u64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
    }

    /// The answer to request `id` (messages before it are passed over).
    ///
    /// # Panics
    ///
    /// When none comes within [`PATIENCE`].
    pub fn answer(&self, id: u64) -> Value {
        loop {
            let message = self
                .messages
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("no answer to request {id} within {PATIENCE:?}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The next message it sends, whatever it is.
    ///
    /// # Panics
    ///
    /// When none comes within [`PATIENCE`].
    pub fn next_message(&self) -> Value {
        self.messages
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("no message within {PATIENCE:?}"))
    }

    /// Close its stdin, as a client that goes away.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_some()
    }
}
