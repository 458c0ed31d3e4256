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

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often running guests yield to the async executor.
const YIELD_TICK: Duration = Duration::from_millis(10);

#[derive(Default)]
struct State {
    /// Armed deadlines, each with a unique id so equal instants coexist.
    deadlines: BTreeSet<(Instant, u64)>,
    next_id: u64,
    /// When the thread will wake by itself; `None` while it waits for work.
    wake_at: Option<Instant>,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock guards plain data; a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(crate) fn start(engine: wasmtime::Engine) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
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
    pub(crate) fn arm(&self, deadline: Instant) -> Armed {
        let mut state = self.shared.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.deadlines.insert((deadline, id));
        // Wake the thread only if it would sleep past this deadline: most
        // deadlines are seconds away and the thread already wakes every
        // tick, so most calls cost no wake-up (a futex and a context
        // switch, which on two cores competes with the calls themselves).
        let wake = state.wake_at.is_none_or(|at| deadline < at);
        drop(state);
        if wake {
            self.shared.wake.notify_one();
        }
        Armed {
            shared: Arc::clone(&self.shared),
            key: (deadline, id),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A deadline that is armed until this is dropped.
pub(crate) struct Armed {
    shared: Arc<Shared>,
    key: (Instant, u64),
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.shared.lock().deadlines.remove(&self.key);
    }
}

fn run(shared: &Shared, engine: &wasmtime::Engine) {
    let mut state = shared.lock();
    loop {
        if state.shutdown {
            return;
        }
        let now = Instant::now();
        let mut expired = false;
        while let Some(&(t, _)) = state.deadlines.first() {
            if t > now {
                break;
            }
            state.deadlines.pop_first();
            expired = true;
        }
        if expired {
            engine.increment_epoch();
        }
        state = match state.deadlines.first() {
            None => {
                state.wake_at = None;
                shared.wake.wait(state).unwrap_or_else(|p| p.into_inner())
            }
            Some(&(next, _)) => {
                let wait = next.saturating_duration_since(now).min(YIELD_TICK);
                state.wake_at = Some(now + wait);
                let (state, timeout) = shared
                    .wake
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|p| p.into_inner());
                if timeout.timed_out() && !state.deadlines.is_empty() {
                    // A tick: let running guests check their clock and yield.
                    engine.increment_epoch();
                }
                state
            }
        };
    }
}
