//! The transport floor: a server that answers every `tools/call` with the
//! answer it was given, doing no work (no HTTP library, no MCP, no guest),
//! over the same transports and to the same clients as `toolhost serve`.
//! Its CPU per call and its latency are what the machine's loopback TCP,
//! pipes and scheduler cost by themselves: no server can go below them,
//! so they say how much of a floor on `serve` is left for `serve` itself.
//!
//! A second HTTP server (`http-call`) makes the call too, in a registry
//! of the `text` plugin, and answers with its output: the transport and
//! the call with none of `serve`'s layers (hyper, rmcp's types, sessions,
//! the call log) between them.
//!
//! Each runs as a process of its own (the bench binary started again with
//! `--floor-server stdio|http ANSWER` or `--floor-server http-call PLUGINS
//! CACHE`), so that its CPU is counted apart from the clients', as
//! `serve`'s is.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, ToolRegistry};

/// The flag that makes the bench binary a floor server.
pub const FLAG: &str = "--floor-server";

/// Serve as `args` (after [`FLAG`]) say, if they say so; returns whether
/// it did (then the process should exit).
pub fn serve_if_asked(args: &[String]) -> bool {
    let Some(i) = args.iter().position(|a| a == FLAG) else {
        return false;
    };
    let transport = args.get(i + 1).map(String::as_str);
    let arg = |n: usize| {
        args.get(i + n)
            .expect("--floor-server stdio|http RESULT_JSON, or http-call PLUGINS CACHE")
    };
    let canned = || Work::Canned(arg(2).as_str().into());
    let call = || Work::Call(Path::new(arg(2)).into(), Path::new(arg(3)).into());
    match transport {
        Some("stdio") => stdio(canned()),
        Some("stdio-call") => stdio(call()),
        Some("http") => http(canned()),
        Some("http-call") => http(call()),
        other => panic!("--floor-server takes stdio, http or their -call forms, not {other:?}"),
    }
    true
}

/// A tokio runtime of two workers, as `toolhost serve` has.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

impl Work {
    async fn answer(self) -> Answer {
        match self {
            Self::Canned(result) => Answer::Canned(result),
            Self::Call(plugins, cache) => {
                let host = PluginHost::new(HostConfig {
                    cache_dir: Some(cache),
                    ..HostConfig::default()
                })
                .unwrap();
                let registry = ToolRegistry::new();
                crate::common::register_plugins(&host, &plugins, &["text"], &registry).await;
                Answer::Call(Arc::new(registry))
            }
        }
    }
}

/// What the HTTP floor server does for a `tools/call`.
enum Work {
    /// Answer with this result.
    Canned(Arc<str>),
    /// Make the call in a registry of the `text` plugin (from this plugin
    /// directory, with this compile cache) and answer with its output:
    /// the transport and the call, with none of `serve`'s layers between.
    Call(PathBuf, PathBuf),
}

/// What a connection answers with.
#[derive(Clone)]
enum Answer {
    Canned(Arc<str>),
    Call(Arc<ToolRegistry>),
}

impl Answer {
    /// The JSON-RPC answer to `body`, a request with this `id`.
    async fn to(&self, body: &[u8], id: u64) -> String {
        match self {
            Self::Canned(result) => answer(body, id, result),
            Self::Call(registry) => {
                let request: Value = match serde_json::from_slice(body) {
                    Ok(request) => request,
                    Err(e) => return error(id, &e.to_string()),
                };
                if request["method"] != "tools/call" {
                    return answer(body, id, "{}");
                }
                let params = &request["params"];
                let name = params["name"].as_str().unwrap_or_default();
                let arguments = params["arguments"].clone();
                match registry
                    .call(name, arguments, &CallContext::default())
                    .await
                    .output
                {
                    Ok(output) => {
                        let result = json!({
                            "content": [{"type": "text", "text": output.to_string()}],
                            "structuredContent": output,
                            "isError": false
                        });
                        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
                    }
                    Err(e) => error(id, &e.to_string()),
                }
            }
        }
    }
}

fn error(id: u64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}}).to_string()
}

/// The JSON-RPC id of a request (a number), found by scanning, not parsing:
/// `None` for a notification.
fn request_id(message: &[u8]) -> Option<u64> {
    let key = b"\"id\":";
    let at = message.windows(key.len()).position(|w| w == key)? + key.len();
    let digits: Vec<u8> = message[at..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit())
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// The answer to request `id`: `initialize` gets the server's info, any
/// other request `result` (a `tools/call` result).
fn answer(message: &[u8], id: u64, result: &str) -> String {
    let initialize = b"\"method\":\"initialize\"";
    if message.windows(initialize.len()).any(|w| w == initialize) {
        return format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"floor","version":"0"}}}}}}"#
        );
    }
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// Newline-delimited JSON-RPC on stdin and stdout. The canned answer:
/// blocking reads and writes on the main thread, the least a round trip
/// over pipes can cost. The call: stdin and stdout polled by a task on a
/// tokio worker (as `toolhost serve` polls them), the call made in that
/// task, one request at a time.
fn stdio(work: Work) {
    match work {
        Work::Canned(result) => stdio_canned(&result),
        work @ Work::Call(..) => runtime().block_on(async move {
            let answers = work.answer().await;
            tokio::spawn(stdio_calls(answers)).await.unwrap();
        }),
    }
}

fn stdio_canned(result: &str) {
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    let mut stdout = std::io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(id) = request_id(&line) {
            let mut out = answer(&line, id, result);
            out.push('\n');
            if stdout.write_all(out.as_bytes()).is_err() || stdout.flush().is_err() {
                return;
            }
        }
    }
}

async fn stdio_calls(answers: Answer) {
    use std::os::fd::AsFd;
    use tokio::io::AsyncBufReadExt;
    use tokio::net::unix::pipe;
    let fd = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().unwrap();
    let stdin = pipe::Receiver::from_owned_fd(fd(std::io::stdin().as_fd())).unwrap();
    let mut stdout = pipe::Sender::from_owned_fd(fd(std::io::stdout().as_fd())).unwrap();
    let mut stdin = tokio::io::BufReader::new(stdin);
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).await.unwrap_or(0) == 0 {
            return;
        }
        if let Some(id) = request_id(&line) {
            let mut out = answers.to(&line, id).await;
            out.push('\n');
            if stdout.write_all(out.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// HTTP/1.1 keep-alive on loopback, on a tokio runtime of two workers as
/// `toolhost serve` has: it prints `listening on ADDR` on stdout, then
/// answers each POST (a request: 200 with the JSON answer and a session
/// id; a notification: 202) with one write.
fn http(work: Work) {
    runtime().block_on(async move {
        let answer = work.answer().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening on {}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            stream.set_nodelay(true).unwrap();
            tokio::spawn(connection(stream, answer.clone()));
        }
    });
}

async fn connection(mut stream: tokio::net::TcpStream, answer: Answer) {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // The head, then as much body as its Content-Length says.
        let (head_end, length) = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break (end + 4, content_length(&buffer[..end]));
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body = &buffer[head_end..head_end + length];
        let response = match request_id(body) {
            Some(id) => {
                let answer = answer.to(body, id).await;
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: floor\r\n\
                     content-length: {}\r\n\r\n{answer}",
                    answer.len()
                )
            }
            None => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned(),
        };
        buffer.drain(..head_end + length);
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The Content-Length of a request head (0 without one).
fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}
