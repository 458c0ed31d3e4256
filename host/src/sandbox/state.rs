//! What a store carries: WASI context, resource table, limits, the call's
//! sinks and budgets (the imports that use them are `imports`, `ask`,
//! `files`).

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::capture::StderrCapture;
use super::http::HttpState;
use super::{LimitHit, PluginIdentity};
use crate::tools::{CallContext, LogSink, ProgressSink, QuestionSink};

/// Most log bytes one call may write; the rest is dropped with a note.
pub(super) const MAX_LOG_PER_CALL: usize = 64 << 10;
/// Most log lines one call may write, however short: an empty line costs
/// no bytes, but each one a client asked for is a notification to send.
pub(super) const MAX_LOG_LINES_PER_CALL: usize = 1 << 10;
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
    pub(super) log_left: usize,
    pub(super) log_lines_left: usize,
    pub(super) log_cut: bool,
    pub(crate) stderr: StderrCapture,
    /// wasi:http: the plugin's grant and this call's requests.
    pub(crate) http: HttpState,
    /// Where this call's progress reports go (contract 0.2), and the last
    /// one passed on.
    pub(super) progress: Option<ProgressSink>,
    pub(super) progress_last: Option<(f64, Instant)>,
    /// Who hears this call's log lines besides the host's log.
    pub(super) logs: Option<LogSink>,
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

/// A call's questions: who answers them and how many were asked.
#[derive(Default)]
pub(crate) struct Asking {
    pub(super) sink: Option<QuestionSink>,
    /// The tool the running call is of, shown with each question.
    pub(super) tool: String,
    pub(super) asked: usize,
    /// Tells the call's driver where the deadline moved.
    pub(super) moves: Option<tokio::sync::watch::Sender<Instant>>,
}

impl Asking {
    /// A new call of `tool`, whose questions go to `sink`.
    pub(crate) fn start(&mut self, sink: Option<&QuestionSink>, tool: &str) {
        self.asked = 0;
        self.sink = sink.cloned();
        if self.sink.is_some() {
            tool.clone_into(&mut self.tool);
        }
    }
}

/// The handles one store opened, to count the ones still open.
///
/// A handle stays open while anything holds it: its descriptor, or a
/// stream read from it after the descriptor was dropped. So each entry is a
/// weak reference to the open file, and an entry counts until the last
/// strong one is gone.
#[derive(Debug, Default)]
pub(crate) struct OpenHandles {
    pub(super) open: Vec<std::sync::Weak<std::fs::File>>,
}

impl OpenHandles {
    /// How many are open now.
    pub(super) fn live(&mut self) -> usize {
        self.open.retain(|h| h.strong_count() > 0);
        self.open.len()
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
