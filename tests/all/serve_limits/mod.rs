//! `toolhost serve` under hostile clients: slow and idle connections, too
//! many connections or MCP sessions, a stop signal with requests half sent,
//! a client that closes stdin with calls in flight. Each test also checks
//! that a well-behaved client is still served meanwhile.
//!
//! The budgets are set short by flags so that each test takes seconds.

mod connections;
mod direct;
mod gone;
mod metrics;
mod sessions;
mod shutdown;
mod stdio;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeHttp, initialize_request};
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir, plugin_subset};
use toolhost_tests::wait::PATIENCE;

/// calc, hostile_spin allowed to spin for a minute (only cancelling stops
/// it early) and hostile_sleep allowed to sleep for 10 s.
fn plugins() -> tempfile::TempDir {
    let dir = plugin_subset(&["calc"]);
    copy_plugin_from(hostile_dir(), "hostile_spin", dir.path());
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    std::fs::write(
        dir.path().join("hostile_spin.toml"),
        "[limits]\ntimeout_ms = 60000\nfuel = 200000000000\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 10000\n",
    )
    .unwrap();
    dir
}

/// `toolhost serve --http` on `plugins` with `flags`.
fn serve(plugins: &Path, flags: &[&str]) -> ServeHttp {
    ServeHttp::start(plugins, flags, &[])
}

/// One HTTP/1.1 exchange on a connection of its own: status, head, body
/// (de-chunked).
fn exchange(addr: &str, request: &str) -> (u16, String, String) {
    exchange_on(TcpStream::connect(addr).expect("connect"), request)
}

/// A connection to `addr` from the loopback address `from` (127.0.0.2 is
/// another client than 127.0.0.1).
fn connect_from(from: &str, addr: &str) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket
            .connect(addr.parse().unwrap())
            .await
            .expect("connect")
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// [`exchange`] on `stream`.
fn exchange_on(mut stream: TcpStream, request: &str) -> (u16, String, String) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let response = String::from_utf8_lossy(&bytes).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head.to_owned(), body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            out.push_str(&after[..size.min(after.len())]);
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// A POST to /mcp, closed after the answer.
fn post(addr: &str, session: Option<&str>, body: &Value) -> (u16, String, String) {
    exchange(addr, &post_request(addr, session, body))
}

fn post_request(addr: &str, session: Option<&str>, body: &Value) -> String {
    let body = body.to_string();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// [`post`] as a well-behaved client sends it: one that does what the
/// connection cap's 503 says and retries a moment later. The server frees
/// a closed connection's place just after the client sees it close, and on
/// a loaded machine the client's next request can be faster. A place never
/// freed still fails here.
fn post_patiently(addr: &str, session: Option<&str>, body: &Value) -> (u16, String, String) {
    exchange_patiently(addr, &post_request(addr, session, body))
}

/// [`exchange`], retrying the connection cap's 503 (see [`post_patiently`]).
fn exchange_patiently(addr: &str, request: &str) -> (u16, String, String) {
    patiently(|| exchange(addr, request))
}

/// The answer of `attempt`, made again a few milliseconds apart while it
/// is the connection cap's 503, for at most [`PATIENCE`] (see
/// [`post_patiently`]).
fn patiently(mut attempt: impl FnMut() -> (u16, String, String)) -> (u16, String, String) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let answer = attempt();
        let over_the_cap = answer.0 == 503 && answer.2.contains("too many open connections");
        if !over_the_cap || Instant::now() >= deadline {
            return answer;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The JSON-RPC message in an answer: a JSON body or an event stream's
/// `data:` line.
fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body.trim()) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body:?}"))
}

/// A raw MCP session over HTTP (the 2025-11-25 revision).
struct Session {
    addr: String,
    id: String,
}

impl Session {
    /// Open one; panics with the answer if the server refuses.
    fn open(addr: &str) -> Self {
        Self::try_open(addr).unwrap_or_else(|(status, body)| {
            panic!("initialize refused: {status} {body}");
        })
    }

