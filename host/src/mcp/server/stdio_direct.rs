//! `tools/call` on a stdio connection, answered without rmcp's service
//! loop (the stdio side of [`super::direct`]).
//!
//! rmcp runs a stdio connection as a transport task and a service loop,
//! and each request as a task of its own: a line read, parsed into rmcp's
//! types, sent to the loop, handed to a request task, its answer sent
//! back to the loop and written. Around a call that takes a few µs that was
//! most of a round trip (the serve bench: 132 µs a round trip, against
//! 73-98 µs for a bare server that reads the pipe and makes the call; now
//! 77 µs, and 0.37x the server's CPU per call). Here the task that reads the connection's input
//! answers a plain `tools/call` itself: the call runs in a task of its
//! own (spawned by the reading task, it runs next on the same worker) that
//! writes its answer line when it is done, calls running side by side as
//! before. Every other line, and any call this path is not sure of, goes
//! to rmcp unchanged through an in-memory pipe, and rmcp's lines go out
//! through the same writer, a whole line at a time.
//!
//! A direct call keeps what a call through rmcp has:
//!
//! - it is answered only once the handshake is done, and only for a
//!   revision with one (before 2026-07-28), as rmcp would answer it;
//! - a call that reports progress, sends log lines the client asked for
//!   or may ask the user goes through rmcp: only a call with the proof
//!   that it needs none of them ([`Client::answer_only`]) is answered
//!   here;
//! - `notifications/cancelled` reaches the handler through rmcp, which
//!   cancels the direct call with that id; as rmcp does, a cancelled call
//!   is not answered;
//! - the end of the input (or of serving) ends the handler, which cancels
//!   the direct calls; nobody reads their answers then, so none is
//!   written.
//!
//! With tasks, 2025-11-25's task requests are answered here too, and
//! rmcp's answers to `initialize` and `tools/list` get what that revision
//! says a server with tasks answers (see [`super::legacy_tasks`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use rmcp::model::RequestId;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::direct::PlainCall;
use super::handler::{AnswerOnly, Client};
use super::legacy_tasks::{Patch, TaskRequest};
use super::stdio::{EndSignalling, Writer};

/// The longest line answered directly (as for HTTP bodies), and the most
/// of a line held here; longer ones go to rmcp as they come, which holds
/// them to its own limit.
const LARGEST_CALL: usize = 1 << 20;

/// How much rmcp may have written and the writer not yet taken.
const PIPE: usize = 64 * 1024;

/// How long the line after `notifications/initialized` waits for the
/// handshake to be done ([`handshake_done`]).
const HANDSHAKE_WAIT: Duration = Duration::from_secs(2);

/// How long the end of serving waits for rmcp's last lines to go out.
const DRAIN: Duration = Duration::from_millis(500);

/// The connection's output, shared by rmcp's lines and the direct answers.
type Output = Arc<Mutex<Writer>>;

/// The connection once the handshake is done (the direct path is open).
type Conn = Arc<OnceLock<Weak<Client>>>;

/// rmcp's answers to patch (2025-11-25 with tasks), by request id.
#[derive(Debug, Default)]
struct Patches {
    pending: std::sync::Mutex<HashMap<RequestId, Patch>>,
    /// The client speaks 2025-11-25 (`initialize` was patched).
    legacy: AtomicBool,
}

/// The reading and writing tasks in front of rmcp.
pub(super) struct Front {
    /// Set once the handshake is done: the direct path is open.
    conn: Conn,
    reading: JoinHandle<()>,
    writing: JoinHandle<()>,
}

