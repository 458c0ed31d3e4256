//! [`CallLog`]: an opt-in, bounded record of the calls a registry ran.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::{CallContext, CallReport, SessionId, ToolErrorKind};

/// The most bytes of a tool name kept in an entry: a model may call a tool
/// by any name, and an unknown one is logged as it was called.
const MAX_NAME_BYTES: usize = 128;

/// One call in a [`CallLog`]. Inputs and outputs are absent unless the log
/// was made [`with_io`](CallLog::with_io).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallLogEntry {
    /// The tool's name as the call named it (clipped), without a version.
    pub tool: String,
    /// The version of the tool that ran, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The conversation the call belonged to.
    pub session: Option<SessionId>,
    /// Who the call was made for ([`CallContext::principal`]), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// When the call started, in milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// How long it took, retries and their pauses included.
    pub duration_ms: u64,
    /// `ok` or `error`.
    pub status: CallLogStatus,
    /// The error kind, for `error`.
    pub error_kind: Option<ToolErrorKind>,
    /// How many times the tool ran (0: it never reached the tool).
    pub attempts: u32,
    /// The input as JSON text, clipped (only [`with_io`](CallLog::with_io)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The output as JSON text, or the error message, clipped (only
    /// [`with_io`](CallLog::with_io)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// How a logged call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallLogStatus {
    /// It returned an output.
    Ok,
    /// It ended with a [`ToolError`](super::ToolError).
    Error,
}

type Sink = Box<dyn Fn(&CallLogEntry) + Send + Sync>;

#[derive(Default)]
struct Ring {
    entries: VecDeque<(CallLogEntry, usize)>,
    bytes: usize,
    evicted: u64,
}

