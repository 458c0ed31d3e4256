//! Progress of a running call: what a tool reports, and where it goes.

use std::fmt;
use std::sync::Arc;

/// One progress report of a running call: `done` out of `total` (when
/// known), in the tool's own units, and what it is doing.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How much is done.
    pub done: f64,
    /// How much there is in all, when known.
    pub total: Option<f64>,
    /// What the tool is doing now (plugin text: clipped and escaped).
    pub message: Option<String>,
}

/// Where a call's progress reports go: an MCP client that sent a progress
/// token, the program running the loop, a terminal. Set it on the
/// [`CallContext`](super::CallContext) of a call; a call without one
/// reports to no one, at next to no cost.
///
/// The host passes on only reports that move forward (`done` larger than
/// the last one passed on) and at most one per
/// [`MIN_INTERVAL`](Self::MIN_INTERVAL), except one that reaches `total`:
/// a tool that reports in a tight loop cannot flood the listener.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    /// The shortest time between two reports passed on.
    pub const MIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(20);

    /// A sink that calls `f` with each report passed on. `f` runs on the
    /// call's thread: it must not block (send to a channel instead).
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Pass `progress` on.
    pub fn report(&self, progress: Progress) {
        (self.0)(progress);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink(..)")
    }
}
