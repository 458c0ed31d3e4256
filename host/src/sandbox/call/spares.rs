//! Spare instances: fresh instances made ahead of time by a background
//! task, and used ones dropped by another, off the callers' path and
//! alongside each other.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::super::bindings::GuestOutput;
use super::super::state::CallSinks;
use super::{Guest, Live, Slot, lock};
use crate::tools::{ToolError, ToolErrorKind};

/// Fresh instances made ahead of time, off the caller's path.
///
/// Instantiating is most of what a fresh-instance call costs, and dropping
/// the used instance (resetting its memory for the pool) most of the rest.
/// Both are work no caller has to wait for: a background task keeps up to
/// `target` never-used instances ready and drops used ones (those of calls
/// on spares and of calls that instantiated inline alike). When calls find
/// the pool dry and a drop is costly (a CPython instance copies back a few
/// MB), the drops move to a blocking thread, so the next spare is made
/// while the previous instance is reset instead of after it. Each instance
/// still serves exactly one call, so no state can leak between calls.
pub(super) struct Spares {
    target: usize,
    ready: Mutex<Vec<Live>>,
    /// Used instances waiting to be dropped by the background.
    retired: Mutex<Vec<Live>>,
    /// Whether the task making spares is running (at most one per guest).
    working: AtomicBool,
    /// Whether a blocking thread is dropping used instances (at most one
    /// per guest).
    dropping: AtomicBool,
    /// What dropping one used instance took last time, in µs.
    drop_cost: AtomicU32,
    /// Set when making a spare failed: the next calls instantiate inline and
    /// report the error; a successful inline instantiation clears it.
    failing: AtomicBool,
}

/// A drop that takes at least this long goes to a blocking thread when
/// calls find the pool dry; a shorter one costs less than handing it over
/// (a wake-up of another thread, tens of µs on a busy host).
const COSTLY_DROP: Duration = Duration::from_micros(100);

/// Most used instances waiting for the background; past this the caller
/// drops its own, so the list (and the slots it holds) stays bounded
/// however far the dropping falls behind.
const MAX_RETIRED: usize = 8;

impl Spares {
    /// None made yet; the first calls start the background task.
    pub(super) fn new(target: usize) -> Self {
        Self {
            target,
            ready: Mutex::new(Vec::with_capacity(target)),
            retired: Mutex::new(Vec::new()),
            working: AtomicBool::new(false),
            dropping: AtomicBool::new(false),
            drop_cost: AtomicU32::new(0),
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
            let (result, used) = self.call_inline(name, input, sinks).await;
            self.after_inline(&result);
            if let Some(used) = used {
                if self.spares.target > 0 && self.costly_drops() {
                    self.retire(used);
                } else {
                    // Cheap enough to drop here; then the next instance
                    // finds its pool slot reset and warm at once. (And
                    // without spares there is no background work at all.)
                    drop(used);
                }
            }
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

    /// Hand a used instance to the background. It is woken only when the
    /// pool has run dry (or too many used instances wait): a wake-up is a
    /// futex call and a context switch, a few µs a call should not pay each
    /// time. So fewer than `target` used instances may wait for the next
    /// call to the plugin.
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

    /// Start the spares task unless it runs already or has nothing to do.
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
                if self.costly_drops() && lock(&self.spares.ready).is_empty() {
                    // Calls are finding the pool dry: make the next spare
                    // now, and drop the used instances on another thread
                    // meanwhile.
                    self.start_drops();
                } else {
                    // Drop first: a used instance holds a slot a call may
                    // be waiting for, and a task that refills first under
                    // sustained load never gets to the drops.
                    self.drop_retired_now();
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
            // look and before the flag was cleared: look once more. Not
            // while a blocking thread drops them: that thread starts this
            // task again when it is done, and looping here meanwhile would
            // spin on a full pool.
            let more = !lock(&self.spares.retired).is_empty()
                && !self.spares.dropping.load(Ordering::Acquire);
            if !more || self.spares.working.swap(true, Ordering::AcqRel) {
                return;
            }
        }
    }

    /// Whether dropping a used instance took long enough last time to be
    /// worth doing on another thread than the call's or the spares task's.
    fn costly_drops(&self) -> bool {
        Duration::from_micros(u64::from(self.spares.drop_cost.load(Ordering::Relaxed)))
            >= COSTLY_DROP
    }

    /// Drop the used instances waiting now, on this thread.
    fn drop_retired_now(&self) {
        loop {
            let retired = std::mem::take(&mut *lock(&self.spares.retired));
            if retired.is_empty() {
                return;
            }
            let started = Instant::now();
            let n = retired.len() as u32;
            for live in &retired {
                self.keep_working_set(live);
            }
            drop(retired);
            let each = started.elapsed().as_micros() / u128::from(n);
            self.spares
                .drop_cost
                .store(u32::try_from(each).unwrap_or(u32::MAX), Ordering::Relaxed);
        }
    }

    /// Drop the used instances on the runtime's blocking threads, unless
    /// that runs already: resetting an instance's memory is synchronous
    /// work (a CPython instance copies back a few MB), and the spares task
    /// should be making the next spare meanwhile.
    fn start_drops(&self) {
        if lock(&self.spares.retired).is_empty()
            || self.spares.dropping.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.spares.dropping.store(false, Ordering::Release);
            return;
        };
        let guest = self.clone();
        runtime.spawn_blocking(move || guest.drop_retired());
    }

    /// Drop used instances until none waits (on a blocking thread).
    fn drop_retired(&self) {
        loop {
            self.drop_retired_now();
            self.spares.dropping.store(false, Ordering::Release);
            // An instance may have been retired after the last look and
            // before the flag was cleared: look once more.
            let more = !lock(&self.spares.retired).is_empty();
            if !more || self.spares.dropping.swap(true, Ordering::AcqRel) {
                break;
            }
        }
        // Slots were freed: if the spares task gave up for want of one,
        // start it again.
        if lock(&self.spares.ready).len() < self.spares.target {
            self.replenish();
        }
    }
}