/// A bounded ring of [`CallLogEntry`]s: at most `capacity` entries and
/// `max_bytes` bytes (each entry counted as its JSON text); the oldest go
/// first. Off unless given to a registry
/// ([`Observability::log`](super::Observability::log)). Inputs and
/// outputs are never recorded unless asked for with
/// [`with_io`](Self::with_io): they may hold whatever the user or a tool
/// handled.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolhost::tools::{CallContext, CallLog, NativeTool, Observability, ToolRegistry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let log = Arc::new(CallLog::new(100, 64 * 1024));
/// let registry = ToolRegistry::new().observed(Observability::new().log(log));
/// registry.register(NativeTool::new("echo", "Echoes.", json!({"type": "object"}),
///     |input| async move { Ok(input) }))?;
/// registry.call("echo", "{}", &CallContext::default()).await.output.unwrap();
/// let entries = registry.log().expect("on").entries();
/// assert_eq!(entries[0].tool, "echo");
/// assert_eq!(entries[0].input, None);
/// # Ok::<_, toolhost::tools::RegistryError>(())
/// # }).unwrap();
/// ```
pub struct CallLog {
    capacity: usize,
    max_bytes: usize,
    io_bytes: Option<usize>,
    sink: Option<Sink>,
    ring: Mutex<Ring>,
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog")
            .field("capacity", &self.capacity)
            .field("max_bytes", &self.max_bytes)
            .field("io_bytes", &self.io_bytes)
            .field("sink", &self.sink.is_some())
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl CallLog {
    /// A log that keeps the last `capacity` entries, at most `max_bytes`
    /// of them in all; no inputs or outputs, no sink.
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            capacity,
            max_bytes,
            io_bytes: None,
            sink: None,
            ring: Mutex::new(Ring::default()),
        }
    }

    /// Also record each call's input and output (or error message), each
    /// clipped to `max_bytes_each`.
    #[must_use]
    pub fn with_io(mut self, max_bytes_each: usize) -> Self {
        self.io_bytes = Some(max_bytes_each);
        self
    }

    /// Also hand every entry to `sink` as it is recorded (e.g. to append
    /// it to a file); the ring stays bounded whatever the sink does.
    #[must_use]
    pub fn with_sink(mut self, sink: impl Fn(&CallLogEntry) + Send + Sync + 'static) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// Whether entries carry inputs and outputs.
    pub fn includes_io(&self) -> bool {
        self.io_bytes.is_some()
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        // Every change to the ring is complete before it can panic.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entries kept, oldest first.
    pub fn entries(&self) -> Vec<CallLogEntry> {
        self.ring().entries.iter().map(|(e, _)| e.clone()).collect()
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.ring().entries.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the entries kept (as JSON text).
    pub fn bytes(&self) -> usize {
        self.ring().bytes
    }

    /// How many entries were pushed out (or never fit) so far.
    pub fn evicted(&self) -> u64 {
        self.ring().evicted
    }

    /// Forget every entry.
    pub fn clear(&self) {
        let mut ring = self.ring();
        ring.entries.clear();
        ring.bytes = 0;
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one call's facts, gathered in one place by the registry"
    )]
    pub(super) fn record(
        &self,
        tool: &str,
        version: Option<&str>,
        cx: &CallContext,
        started: SystemTime,
        duration: Duration,
        report: &CallReport,
        input: Option<&Value>,
    ) {
        let io = |text: String, max: usize| crate::text::clip(&text, max).into_owned();
        let entry = CallLogEntry {
            tool: crate::text::clip(tool, MAX_NAME_BYTES).into_owned(),
            version: version.map(str::to_owned),
            session: cx.session.clone(),
            principal: cx
                .principal
                .as_deref()
                .map(|p| crate::text::clip(p, MAX_NAME_BYTES).into_owned()),
            started_unix_ms: millis(started.duration_since(UNIX_EPOCH).unwrap_or_default()),
            duration_ms: millis(duration),
            status: match report.output {
                Ok(_) => CallLogStatus::Ok,
                Err(_) => CallLogStatus::Error,
            },
            error_kind: report.output.as_ref().err().map(|e| e.kind),
            attempts: report.attempts,
            input: self
                .io_bytes
                .and_then(|max| input.map(|v| io(v.to_string(), max))),
            output: self.io_bytes.map(|max| match &report.output {
                Ok(v) => io(v.to_string(), max),
                Err(e) => io(e.message.clone(), max),
            }),
        };
        if let Some(sink) = &self.sink {
            sink(&entry);
        }
        let size = serde_json::to_string(&entry).map_or(usize::MAX, |t| t.len());
        let mut ring = self.ring();
        if size > self.max_bytes || self.capacity == 0 {
            ring.evicted += 1;
            return;
        }
        while ring.entries.len() >= self.capacity || ring.bytes + size > self.max_bytes {
            let Some((_, old)) = ring.entries.pop_front() else {
                break;
            };
            ring.bytes -= old;
            ring.evicted += 1;
        }
        ring.bytes += size;
        ring.entries.push_back((entry, size));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::tools::{CallContext, NativeTool, Observability, ToolError, ToolRegistry};

    fn registry(log: CallLog) -> (ToolRegistry, Arc<CallLog>) {
        let log = Arc::new(log);
        let registry = ToolRegistry::new().observed(Observability::new().log(Arc::clone(&log)));
        registry
            .register(NativeTool::new(
                "echo",
                "Echoes, or fails on {\"fail\": true}.",
                json!({"type": "object"}),
                |input| async move {
                    if input["fail"] == json!(true) {
                        Err(ToolError::failed("asked to fail"))
                    } else {
                        Ok(input)
                    }
                },
            ))
            .unwrap();
        (registry, log)
    }

    #[tokio::test]
    async fn ten_thousand_calls_keep_at_most_capacity_entries_and_max_bytes() {
        let (registry, log) = registry(CallLog::new(100, 8 * 1024));
        let cx = CallContext::in_session(SessionId::new("s1"));
        for i in 0..10_000 {
            let input = format!("{{\"i\": {i}}}");
            registry.call("echo", &input, &cx).await.output.unwrap();
            assert!(log.len() <= 100);
            assert!(log.bytes() <= 8 * 1024, "{}", log.bytes());
        }
        let entries = log.entries();
        assert!(!entries.is_empty());
        assert_eq!(log.evicted(), 10_000 - entries.len() as u64);
        let bytes: usize = entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap().len())
            .sum();
        assert_eq!(bytes, log.bytes());
        // Bytes bind before the count here: each entry is ~150 bytes.
        assert!(entries.len() < 100, "{}", entries.len());
        let roomy = registry_with_count_bound().await;
        assert_eq!(roomy.len(), 100, "the count binds when bytes allow");
    }

    async fn registry_with_count_bound() -> Arc<CallLog> {
        let (registry, log) = registry(CallLog::new(100, usize::MAX));
        for _ in 0..1_000 {
            registry
                .call("echo", "{}", &CallContext::default())
                .await
                .output
                .unwrap();
        }
        log
    }

    #[tokio::test]
    async fn entries_say_what_ran_and_never_the_io_unless_asked() {
        let (registry, log) = registry(CallLog::new(10, 64 * 1024));
        let cx = CallContext::in_session(SessionId::new("s1"));
        registry
            .call("echo", r#"{"secret": "hunter2"}"#, &cx)
            .await
            .output
            .unwrap();
        registry
            .call("echo", r#"{"fail": true}"#, &cx)
            .await
            .output
            .unwrap_err();
        registry.call("nope", "{}", &cx).await.output.unwrap_err();
        let entries = log.entries();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].tool, "echo");
        assert_eq!(entries[0].status, CallLogStatus::Ok);
        assert_eq!(entries[0].session, Some(SessionId::new("s1")));
        assert_eq!(entries[0].attempts, 1);
        assert!(entries[0].started_unix_ms > 1_600_000_000_000);
        assert_eq!(entries[1].error_kind, Some(ToolErrorKind::ToolFailed));
        assert_eq!(entries[2].error_kind, Some(ToolErrorKind::UnknownTool));
        assert_eq!(entries[2].attempts, 0);
        let text = serde_json::to_string(&entries).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("\"input\""), "{text}");

        let (registry, log) = registry_io();
        registry
            .call("echo", r#"{"secret": "hunter2"}"#, &cx)
            .await
            .output
            .unwrap();
        let entry = &log.entries()[0];
        assert!(entry.input.as_deref().unwrap().contains("\"secret\""));
        let output = entry.output.as_deref().unwrap();
        assert!(output.starts_with("{\"secret\""), "{output}");
        assert!(
            !output.contains("hunter2") && output.contains("more bytes"),
            "clipped: {output}"
        );
    }

    fn registry_io() -> (ToolRegistry, Arc<CallLog>) {
        registry(CallLog::new(10, 64 * 1024).with_io(12))
    }

    #[tokio::test]
    async fn the_sink_sees_every_entry_the_ring_keeps_only_capacity() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        let (registry, log) = registry(
            CallLog::new(2, 64 * 1024)
                .with_sink(move |e| into.lock().unwrap().push(e.tool.clone())),
        );
        for _ in 0..5 {
            registry
                .call("echo", "{}", &CallContext::default())
                .await
                .output
                .unwrap();
        }
        assert_eq!(seen.lock().unwrap().len(), 5);
        assert_eq!(log.len(), 2);
    }
}