impl Front {
    /// Read `input` and write `output`; rmcp serves the returned end of
    /// the pipe (its own input and output). With `tasks`, 2025-11-25's
    /// are served here.
    pub(super) fn start(input: EndSignalling, output: Writer, tasks: bool) -> (Self, DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(PIPE);
        let (from_rmcp, to_rmcp) = tokio::io::split(ours);
        let output: Output = Arc::new(Mutex::new(output));
        let conn: Conn = Arc::new(OnceLock::new());
        let patches = tasks.then(|| Arc::new(Patches::default()));
        let reading = tokio::spawn(read(
            BufReader::new(input),
            to_rmcp,
            Arc::clone(&conn),
            Arc::clone(&output),
            patches.clone(),
        ));
        let writing = tokio::spawn(write_rmcp(from_rmcp, output, Arc::clone(&conn), patches));
        let front = Self {
            conn,
            reading,
            writing,
        };
        (front, theirs)
    }

    /// From now on, answer `conn`'s plain calls directly.
    pub(super) fn open(&self, conn: &Arc<Client>) {
        let _ = self.conn.set(Arc::downgrade(conn));
    }

    /// Stop reading, and let rmcp's last lines out (its end of the pipe
    /// closes when its service ends).
    pub(super) async fn close(self) {
        self.reading.abort();
        let _ = tokio::time::timeout(DRAIN, self.writing).await;
    }
}