    /// Open one, or the status and body of the refusal.
    fn try_open(addr: &str) -> Result<Self, (u16, String)> {
        Self::try_open_from("127.0.0.1", addr)
    }

    /// [`try_open`](Self::try_open) as the client at loopback address
    /// `from`.
    fn try_open_from(from: &str, addr: &str) -> Result<Self, (u16, String)> {
        let request = post_request(addr, None, &initialize_request());
        // Patient with the connection cap, as [`post_patiently`].
        let (status, head, body) = patiently(|| exchange_on(connect_from(from, addr), &request));
        if status != 200 {
            return Err((status, body));
        }
        let id = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no Mcp-Session-Id in {head}"));
        let session = Self {
            addr: addr.to_owned(),
            id,
        };
        let (status, _, body) = post_patiently(
            addr,
            Some(&session.id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        // 404: the session was ended (to make room) before its handshake
        // was over.
        if status == 404 {
            return Err((status, body));
        }
        assert_eq!(status, 202, "notifications/initialized: {body}");
        Ok(session)
    }

    fn request(&self, method: &str, params: Value) -> Value {
        let (status, _, body) = post_patiently(
            &self.addr,
            Some(&self.id),
            &json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}),
        );
        assert_eq!(status, 200, "{method}: {body}");
        message(&body)
    }

    /// The names tools/list gives.
    fn tool_names(&self) -> Vec<String> {
        let answer = self.request("tools/list", json!({}));
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {answer}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// DELETE the session.
    fn end(self) {
        let (status, _, body) = exchange_patiently(
            &self.addr,
            &format!(
                "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {}\r\n\
                 Content-Length: 0\r\nConnection: close\r\n\r\n",
                self.addr, self.id
            ),
        );
        assert!((200..300).contains(&status), "DELETE: {status} {body}");
    }
}

/// A well-behaved client's whole visit: a session, tools/list, a call.
fn well_behaved_visit(addr: &str) {
    visit(Session::open(addr));
}

/// The rest of [`well_behaved_visit`] in `session`: tools/list, a call,
/// the end.
fn visit(session: Session) {
    assert!(session.tool_names().contains(&"calc_eval".to_owned()));
    let answer = session.call("calc_eval", json!({"expression": "6*7"}));
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 42.0,
        "{answer}"
    );
    session.end();
}

/// A connection that sends `prefix` at once, then `trickle` one byte every
/// 100 ms (wrapping around), until the server closes it.
struct Trickler {
    stream: TcpStream,
    opened: Instant,
}

impl Trickler {
    fn open(addr: &str, prefix: &str) -> Self {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.write_all(prefix.as_bytes()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Self {
            stream,
            opened: Instant::now(),
        }
    }

    /// Trickle `bytes` until the server closes the connection or `limit`
    /// passes; how long the connection lived, or `None` if it outlived
    /// `limit`.
    fn trickle_until_closed(mut self, bytes: &[u8], limit: Duration) -> Option<Duration> {
        let mut next = bytes.iter().cycle();
        let mut sink = [0u8; 1024];
        while self.opened.elapsed() < limit {
            let byte = *next.next().unwrap();
            if self.stream.write_all(&[byte]).is_err() {
                return Some(self.opened.elapsed());
            }
            // The read timeout paces the trickle.
            match self.stream.read(&mut sink) {
                Ok(0) => return Some(self.opened.elapsed()),
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Some(self.opened.elapsed()),
            }
        }
        None
    }

    /// Send nothing; how long until the server closed the connection, or
    /// `None` if it outlived `limit`.
    fn wait_until_closed(mut self, limit: Duration) -> Option<Duration> {
        let mut sink = [0u8; 1024];
        while self.opened.elapsed() < limit {
            match self.stream.read(&mut sink) {
                Ok(0) => return Some(self.opened.elapsed()),
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Some(self.opened.elapsed()),
            }
        }
        None
    }
}

/// The start of a POST whose head never ends.
const HEAD_START: &str = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";

/// A complete head announcing a body of 10 000 bytes.
fn head_with_body() -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 10000\r\n\r\n{}",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":""#
    )
}
