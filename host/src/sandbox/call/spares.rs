//! Spare instances: fresh instances made ahead of time by a background
//! task, and used ones dropped there, off the callers' path.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

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
    /// Callers waiting for the background task's next spare (at most one:
    /// see [`Guest::wait_for_spare`]).
    waiting: AtomicUsize,
    /// Told when the background task made a spare, or stopped.
    made: Notify,
    /// How long an instantiation of this component takes, and dropping a
    /// used instance.
    instantiate: Average,
    drop: Average,
}

/// An instantiation faster than this is cheaper to do inline than the
/// hand-off between threads a wait for a spare costs (see
/// [`Guest::wait_for_spare`]). CPython and Go components take 0.5 to 1 ms,
/// QuickJS 0.1 ms, C 10 µs.
const WAIT_FOR_SPARES_FROM: u64 = 250;

/// A moving average of durations, in µs (0 before the first).
#[derive(Default)]
struct Average(AtomicU64);

impl Average {
    fn note(&self, took: Duration) {
        let took = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        // A lost update under a race only slows the average down.
        let before = self.0.load(Ordering::Relaxed);
        let after = if before == 0 {
            took
        } else {
            before.saturating_mul(7).saturating_add(took) / 8
        };
        self.0.store(after, Ordering::Relaxed);
    }

    fn micros(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
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
            waiting: AtomicUsize::new(0),
            made: Notify::new(),
            instantiate: Average::default(),
            drop: Average::default(),
        }
    }

    /// How many never-used instances are ready right now.
    pub(super) fn ready(&self) -> usize {
        lock(&self.ready).len()
    }

    /// Note how long an instantiation took.
    pub(super) fn timed(&self, took: Duration) {
        self.instantiate.note(took);
    }

    /// Whether a call that finds no spare ready should wait for the next
    /// one, from what the host has seen of this component: when making an
    /// instance is slow, and dropping a used one takes a good part of that
    /// (which the waiting caller does meanwhile), the two threads share
    /// the work and every call costs about one instantiation (CPython:
    /// 0.6 ms to make, 0.3 ms to drop). When making one is much slower
    /// than dropping one (Go: 1 ms and 0.1 ms), the waiting caller would
    /// sit idle: two instantiations side by side come out ahead.
    fn wait_for_spares(&self) -> bool {
        let instantiate = self.instantiate.micros();
        instantiate >= WAIT_FOR_SPARES_FROM && self.drop.micros() * 4 >= instantiate
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
        let spare = match self.take_spare() {
            Some(live) => Some(live),
            None if self.spares.wait_for_spares() => self.wait_for_spare().await,
            None => None,
        };
        let Some(mut live) = spare else {
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
        let live = self.take_ready();
        if live.is_none() {
            // Fill the pool while this call instantiates inline. A call that
            // got a spare asks for a new one after it is done instead: waking
            // the task costs a few µs the call should not wait for.
            self.replenish();
        }
        live
    }

    /// The next spare of the background task, if it is running and no
    /// other caller waits for that spare already; for components slow to
    /// instantiate.
    ///
    /// Back to back calls take spares faster than they are made, so a call
    /// often finds none ready but one in the making. Instantiating inline
    /// costs a whole instantiation, and the drop of the used instance after
    /// the call, while the task makes another spare beside it on the same
    /// cores: the calls come out fast and slow by turns, half and half
    /// (CPython: 0.3 and 1.1 ms). Waiting costs what is left of the
    /// spare's making (the task makes it before anything else), and the
    /// caller drops the used instances meanwhile, so the two share the
    /// work: every call costs about one instantiation (CPython: 0.6 ms).
    /// One caller waits per spare: the others would wait for the ones
    /// after it, so they instantiate inline.
    async fn wait_for_spare(&self) -> Option<Live> {
        let spares = &self.spares;
        if !spares.working.load(Ordering::Acquire) || spares.failing.load(Ordering::Relaxed) {
            return None;
        }
        if spares.waiting.fetch_add(1, Ordering::AcqRel) > 0 {
            spares.waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let made = spares.made.notified();
        let mut made = std::pin::pin!(made);
        // Registered before the last look: a spare pushed after it wakes us.
        made.as_mut().enable();
        let live = match self.take_ready() {
            Some(live) => Some(live),
            None if spares.working.load(Ordering::Acquire) => {
                // The task makes the spare first; take its other work.
                self.drop_retired();
                // The task is bounded by the guest's timeout; so is this.
                let _ = tokio::time::timeout(self.limits.timeout, made).await;
                self.take_ready()
            }
            None => None,
        };
        spares.waiting.fetch_sub(1, Ordering::AcqRel);
        live
    }

    /// A ready spare, if there is one (asks for no new one).
    fn take_ready(&self) -> Option<Live> {
        let live = lock(&self.spares.ready).pop();
        if live.is_some() {
            self.sandbox.count_spares(-1);
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

    /// Drop the used instances waiting for it, if any.
    fn drop_retired(&self) -> bool {
        let retired = std::mem::take(&mut *lock(&self.spares.retired));
        let any = !retired.is_empty();
        for live in retired {
            let start = Instant::now();
            self.keep_working_set(&live);
            drop(live);
            self.spares.drop.note(start.elapsed());
        }
        any
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
                // first never gets to the drops. But a caller waiting for
                // the next spare waits for nothing else: make it first.
                let awaited = self.spares.waiting.load(Ordering::Acquire) > 0
                    && lock(&self.spares.ready).is_empty();
                if !awaited && self.drop_retired() {
                    continue;
                }
                if self.spares.failing.load(Ordering::Relaxed)
                    || lock(&self.spares.ready).len() >= self.spares.target
                {
                    break;
                }
                // Spares only take slots that are free: they must never be
                // why a call waits.
                let failure = match self.instantiate_now(Slot::IfFree).await {
                    Ok(live) => {
                        lock(&self.spares.ready).push(live);
                        self.sandbox.count_spares(1);
                        None
                    }
                    Err(e) => Some(e),
                };
                self.spares.made.notify_waiters();
                match failure {
                    None => {}
                    Some(e) if e.kind == ToolErrorKind::Busy => break,
                    Some(e) => {
                        tracing::debug!(plugin = %self.identity.name, error = %e, "could not make a spare instance; instantiating per call");
                        self.spares.failing.store(true, Ordering::Relaxed);
                    }
                }
            }
            self.spares.working.store(false, Ordering::Release);
            // A caller waiting for a spare that will not come now
            // instantiates its own.
            self.spares.made.notify_waiters();
            // A call may have retired or taken an instance after the last
            // look and before the flag was cleared: look once more.
            let more = !lock(&self.spares.retired).is_empty();
            if !more || self.spares.working.swap(true, Ordering::AcqRel) {
                return;
            }
        }
    }
}
