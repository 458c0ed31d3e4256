//! Log lines of a running call: what a tool writes to its log, and who
//! else hears it besides the host's own log.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// How severe a tool's log line is, least first (a plugin's `host.log`
/// levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// Step by step detail.
    Trace,
    /// Detail for whoever debugs the tool.
    Debug,
    /// What the tool is doing.
    Info,
    /// Something looks wrong, the call goes on.
    Warn,
    /// Something failed.
    Error,
}

/// One log line of a running call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// How severe it is.
    pub level: LogLevel,
    /// The text (plugin text: clipped to the per-line and per-call log
    /// budgets, control characters escaped).
    pub message: String,
}

/// Where a call's log lines go besides the host's own log: an MCP client
/// that asked for them (`logging/setLevel`, or a request's log level), the
/// program running the call. Set it on the
/// [`CallContext`](super::CallContext) of a call; a call without one
/// writes to the host's log only.
///
/// A sink takes lines at its [`min_level`](Self::min_level) and above; the
/// host builds no [`LogLine`] for one below it, so asking for warnings
/// costs nothing per debug line. The per-call log budgets hold for the
/// lines a sink gets as for the host's log.
///
/// # Examples
///
/// ```
/// use toolhost::tools::{CallContext, LogLevel, LogSink};
///
/// let sink = LogSink::new(LogLevel::Info, |line| eprintln!("{:?}: {}", line.level, line.message));
/// assert!(sink.wants(LogLevel::Warn) && !sink.wants(LogLevel::Debug));
/// let cx = CallContext::default().with_logs(sink);
/// # let _ = cx;
/// ```
#[derive(Clone)]
pub struct LogSink {
    min: LogLevel,
    send: Arc<dyn Fn(LogLine) + Send + Sync>,
}

impl LogSink {
    /// A sink that calls `f` with each line at `min` or above. `f` runs on
    /// the call's thread: it must not block (send to a channel instead).
    pub fn new(min: LogLevel, f: impl Fn(LogLine) + Send + Sync + 'static) -> Self {
        Self {
            min,
            send: Arc::new(f),
        }
    }

    /// The least severe level passed on.
    pub fn min_level(&self) -> LogLevel {
        self.min
    }

    /// Whether a line at `level` is passed on.
    pub fn wants(&self, level: LogLevel) -> bool {
        level >= self.min
    }

    /// Pass `line` on, if it is at the sink's level or above.
    pub fn send(&self, line: LogLine) {
        if self.wants(line.level) {
            (self.send)(line);
        }
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogSink")
            .field("min", &self.min)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn a_sink_passes_on_its_level_and_above_only() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        let sink = LogSink::new(LogLevel::Info, move |line| {
            into.lock().unwrap().push(line.level);
        });
        for level in [
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
        ] {
            sink.send(LogLine {
                level,
                message: String::new(),
            });
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [LogLevel::Info, LogLevel::Warn, LogLevel::Error]
        );
        assert_eq!(sink.min_level(), LogLevel::Info);
    }
}
