//! A stdio server's messages, one line each, held to a size cap.
//!
//! rmcp drops a line over its own cap and keeps the connection: the
//! request that line answered then waits until its deadline and looks like
//! a `timeout`. So the child's stdout passes through [`cap_lines`] first: a
//! line within the cap is handed on as it is; a response over the cap is
//! replaced by a JSON-RPC error for the same request id that says so
//! ([`too_large`] reads it back), and anything else over the cap (a
//! notification, a request from the server) is dropped with a warning.

use rmcp::model::ErrorData;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The JSON-RPC error code of a message over the cap (in the range
/// JSON-RPC leaves to implementations), marked in `data` as well so that a
/// server's own use of the code is not taken for it.
const TOO_LARGE_CODE: i32 = -32_090;

/// The `data.toolhost` mark of the error.
const TOO_LARGE_MARK: &str = "message_too_large";

/// How much of a line the pipe to rmcp holds at once.
const PIPE_BYTES: usize = 64 << 10;

/// A message over the cap: its size and the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge {
    /// Bytes of the message (as far as it was read).
    pub(crate) bytes: u64,
    /// The cap.
    pub(crate) cap: u64,
}

/// If `error` stands for a message over the cap, its size and the cap.
pub(crate) fn too_large(error: &ErrorData) -> Option<TooLarge> {
    let data = error.data.as_ref()?;
    if error.code.0 != TOO_LARGE_CODE || data["toolhost"] != TOO_LARGE_MARK {
        return None;
    }
    Some(TooLarge {
        bytes: data["bytes"].as_u64()?,
        cap: data["cap"].as_u64()?,
    })
}

/// `stdout`'s lines, each at most `cap` bytes, as a stream rmcp reads; see
/// the module docs. `server` names it in log lines.
pub(crate) fn cap_lines(
    stdout: impl AsyncRead + Unpin + Send + 'static,
    cap: usize,
    server: String,
) -> DuplexStream {
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(pump(stdout, ours, cap, server));
    theirs
}

async fn pump(
    mut stdout: impl AsyncRead + Unpin,
    mut out: DuplexStream,
    cap: usize,
    server: String,
) {
    let mut chunk = vec![0u8; PIPE_BYTES];
    let mut line: Vec<u8> = Vec::new();
    // Set while the rest of an over-cap line is read and scanned.
    let mut over: Option<(IdScan, u64)> = None;
    loop {
        let n = match stdout.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let piece = &rest[..newline.map_or(rest.len(), |i| i + 1)];
            rest = &rest[piece.len()..];
            if let Some((scan, bytes)) = &mut over {
                scan.feed(piece);
                *bytes += piece.len() as u64;
            } else if line.len() + piece.len() > cap.saturating_add(1) {
                let mut scan = IdScan::default();
                scan.feed(&line);
                scan.feed(piece);
                over = Some((scan, (line.len() + piece.len()) as u64));
                line = Vec::new();
            } else {
                line.extend_from_slice(piece);
            }
            if newline.is_none() {
                continue;
            }
            let sent = match over.take() {
                None => out.write_all(&line).await,
                Some((scan, bytes)) => match replacement(&scan, bytes, cap, &server) {
                    Some(error) => out.write_all(error.as_bytes()).await,
                    None => Ok(()),
                },
            };
            line.clear();
            if sent.is_err() {
                return;
            }
        }
    }
    if over.is_none() && !line.is_empty() {
        let _ = out.write_all(&line).await;
    }
    let _ = out.shutdown().await;
}

