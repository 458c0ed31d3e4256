//! The host's own imports of both contract series (`log`, `config`, and
//! 0.2's `progress`), on a store's [`StoreState`]: a plugin's log lines
//! and progress reports, clipped and escaped, to the call's sinks.

use std::time::Instant;

use super::bindings::{
    HostImports, HostImports2, Level, Level2, ProgressHost, TypesHost, TypesHost2,
};
use super::state::{MAX_LOG_LINES_PER_CALL, MAX_LOG_PER_CALL, StoreState};
use crate::text::untrusted;
use crate::tools::{LogLevel, LogLine, Progress, ProgressSink};

/// Most bytes one log message may have; longer ones are cut.
const MAX_LOG_MESSAGE: usize = 4 << 10;
/// Most bytes of a progress message; longer ones are cut.
const MAX_PROGRESS_MESSAGE: usize = 512;

impl TypesHost for StoreState {}

impl HostImports for StoreState {
    fn log(&mut self, level: Level, message: String) {
        self.write_log(level, message);
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.identity.config.get(&key).cloned()
    }
}

impl TypesHost2 for StoreState {}

impl super::offer_calls::OfferTypesHost for StoreState {}

// Series 0.2: the same log and config as 0.1.
impl HostImports2 for StoreState {
    fn log(&mut self, level: Level2, message: String) {
        let level = match level {
            Level2::Trace => Level::Trace,
            Level2::Debug => Level::Debug,
            Level2::Info => Level::Info,
            Level2::Warn => Level::Warn,
            Level2::Error => Level::Error,
        };
        self.write_log(level, message);
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.identity.config.get(&key).cloned()
    }
}

impl ProgressHost for StoreState {
    fn report(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        let Some(sink) = &self.progress else {
            return;
        };
        if !done.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        // Only forward, and not too often: MCP requires each notification
        // to move forward, and a tight loop must not flood the listener. A
        // report that reaches the total always goes through.
        let now = Instant::now();
        let finished = total.is_some_and(|t| done >= t);
        if let Some((last, at)) = self.progress_last
            && (done <= last || (!finished && now.duration_since(at) < ProgressSink::MIN_INTERVAL))
        {
            return;
        }
        self.progress_last = Some((done, now));
        let message = message.map(|m| untrusted(&m, MAX_PROGRESS_MESSAGE));
        sink.report(Progress {
            done,
            total,
            message,
        });
    }
}

impl StoreState {
    fn write_log(&mut self, level: Level, message: String) {
        if self.log_left == 0 || self.log_lines_left == 0 {
            if !self.log_cut {
                self.log_cut = true;
                tracing::warn!(plugin = %self.identity.name, "plugin log cut off: over {MAX_LOG_PER_CALL} bytes or {MAX_LOG_LINES_PER_CALL} lines in one call");
            }
            return;
        }
        self.log_lines_left -= 1;
        // Clipped, then escaped: a newline or escape sequence in the text
        // cannot start a forged log line or repaint the operator's terminal.
        let message = untrusted(&message, MAX_LOG_MESSAGE.min(self.log_left));
        self.log_left = self.log_left.saturating_sub(message.len());
        let plugin = &*self.identity.name;
        match level {
            Level::Trace => tracing::trace!(target: "toolhost::plugin", plugin, "{message}"),
            Level::Debug => tracing::debug!(target: "toolhost::plugin", plugin, "{message}"),
            Level::Info => tracing::info!(target: "toolhost::plugin", plugin, "{message}"),
            Level::Warn => tracing::warn!(target: "toolhost::plugin", plugin, "{message}"),
            Level::Error => tracing::error!(target: "toolhost::plugin", plugin, "{message}"),
        }
        // Checked before a line is made: a listener that asked for warnings
        // costs a debug line nothing.
        let level = log_level(level);
        if let Some(sink) = &self.logs
            && sink.wants(level)
        {
            sink.send(LogLine { level, message });
        }
    }
}

fn log_level(level: Level) -> LogLevel {
    match level {
        Level::Trace => LogLevel::Trace,
        Level::Debug => LogLevel::Debug,
        Level::Info => LogLevel::Info,
        Level::Warn => LogLevel::Warn,
        Level::Error => LogLevel::Error,
    }
}
