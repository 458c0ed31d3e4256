//! What a store carries: WASI context, resource table, limits, host imports.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::ask::Asking;
use super::bindings::{
    HostImports, HostImports2, Level, Level2, ProgressHost, TypesHost, TypesHost2,
};
use super::capture::StderrCapture;
use super::files::OpenHandles;
use super::http::HttpState;
use super::{LimitHit, PluginIdentity};
use crate::text::untrusted;
use crate::tools::{CallContext, LogLevel, LogLine, LogSink, Progress, ProgressSink, QuestionSink};

/// Most bytes of a progress message; longer ones are cut.
const MAX_PROGRESS_MESSAGE: usize = 512;
/// Most bytes one log message may have; longer ones are cut.
const MAX_LOG_MESSAGE: usize = 4 << 10;
/// Most log bytes one call may write; the rest is dropped with a note.
const MAX_LOG_PER_CALL: usize = 64 << 10;
/// Most log lines one call may write, however short: an empty line costs
/// no bytes, but each one a client asked for is a notification to send.
const MAX_LOG_LINES_PER_CALL: usize = 1 << 10;
/// Most entries in a store's resource table (descriptors, streams,
/// pollables, ...); a push past it traps. Real guests use a few dozen.
const MAX_TABLE_ENTRIES: usize = 16 << 10;

pub(crate) struct StoreState {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    /// Files and directories the guest opened (see `files`).
    pub(crate) handles: OpenHandles,
    pub(crate) limiter: MemoryLimiter,
    /// When the running call must end; read by the epoch callback.
    pub(crate) deadline: Instant,
    pub(crate) identity: Arc<PluginIdentity>,
    log_left: usize,
    log_lines_left: usize,
    log_cut: bool,
    pub(crate) stderr: StderrCapture,
    /// wasi:http: the plugin's grant and this call's requests.
    pub(crate) http: HttpState,
    /// Where this call's progress reports go (contract 0.2), and the last
    /// one passed on.
    progress: Option<ProgressSink>,
    progress_last: Option<(f64, Instant)>,
    /// Who hears this call's log lines besides the host's log.
    logs: Option<LogSink>,
    /// Where this call's questions for the user go (contract 0.2).
    pub(super) asking: Asking,
}

/// Where a call's reports, log lines and questions go: the sinks of its
/// [`CallContext`], owned so that they can travel into the call's future.
#[derive(Clone, Default)]
pub(crate) struct CallSinks {
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) logs: Option<LogSink>,
    pub(crate) questions: Option<QuestionSink>,
}

impl From<&CallContext> for CallSinks {
    fn from(cx: &CallContext) -> Self {
        Self {
            progress: cx.progress.clone(),
            logs: cx.logs.clone(),
            questions: cx.questions.clone(),
        }
    }
}

impl StoreState {
    pub(crate) fn new(
        wasi: WasiCtx,
        memory_bytes: u64,
        identity: Arc<PluginIdentity>,
        stderr: StderrCapture,
        http: HttpState,
    ) -> Self {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_TABLE_ENTRIES);
        Self {
            wasi,
            table,
            handles: OpenHandles::default(),
            limiter: MemoryLimiter::new(memory_bytes),
            deadline: Instant::now(),
            identity,
            log_left: MAX_LOG_PER_CALL,
            log_lines_left: MAX_LOG_LINES_PER_CALL,
            log_cut: false,
            stderr,
            http,
            progress: None,
            progress_last: None,
            logs: None,
            asking: Asking::default(),
        }
    }

    /// Send the progress reports, log lines and questions of this call of
    /// `tool` to `sinks` (none: nowhere). Set for every call, so an instance
    /// kept for a session never reports to an earlier call's listener.
    pub(crate) fn attach(&mut self, sinks: &CallSinks, tool: &str) {
        self.progress.clone_from(&sinks.progress);
        self.progress_last = None;
        self.logs.clone_from(&sinks.logs);
        self.asking.start(sinks.questions.as_ref(), tool);
    }

    /// Reset per-call budgets that are not wasmtime's (fuel and epochs are).
    pub(crate) fn start_call(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.log_left = MAX_LOG_PER_CALL;
        self.log_lines_left = MAX_LOG_LINES_PER_CALL;
        self.log_cut = false;
        self.stderr.reset();
        self.http.start_call(deadline);
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

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

/// Caps the guest's total linear memory. A growth past the cap traps at
/// once with [`LimitHit::Memory`], so the kind is known by type, not guessed.
pub(crate) struct MemoryLimiter {
    cap: u64,
    used: u64,
}

impl MemoryLimiter {
    fn new(cap: u64) -> Self {
        Self { cap, used: 0 }
    }

    /// The linear memory the instance holds now (it never shrinks).
    pub(crate) fn used(&self) -> u64 {
        self.used
    }
}

/// Generous caps on instance, table and memory counts: real components
/// stay far below, and the pooling allocator bounds the totals anyway.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let grow = (desired - current.min(desired)) as u64;
        if self.used + grow > self.cap {
            return Err(wasmtime::Error::new(LimitHit::Memory {
                cap: self.cap,
                asked: self.used + grow,
            }));
        }
        self.used += grow;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        1000
    }
    fn tables(&self) -> usize {
        1000
    }
    fn memories(&self) -> usize {
        100
    }
}