/// Each line of `input`: a plain call answered here once the direct path
/// is open, anything else written to rmcp. At the end of the input, rmcp
/// sees its end too.
async fn read(
    mut input: BufReader<EndSignalling>,
    mut to_rmcp: WriteHalf<DuplexStream>,
    conn: Conn,
    output: Output,
    patches: Option<Arc<Patches>>,
) {
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match next_line(&mut input, &mut line, &mut to_rmcp).await {
            Ok(Line::Whole) => {}
            Ok(Line::PassedOn) => continue,
            Ok(Line::End) | Err(_) => break,
        }
        if let Some(patches) = &patches
            && let Some((id, patch)) = Patch::of(&line)
        {
            let mut pending = patches.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.insert(id, patch);
        }
        if let Some(conn) = conn.get().and_then(Weak::upgrade) {
            if patches.is_some()
                && let Some(request) = TaskRequest::parse(&line)
            {
                let output = Arc::clone(&output);
                tokio::spawn(async move {
                    let message = request.answer(&conn, None, None, None).await;
                    write_line(&output, &message).await;
                });
                continue;
            }
            if let Some(call) = plain_call(&line, &conn) {
                tokio::spawn(answer(conn, call, Arc::clone(&output)));
                continue;
            }
        }
        if to_rmcp.write_all(&line).await.is_err() {
            break;
        }
        if patches.is_some() && is_initialized(&line) {
            handshake_done(&conn).await;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Whether `line` is the client's `notifications/initialized`.
fn is_initialized(line: &[u8]) -> bool {
    const METHOD: &[u8] = b"notifications/initialized";
    line.windows(METHOD.len()).any(|w| w == METHOD)
        && serde_json::from_slice::<serde_json::Value>(line)
            .is_ok_and(|m| m["method"] == "notifications/initialized")
}

/// Wait (at most [`HANDSHAKE_WAIT`]) until the direct path is open and
/// rmcp has handled `notifications/initialized`, so that a task request
/// the client sends right after it is answered here, as a task, and its
/// questions can reach the client: the lines that follow are read only
/// then. rmcp handles the notification in its own time, and before this
/// a task request went to rmcp, which drops `params.task`.
async fn handshake_done(conn: &Conn) {
    let deadline = tokio::time::Instant::now() + HANDSHAKE_WAIT;
    loop {
        if let Some(conn) = conn.get().and_then(Weak::upgrade) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            conn.tasking.reached(left).await;
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// What [`next_line`] read.
enum Line {
    /// A whole line, in the buffer.
    Whole,
    /// A line too long to be answered here, written to rmcp as it came
    /// (rmcp holds lines to its own limit), never held whole here.
    PassedOn,
    /// The end of the input (what came before it without a newline went
    /// to rmcp).
    End,
}

/// Read the next line of `input` into `line`, up to [`LARGEST_CALL`]
/// bytes; a longer one is passed on to rmcp piece by piece.
async fn next_line(
    input: &mut BufReader<EndSignalling>,
    line: &mut Vec<u8>,
    to_rmcp: &mut WriteHalf<DuplexStream>,
) -> std::io::Result<Line> {
    let mut passing = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            if !line.is_empty() {
                to_rmcp.write_all(line).await?;
            }
            return Ok(Line::End);
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !passing && line.len() + take > LARGEST_CALL {
            to_rmcp.write_all(line).await?;
            line.clear();
            passing = true;
        }
        if passing {
            to_rmcp.write_all(&available[..take]).await?;
        } else {
            line.extend_from_slice(&available[..take]);
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(if passing { Line::PassedOn } else { Line::Whole });
        }
    }
}

/// `line` as a call to answer directly in `conn`, with the tools it runs
/// on; `None` when it must go to rmcp.
fn plain_call(
    line: &[u8],
    conn: &Client,
) -> Option<(PlainCall, Arc<crate::tools::ToolSet>, AnswerOnly)> {
    const METHOD: &[u8] = b"tools/call";
    if !line.windows(METHOD.len()).any(|w| w == METHOD) {
        return None;
    }
    let call = PlainCall::parse(line)?;
    let tools = conn.snapshot();
    let proof = call.answer_only(conn, &tools)?;
    Some((call, tools, proof))
}

/// Run a direct call and write its answer, unless it was cancelled or the
/// connection ended meanwhile.
async fn answer(
    conn: Arc<Client>,
    (call, tools, proof): (PlainCall, Arc<crate::tools::ToolSet>, AnswerOnly),
    output: Output,
) {
    let trace_parent = super::metrics::trace_parent_in(&call.meta, None);
    let cancel = CancellationToken::new();
    // Over stdio there is no principal.
    let origin = super::handler::Origin::new(trace_parent, None);
    let message = call
        .answer(&conn, &tools, proof, origin, cancel.clone())
        .await;
    if cancel.is_cancelled() || conn.stopped().is_cancelled() {
        return;
    }
    write_line(&output, &message).await;
}

/// Write `message` as one line of `output`.
async fn write_line(output: &Output, message: &impl serde::Serialize) {
    let mut line = match serde_json::to_vec(message) {
        Ok(line) => line,
        Err(e) => {
            tracing::warn!("cannot serialize an MCP answer: {e}");
            return;
        }
    };
    line.push(b'\n');
    let mut output = output.lock().await;
    if let Err(e) = output.write_all(&line).await {
        tracing::debug!("cannot write an MCP answer: {e}");
        return;
    }
    let _ = output.flush().await;
}

/// rmcp's lines, each written whole; an answer waited for in `patches`
/// is patched first.
async fn write_rmcp(
    from_rmcp: ReadHalf<DuplexStream>,
    output: Output,
    conn: Conn,
    patches: Option<Arc<Patches>>,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Some(patches) = &patches {
            patch(&mut line, patches, &conn);
        }
        let mut output = output.lock().await;
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// Patch `line` (one of rmcp's) if it answers a request in `patches`.
fn patch(line: &mut Vec<u8>, patches: &Patches, conn: &Conn) {
    let patch = {
        let mut pending = patches.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return;
        }
        let Ok(Answered { id: Some(id) }) = serde_json::from_slice::<Answered>(line) else {
            return;
        };
        match pending.remove(&id) {
            Some(patch) => patch,
            None => return,
        }
    };
    if patch == Patch::ToolsList && !patches.legacy.load(Ordering::Relaxed) {
        return;
    }
    let Ok(mut answer) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    let conn = conn.get().and_then(Weak::upgrade);
    if !patch.apply(&mut answer, conn.as_deref()) {
        return;
    }
    if patch == Patch::Initialize {
        patches.legacy.store(true, Ordering::Relaxed);
    }
    if let Ok(mut patched) = serde_json::to_vec(&answer) {
        patched.push(b'\n');
        *line = patched;
    }
}

/// The id of one of rmcp's messages, if it has one.
#[derive(serde::Deserialize)]
struct Answered {
    #[serde(default)]
    id: Option<RequestId>,
}
