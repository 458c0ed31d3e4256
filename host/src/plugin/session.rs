//! One live instance per session for stateful plugins.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::sandbox::{Guest, Live};
use crate::tools::{SessionId, ToolError};

/// A session's instance. The async mutex makes calls within one session run
/// one at a time; `None` means "instantiate on the next call".
type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

type Map = HashMap<SessionId, Entry>;

fn lock(m: &Mutex<Map>) -> MutexGuard<'_, Map> {
    // The lock guards a plain map; a panic elsewhere leaves it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Entry {
    slot: Slot,
    last_used: Instant,
}

pub(super) struct Sessions {
    idle_ttl: Duration,
    /// Sessions spread over shards by a hash of their id: every stateful
    /// call looks its session up, and with one lock per plugin the callers
    /// of a many-core host would queue on it.
    shards: Box<[Shard]>,
    hasher: RandomState,
    /// When a call next looks for idle sessions, in nanoseconds after
    /// `base`: one call claims each sweep, and the others only read this.
    next_sweep: AtomicU64,
    base: Instant,
}

/// One shard of the session map, on a cache line of its own.
#[repr(align(128))]
struct Shard {
    map: Mutex<Map>,
}

/// The most a sweep waits after the last one: idle sessions go at most a
/// quarter of their TTL (or this) late, and a host with many sessions does
/// not scan them all on every call.
const MAX_SWEEP_GAP: Duration = Duration::from_secs(1);

impl Sessions {
    pub(super) fn new(idle_ttl: Duration) -> Self {
        let shards = std::thread::available_parallelism()
            .map_or(1, |n| n.get().min(64))
            .next_power_of_two()
            * 4;
        Self {
            idle_ttl,
            shards: (0..shards)
                .map(|_| Shard {
                    map: Mutex::default(),
                })
                .collect(),
            hasher: RandomState::new(),
            next_sweep: AtomicU64::new(0),
            base: Instant::now(),
        }
    }

    fn shard(&self, session: &SessionId) -> MutexGuard<'_, Map> {
        let index = self.hasher.hash_one(session) as usize % self.shards.len();
        lock(&self.shards[index].map)
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.map).len()).sum()
    }

    pub(super) fn end(&self, session: &SessionId) {
        let ended = self.shard(session).remove(session);
        // Dropping an instance takes a while for a big guest: not under the lock.
        drop(ended);
    }

    /// The slot for `session`, created if needed. Idle sessions are dropped
    /// on the way (no timer thread: the sweep rides on calls), at most every
    /// quarter TTL, and their instances after the locks are released.
    fn slot(&self, session: &SessionId) -> Slot {
        let now = Instant::now();
        let idle = self.sweep_if_due(now, session);
        let slot = {
            let mut map = self.shard(session);
            match map.get_mut(session) {
                Some(entry) => {
                    entry.last_used = now;
                    Arc::clone(&entry.slot)
                }
                None => {
                    let slot = Slot::default();
                    let entry = Entry {
                        slot: Arc::clone(&slot),
                        last_used: now,
                    };
                    map.insert(session.clone(), entry);
                    slot
                }
            }
        };
        drop(idle);
        slot
    }

    /// The idle sessions (other than `keep`), taken out of the map, if a
    /// sweep is due and this call is the one that claims it.
    fn sweep_if_due(&self, now: Instant, keep: &SessionId) -> Vec<Entry> {
        let nanos = |at: Instant| {
            u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
        };
        let due = self.next_sweep.load(Ordering::Relaxed);
        if nanos(now) < due {
            return Vec::new();
        }
        let next = nanos(now + (self.idle_ttl / 4).min(MAX_SWEEP_GAP));
        if self
            .next_sweep
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Vec::new();
        }
        let mut idle = Vec::new();
        for shard in &self.shards {
            idle.extend(
                lock(&shard.map)
                    .extract_if(|id, entry| {
                        id != keep
                            && now.duration_since(entry.last_used) >= self.idle_ttl
                            // Never drop an instance a call is using now.
                            && Arc::strong_count(&entry.slot) == 1
                    })
                    .map(|(_, entry)| entry),
            );
        }
        idle
    }

    pub(super) async fn call(
        &self,
        guest: &Guest,
        session: &SessionId,
        name: &str,
        input: &str,
    ) -> Result<String, ToolError> {
        let slot = self.slot(session);
        let mut guard = slot.lock().await;
        // Taken out for the call: if the call is cancelled or traps, the
        // half-run instance is dropped instead of being reused.
        let mut live = match guard.take() {
            Some(live) => live,
            None => guest.instantiate().await?,
        };
        let result = guest.call_live(&mut live, name, input).await;
        let reusable = result
            .as_ref()
            .map_or_else(|e| e.kind.leaves_instance_intact(), |_| true);
        if reusable {
            *guard = Some(live);
        } else {
            tracing::debug!(%session, "dropping session instance after a failed call");
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> SessionId {
        SessionId::new(name)
    }

    #[test]
    fn idle_sessions_are_swept_unless_a_call_holds_them() {
        let sessions = Sessions::new(Duration::ZERO);
        let held = sessions.slot(&id("a"));
        sessions.slot(&id("b"));
        assert_eq!(sessions.len(), 2, "a is in use, so it stays");
        drop(held);
        sessions.slot(&id("c"));
        assert_eq!(sessions.len(), 1, "a and b were idle: only c is left");
    }

    #[test]
    fn sessions_within_their_ttl_stay() {
        let sessions = Sessions::new(Duration::from_secs(3600));
        for name in ["a", "b", "c"] {
            sessions.slot(&id(name));
        }
        assert_eq!(sessions.len(), 3);
        sessions.end(&id("b"));
        assert_eq!(sessions.len(), 2);
    }
}
