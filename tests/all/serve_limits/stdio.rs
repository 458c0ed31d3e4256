//! Closing stdin with calls in flight (issue 21, class 9): the calls are
//! cancelled at once and the process exits, instead of rmcp's 5 s drain.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::toolhost_bin;
use toolhost_tests::wait::{LogLines, PATIENCE};

use super::*;

/// Well short of rmcp's 5 s drain, with room for a busy machine.
const EXIT_WITHIN: Duration = Duration::from_millis(2500);

/// `toolhost serve` on stdio, past its handshake.
struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Its stderr: plugins' log lines say when a call is in flight.
    log: LogLines,
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioServer {
    fn start(plugins: &Path) -> Self {
        let mut child = Command::new(toolhost_bin())
            .args(["serve", "--no-watch", "--cache-dir"])
            .arg(test_cache_dir())
            .arg("--plugins")
            .arg(plugins)
            .env_remove("TOOLHOST_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolhost starts");
        let log = LogLines::read(child.stderr.take().unwrap());
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str(&line) {
                    let _ = send.send(message);
                }
            }
        });
        let mut server = Self {
            stdin: child.stdin.take(),
            child,
            lines,
            log,
        };
        server.send(&initialize_request());
        let answer = server.answer(1);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "toolhost",
            "{answer}"
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn write_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to request `id`.
    fn answer(&self, id: u64) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("an answer within 30 s");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
    }

    /// Close stdin; how long until the process exited.
    fn close_stdin(&mut self) -> Duration {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if self.child.try_wait().expect("wait").is_some() {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "still running 30 s after stdin closed"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A well-behaved exchange first: the server answers on stdio.
fn served(server: &mut StdioServer) {
    server.call(2, "calc_eval", json!({"expression": "6*7"}));
    let answer = server.answer(2);
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 42.0,
        "{answer}"
    );
}

fn assert_prompt(took: Duration) {
    assert!(
        took < EXIT_WITHIN,
        "the process ran on for {took:?} after stdin closed: the calls in flight were not cancelled"
    );
}

#[test]
fn closing_stdin_cancels_a_call_in_flight_at_once() {
    let plugins = plugins();
    let mut server = StdioServer::start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_spin", json!({}));
    server.log.wait_for("spin started", 1, PATIENCE);
    assert_prompt(server.close_stdin());
}

#[test]
fn closing_stdin_cancels_every_call_in_flight() {
    let plugins = plugins();
    let mut server = StdioServer::start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_spin", json!({}));
    server.call(4, "hostile_sleep", json!({"ms": 9000}));
    server.call(5, "hostile_spin", json!({}));
    server.log.wait_for("spin started", 2, PATIENCE);
    server.log.wait_for("sleep started", 1, PATIENCE);
    assert_prompt(server.close_stdin());
}

#[test]
fn closing_stdin_mid_message_cancels_the_calls_in_flight() {
    let plugins = plugins();
    let mut server = StdioServer::start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_sleep", json!({"ms": 9000}));
    server.log.wait_for("sleep started", 1, PATIENCE);
    server.write_raw(r#"{"jsonrpc":"2.0","id":4,"method":"tools/ca"#);
    assert_prompt(server.close_stdin());
}
