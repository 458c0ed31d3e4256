//! Spare instances: fresh instances made ahead of time by a background
//! task, and used ones dropped there, off the callers' path.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::super::bindings::GuestOutput;
use super::super::state::CallSinks;
use super::{Guest, Live, Slot, lock};
use crate::tools::{ToolError, ToolErrorKind};

/// Fresh instances made ahead of time, off the caller's path.
///
/// Instantiating is most of what a fresh-instance call costs, and dropping
/// the used instance (resetting its memory for the pool) most of the rest.
/// Both are work no caller has to wait for: a background task keeps up to
/// `target` never-used instances ready and drops used ones. Each instance
/// still serves exactly one call, so no state can leak between calls.
pub(super) struct Spares {
    target: usize,
    ready: Mutex<Vec<Live>>,
    /// Used instances waiting to be dropped by the background task.
    retired: Mutex<Vec<Live>>,
    /// Whether the background task is running (at most one per guest).
    working: AtomicBool,
    /// Set when making a spare failed: the next calls instantiate inline and
    /// report the error; a successful inline instantiation clears it.
    failing: AtomicBool,
}

/// Most used instances waiting for the background task; past this the
/// caller drops its own, so the list (and the slots it holds) stays bounded
/// however far the task falls behind.
const MAX_RETIRED: usize = 8;

impl Spares {
    /// None made yet; the first calls start the background task.
    pub(super) fn new(target: usize) -> Self {
        Self {
            target,
            ready: Mutex::new(Vec::with_capacity(target)),
            retired: Mutex::new(Vec::new()),
            working: AtomicBool::new(false),
            failing: AtomicBool::new(false),
        }
    }

    /// How many never-used instances are ready right now.
    pub(super) fn ready(&self) -> usize {
        lock(&self.ready).len()
    }
}

impl Guest {
    /// One call on a fresh instance that serves no other call: a spare made
    /// ahead of time when there is one, else one made now.
    pub(crate) async fn call_fresh(
        &self,
        name: &str,
        input: &str,
        sinks: &CallSinks,
    ) -> Result<GuestOutput, ToolError> {
        crate::telemetry::note_instance(crate::telemetry::Instance::Fresh);
        let Some(mut live) = self.take_spare() else {
            let result = self.call_inline(name, input, sinks).await;
            self.after_inline(&result);
            return result;
        };
        let result = self.call_live(&mut live, name, input, sinks).await;
        self.retire(live);
        result
    }

    /// A fresh instance to keep for a session.
    pub(crate) async fn instantiate(&self) -> Result<Live, ToolError> {
        if let Some(live) = self.take_spare() {
            self.replenish();
            return Ok(live);
        }
        let result = self.instantiate_now(Slot::Wait).await;
        self.after_inline(&result);
        result
    }

    /// Hand a used instance to the background task. The task is woken only
    /// when the pool has run dry (or too many used instances wait): a
    /// wake-up is a futex call and a context switch, a few µs a call should
    /// not pay each time.
    fn retire(&self, live: Live) {
        let waiting = {
            let mut retired = lock(&self.spares.retired);
            if retired.len() >= MAX_RETIRED {
                Err(live)
            } else {
                retired.push(live);
                Ok(retired.len())
            }
        };
        let waiting = match waiting {
            Ok(waiting) => waiting,
            Err(live) => {
                // The task is behind: drop it here (outside the lock), so
                // its slot is free for the next call at once.
                drop(live);
                self.replenish();
                return;
            }
        };
        if waiting >= self.spares.target || lock(&self.spares.ready).is_empty() {
            self.replenish();
        }
    }

    fn take_spare(&self) -> Option<Live> {
        if self.spares.target == 0 {
            return None;
        }
        let live = lock(&self.spares.ready).pop();
        if live.is_some() {
            self.sandbox.count_spares(-1);
        }
        if live.is_none() {
            // Fill the pool while this call instantiates inline. A call that
            // got a spare asks for a new one after it is done instead: waking
            // the task costs a few µs the call should not wait for.
            self.replenish();
        }
        live
    }

    /// After an inline instantiation: if it worked, spares may be made again.
    fn after_inline<T>(&self, result: &Result<T, ToolError>) {
        let instantiated = result
            .as_ref()
            .map_or_else(|e| e.kind.leaves_instance_intact(), |_| true);
        if instantiated && self.spares.failing.swap(false, Ordering::Relaxed) {
            self.replenish();
        }
    }

    /// Start the background task unless it runs already or has nothing to do.
    fn replenish(&self) {
        if self.spares.target == 0 || self.spares.failing.load(Ordering::Relaxed) {
            return;
        }
        if self.spares.working.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.spares.working.store(false, Ordering::Release);
            return;
        };
        let guest = self.clone();
        runtime.spawn(async move { guest.maintain().await });
    }

    /// Drop used instances and make spares until there are `target`.
    async fn maintain(&self) {
        loop {
            loop {
                // Drop first: a used instance holds a slot a call may be
                // waiting for, and under sustained load a task that refills
                // first never gets to the drops.
                let retired = std::mem::take(&mut *lock(&self.spares.retired));
                if !retired.is_empty() {
                    for live in &retired {
                        self.keep_working_set(live);
                    }
                    drop(retired);
                    continue;
                }
                if self.spares.failing.load(Ordering::Relaxed)
                    || lock(&self.spares.ready).len() >= self.spares.target
                {
                    break;
                }
                // Spares only take slots that are free: they must never be
                // why a call waits.
                match self.instantiate_now(Slot::IfFree).await {
                    Ok(live) => {
                        lock(&self.spares.ready).push(live);
                        self.sandbox.count_spares(1);
                    }
                    Err(e) if e.kind == ToolErrorKind::Busy => break,
                    Err(e) => {
                        tracing::debug!(plugin = %self.identity.name, error = %e, "could not make a spare instance; instantiating per call");
                        self.spares.failing.store(true, Ordering::Relaxed);
                    }
                }
            }
            self.spares.working.store(false, Ordering::Release);
            // A call may have retired or taken an instance after the last
            // look and before the flag was cleared: look once more.
            let more = !lock(&self.spares.retired).is_empty();
            if !more || self.spares.working.swap(true, Ordering::AcqRel) {
                return;
            }
        }
    }
}
