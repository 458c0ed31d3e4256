//! Wall-clock deadlines for CPU-bound guests.
//!
//! An async timeout alone cannot stop a guest that never yields, and a
//! periodic epoch ticker alone overshoots by up to a tick plus scheduler
//! noise. So each call arms the watchdog with its exact deadline; a thread
//! owned by the [`Sandbox`](super::Sandbox) sleeps until the earliest one
//! and bumps the engine's epoch then. Every store's epoch callback compares
//! the clock with its own deadline, so a bump meant for another call costs
//! one clock read. While calls are running the thread also bumps every
//! [`YIELD_TICK`], so long-running guests yield their executor thread.
//!
//! A deadline stays armed after it passes, until its call disarms it, and
//! the thread bumps the epoch again every [`OVERDUE_RETRY`] while any armed
//! deadline is overdue. One bump is not enough: a guest whose epoch check
//! fell just before its deadline asks to yield, and wasmtime sets its next
//! epoch deadline only when the task runs again, relative to the epoch of
//! that moment. A bump made while the task waited for its executor thread
//! is then already counted, and had it been the last one, the guest would
//! run on until its fuel ran out.
//!
//! Every call arms and disarms a deadline, so on a many-core host this is
//! the one structure all callers touch. Deadlines therefore live in shards
//! (a thread keeps to its own), the thread's next wake-up is an atomic that
//! callers read without a lock, and a caller takes the thread's lock only
//! when its deadline comes before that wake-up (rare: deadlines are
//! seconds away and the thread wakes every tick while calls run).
//!
//! The thread also keeps ticking for [`LINGER`] after the last armed
//! deadline is gone before it waits for work without a timeout. Under a
//! steady stream of short calls there are many moments with no call
//! running; a thread that slept for good at each of them would have to be
//! woken by the next call (a futex wake and a context switch on that
//! call's path: one call in 60-80 with 8 HTTP clients on 2 cores).

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often running guests yield to the async executor.
const YIELD_TICK: Duration = Duration::from_millis(10);

/// How often the epoch is bumped again while an armed deadline is overdue.
/// It bounds how long a guest can outlive its deadline once it is back on
/// a thread, and costs other running guests one clock read per bump for
/// the short time until the overdue call disarms.
const OVERDUE_RETRY: Duration = Duration::from_millis(1);

/// How long the thread keeps ticking once no deadline is armed, so that
/// the next call need not wake it. An idle host pays for this many ticks
/// after its last call, then the thread sleeps until a call comes.
const LINGER: Duration = Duration::from_millis(100);

/// `wake_at` while the thread scans the shards: a caller that reads it
/// wakes the thread, since the scan may have passed its shard already.
const SCANNING: u64 = 0;
/// `wake_at` while no call is running: the thread waits for work.
const IDLE: u64 = u64::MAX;

/// One shard of armed deadlines, on a cache line of its own.
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    deadlines: Mutex<Deadlines>,
}

#[derive(Default)]
struct Deadlines {
    /// Armed deadlines, each with an id unique in its shard so equal
    /// instants coexist.
    set: BTreeSet<(Instant, u64)>,
    next_id: u64,
}

struct Shared {
    shards: Box<[Shard]>,
    /// When the thread wakes by itself, in nanoseconds after `base` (plus
    /// one, so that it is never [`SCANNING`]); or [`SCANNING`] or [`IDLE`].
    wake_at: AtomicU64,
    base: Instant,
    /// Held by the thread except while it waits, so a caller that takes it
    /// before notifying knows the thread is waiting and hears it. `true`
    /// once the watchdog shuts down.
    control: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The locks guard plain data; a panic elsewhere leaves it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos())
            .unwrap_or(IDLE - 1)
            .saturating_add(1)
            .min(IDLE - 1)
    }
}

/// This thread's shard: threads are dealt shards round-robin on first use.
fn shard_index(shards: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<Option<usize>> = const { Cell::new(None) };
    }
    MINE.with(|mine| {
        let index = mine.get().unwrap_or_else(|| {
            let index = NEXT.fetch_add(1, Ordering::Relaxed);
            mine.set(Some(index));
            index
        });
        index % shards
    })
}

pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(crate) fn start(engine: wasmtime::Engine) -> std::io::Result<Self> {
        let shards = std::thread::available_parallelism().map_or(1, |n| n.get().min(64));
        let shared = Arc::new(Shared {
            shards: (0..shards).map(|_| Shard::default()).collect(),
            wake_at: AtomicU64::new(IDLE),
            base: Instant::now(),
            control: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("toolhost-watchdog".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&shared, &engine)
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Arm a deadline; it is disarmed when the guard drops.
    pub(crate) fn arm(&self, deadline: Instant) -> Armed<'_> {
        let shared = &*self.shared;
        let shard = &shared.shards[shard_index(shared.shards.len())];
        let id = {
            let mut deadlines = lock(&shard.deadlines);
            let id = deadlines.next_id;
            deadlines.next_id += 1;
            deadlines.set.insert((deadline, id));
            id
        };
        // Read after the insert: either the thread's scan saw the deadline,
        // or this reads SCANNING or the wake-up that scan chose.
        let wake_at = shared.wake_at.load(Ordering::SeqCst);
        if wake_at == SCANNING || shared.nanos(deadline) < wake_at {
            // Taking the lock waits until the thread is asleep, so the
            // notification cannot fall between its scan and its wait.
            let _control = lock(&shared.control);
            shared.wake.notify_one();
        }
        Armed {
            shard,
            key: (deadline, id),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        *lock(&self.shared.control) = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A deadline that is armed until this is dropped.
pub(crate) struct Armed<'a> {
    shard: &'a Shard,
    key: (Instant, u64),
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        lock(&self.shard.deadlines).set.remove(&self.key);
    }
}

fn run(shared: &Shared, engine: &wasmtime::Engine) {
    let mut shutdown = lock(&shared.control);
    // When a scan last found an armed deadline.
    let mut last_busy: Option<Instant> = None;
    loop {
        if *shutdown {
            return;
        }
        shared.wake_at.store(SCANNING, Ordering::SeqCst);
        let now = Instant::now();
        let mut overdue = false;
        let mut next: Option<Instant> = None;
        for shard in &shared.shards {
            let deadlines = lock(&shard.deadlines);
            // Overdue deadlines stay until their calls disarm them (see the
            // module docs); there are at most as many as calls running.
            for &(t, _) in &deadlines.set {
                if t > now {
                    next = Some(next.map_or(t, |n| n.min(t)));
                    break;
                }
                overdue = true;
            }
        }
        if overdue {
            engine.increment_epoch();
            let retry = now + OVERDUE_RETRY;
            next = Some(next.map_or(retry, |n| n.min(retry)));
        }
        if next.is_some() {
            last_busy = Some(now);
        } else if let Some(busy) = last_busy {
            // Linger: tick on a while, so that the next call finds the
            // thread awake (see the module docs).
            let linger_end = busy + LINGER;
            if now < linger_end {
                next = Some(linger_end);
            } else {
                last_busy = None;
            }
        }
        shutdown = match next {
            None => {
                shared.wake_at.store(IDLE, Ordering::SeqCst);
                shared
                    .wake
                    .wait(shutdown)
                    .unwrap_or_else(|p| p.into_inner())
            }
            Some(next) => {
                let wait = next.saturating_duration_since(now).min(YIELD_TICK);
                shared
                    .wake_at
                    .store(shared.nanos(now + wait), Ordering::SeqCst);
                let (shutdown, timeout) = shared
                    .wake
                    .wait_timeout(shutdown, wait)
                    .unwrap_or_else(|p| p.into_inner());
                if timeout.timed_out() {
                    // A tick: let running guests check their clock and yield.
                    engine.increment_epoch();
                }
                shutdown
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake_at(watchdog: &Watchdog) -> u64 {
        watchdog.shared.wake_at.load(Ordering::SeqCst)
    }

    /// Polls until `ok` holds, for up to `within`.
    fn eventually(within: Duration, mut ok: impl FnMut() -> bool) -> bool {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        ok()
    }

    #[test]
    fn the_thread_stays_awake_a_while_after_a_call_then_sleeps_for_good() {
        let watchdog = Watchdog::start(wasmtime::Engine::default()).unwrap();
        assert!(
            eventually(Duration::from_secs(5), || wake_at(&watchdog) == IDLE),
            "a watchdog with nothing armed waits without a timeout"
        );
        let armed = watchdog.arm(Instant::now() + Duration::from_secs(60));
        // The thread has seen the deadline once it waits for a tick.
        assert!(eventually(Duration::from_secs(5), || {
            let at = wake_at(&watchdog);
            at != IDLE && at != SCANNING
        }));
        let ended = Instant::now();
        drop(armed);
        // Past a tick (when it used to stop), it still ticks: the next
        // call need not wake it. Checked only if this thread ran in time.
        std::thread::sleep(YIELD_TICK * 3);
        let at = wake_at(&watchdog);
        if ended.elapsed() < LINGER - YIELD_TICK {
            assert_ne!(at, IDLE, "the thread lingers after the last call");
        }
        assert!(
            eventually(Duration::from_secs(5), || wake_at(&watchdog) == IDLE),
            "after lingering, an idle watchdog sleeps until a call comes"
        );
    }

    #[test]
    fn a_deadline_armed_while_it_sleeps_is_still_kept() {
        let watchdog = Watchdog::start(wasmtime::Engine::default()).unwrap();
        assert!(eventually(Duration::from_secs(5), || wake_at(&watchdog) == IDLE));
        // An already-passed deadline: the thread must wake to bump the
        // epoch, and keep bumping while it stays armed.
        let _armed = watchdog.arm(Instant::now());
        assert!(
            eventually(Duration::from_secs(5), || wake_at(&watchdog) != IDLE),
            "arming an overdue deadline wakes the sleeping thread"
        );
    }
}