/// The line that stands for an over-cap message: an error response to the
/// same request, or `None` (dropped) when it answers no request.
fn replacement(scan: &IdScan, bytes: u64, cap: usize, server: &str) -> Option<String> {
    let id = scan
        .id
        .as_deref()
        .filter(|_| !scan.saw_method)
        .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
        .filter(|id| id.is_string() || id.is_number());
    let Some(id) = id else {
        tracing::warn!(
            "MCP server `{server}` sent a message of {bytes} bytes, more than the {cap} allowed; it was dropped"
        );
        return None;
    };
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": TOO_LARGE_CODE,
            "message": format!("the answer has {bytes} bytes, more than the {cap} one message may have"),
            "data": {"toolhost": TOO_LARGE_MARK, "bytes": bytes, "cap": cap},
        }
    });
    Some(format!("{error}\n"))
}

/// Finds the top-level `"id"` of one JSON object read piece by piece, and
/// whether it has a top-level `"method"` (a request or notification, not a
/// response), without holding the object.
#[derive(Debug, Default)]
struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The last byte outside strings at depth 1 that was not blank.
    previous: u8,
    reading_key: bool,
    key: Vec<u8>,
    /// The key just read was `id`: its value follows the `:`.
    id_next: bool,
    capturing: bool,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
    saw_method: bool,
}

/// The longest id kept (longer ones are not ids a client sent).
const MAX_ID_BYTES: usize = 256;

impl IdScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.capturing {
                self.keep(b);
            } else if self.reading_key && self.key.len() < 16 {
                self.key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.key.pop();
                    self.id_next = self.key == b"id";
                    self.saw_method |= self.key == b"method";
                    self.key.clear();
                }
            }
            return;
        }
        if self.capturing && self.depth == 1 && (b == b',' || b == b'}') {
            self.capturing = false;
            if self.id.is_none() {
                self.id = Some(std::mem::take(&mut self.value));
            }
        } else if self.capturing {
            self.keep(b);
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && !self.capturing && matches!(self.previous, b'{' | b',') {
                    self.reading_key = true;
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 && self.id_next => {
                self.id_next = false;
                self.capturing = true;
                self.value.clear();
            }
            _ => {}
        }
        if self.depth == 1 && !b.is_ascii_whitespace() {
            self.previous = b;
        }
    }

    fn keep(&mut self, b: u8) {
        if self.value.len() < MAX_ID_BYTES {
            self.value.push(b);
        } else {
            self.capturing = false;
            self.value.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> IdScan {
        let mut scan = IdScan::default();
        // In small pieces, as a pipe delivers them.
        for piece in text.as_bytes().chunks(3) {
            scan.feed(piece);
        }
        scan
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"result":{"id":9}}"#, "7"),
            (
                r#"{"result":{"id":9,"x":"\"id\":3"},"id":"a\"b"}"#,
                r#""a\"b""#,
            ),
            (r#"{ "jsonrpc" : "2.0" , "id" : 12 }"#, " 12 "),
        ] {
            let s = scan(text);
            assert_eq!(s.id.as_deref(), Some(id.as_bytes()), "{text}");
            assert!(!s.saw_method);
        }
        let request = scan(r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}"#);
        assert!(request.saw_method);
        assert_eq!(scan(r#"{"method":"x","params":{"id":1}}"#).id, None);
    }

    #[tokio::test]
    async fn an_over_cap_response_becomes_an_error_for_its_id() {
        let big = "x".repeat(5000);
        let input = format!(
            "{{\"id\":1,\"result\":{{}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"t\":\"{big}\"}}}}\n{{\"method\":\"n\",\"params\":\"{big}\"}}\n{{\"id\":3,\"result\":{{}}}}\n"
        );
        let mut read = cap_lines(std::io::Cursor::new(input.into_bytes()), 1000, "t".into());
        let mut out = String::new();
        read.read_to_string(&mut out).await.unwrap();
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[2]["id"], 3);
        let error: ErrorData = serde_json::from_value(lines[1]["error"].clone()).unwrap();
        assert_eq!(lines[1]["id"], 2);
        let too_large = too_large(&error).expect("marked");
        assert_eq!(too_large.cap, 1000);
        assert!(too_large.bytes > 5000);
    }
}
