//! What the MCP tests share: the toolchains venv's Python (the official MCP
//! SDK client and the Python MCP servers live there), the compile cache the
//! CLI tests use, and a `toolhost serve --http` process on loopback.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::plugins::{toolhost_bin, workspace_root};
use crate::wait::LogLines;

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
        let mut child = Command::new(toolhost_bin())
            .args(["serve", "--http", "127.0.0.1:0", "--cache-dir"])
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
