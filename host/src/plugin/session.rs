//! One live instance per session for stateful plugins, and the host-wide
//! cap on live sessions.
//!
//! Each plugin keeps its sessions in a sharded map ([`Sessions`]); every
//! plugin of one [`PluginHost`](super::PluginHost) shares one
//! [`SessionCap`]. A session holds an instance slot of the host's pool
//! while it lives, so the cap (below `max_instances`) keeps a flood of
//! conversations from holding every slot: at the cap, a new session evicts
//! the least recently used idle one, of any plugin, and never one with a
//! call in flight.

use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::sandbox::CallSinks;
use crate::sandbox::{Guest, GuestOutput, Live};
use crate::tools::{SessionId, ToolError, ToolErrorKind};

/// A session's instance. The async mutex makes calls within one session run
/// one at a time; `None` means "instantiate on the next call".
type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

type Map = HashMap<SessionId, Entry>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The locks guard plain data; a panic elsewhere leaves it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Entry {
    slot: Slot,
    last_used: Instant,
}

impl Entry {
    /// Whether no call holds this session's slot. Slots are only cloned
    /// under their shard's lock, so under that lock the answer holds.
    fn is_idle(&self) -> bool {
        Arc::strong_count(&self.slot) == 1
    }
}

/// The live sessions of every plugin of one host, at most `max`.
pub(super) struct SessionCap {
    max: usize,
    live: AtomicUsize,
    /// Every plugin's session table, for eviction. Held while evicting, so
    /// evictions run one at a time and never pick the same victim twice.
    tables: Mutex<Vec<Weak<Table>>>,
}

impl SessionCap {
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            live: AtomicUsize::new(0),
            tables: Mutex::default(),
        })
    }

    /// How many sessions are live across the host.
    pub(super) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    fn release(&self, n: usize) {
        if n > 0 {
            self.live.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Count one more live session, evicting the least recently used idle
    /// one at the cap. Returns what was evicted, to be dropped by the
    /// caller outside any lock.
    fn reserve(&self) -> Result<Vec<Entry>, ToolError> {
        let mut evicted = Vec::new();
        loop {
            let counted = self
                .live
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < self.max).then_some(n + 1)
                });
            if counted.is_ok() {
                return Ok(evicted);
            }
            match self.evict_one() {
                Some(entry) => evicted.push(entry),
                None => {
                    return Err(ToolError::new(
                        ToolErrorKind::Busy,
                        format!(
                            "{} sessions are live and each has a call in flight; try again when one ends, \
                             or raise `max_sessions` in the host config",
                            self.max
                        ),
                    ));
                }
            }
        }
    }

    /// Take the least recently used idle session of any plugin out of its
    /// map. A scan of every live session (at most `max`), one shard lock at
    /// a time: it only runs when a new session finds the cap reached.
    fn evict_one(&self) -> Option<Entry> {
        let mut registered = lock(&self.tables);
        registered.retain(|t| t.strong_count() > 0);
        let tables: Vec<Arc<Table>> = registered.iter().filter_map(Weak::upgrade).collect();
        loop {
            let mut oldest: Option<(Instant, &Shard, SessionId)> = None;
            for shard in tables.iter().flat_map(|t| t.shards.iter()) {
                for (id, entry) in lock(&shard.map).iter() {
                    if entry.is_idle() && oldest.as_ref().is_none_or(|o| entry.last_used < o.0) {
                        oldest = Some((entry.last_used, shard, id.clone()));
                    }
                }
            }
            let (_, shard, id) = oldest?;
            // The scan let go of the shard: take the victim only if it is
            // still there and still idle (a call may have started since).
            if let MapEntry::Occupied(e) = lock(&shard.map).entry(id)
                && e.get().is_idle()
            {
                self.release(1);
                tracing::debug!(
                    "evicted the least recently used idle session (`max_sessions` reached)"
                );
                return Some(e.remove());
            }
        }
    }
}

/// One plugin's sessions.
pub(super) struct Sessions {
    idle_ttl: Duration,
    table: Arc<Table>,
    cap: Arc<SessionCap>,
    /// When a call next looks for idle sessions, in nanoseconds after
    /// `base`: one call claims each sweep, and the others only read this.
    next_sweep: AtomicU64,
    base: Instant,
}

/// Sessions spread over shards by a hash of their id: every stateful call
/// looks its session up, and with one lock per plugin the callers of a
/// many-core host would queue on it.
struct Table {
    shards: Box<[Shard]>,
    hasher: RandomState,
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
    pub(super) fn new(idle_ttl: Duration, cap: Arc<SessionCap>) -> Self {
        let shards = std::thread::available_parallelism()
            .map_or(1, |n| n.get().min(64))
            .next_power_of_two()
            * 4;
        let table = Arc::new(Table {
            shards: (0..shards)
                .map(|_| Shard {
                    map: Mutex::default(),
                })
                .collect(),
            hasher: RandomState::new(),
        });
        lock(&cap.tables).push(Arc::downgrade(&table));
        Self {
            idle_ttl,
            table,
            cap,
            next_sweep: AtomicU64::new(0),
            base: Instant::now(),
        }
    }

    fn shard(&self, session: &SessionId) -> MutexGuard<'_, Map> {
        let shards = &self.table.shards;
        let index = self.table.hasher.hash_one(session) as usize % shards.len();
        lock(&shards[index].map)
    }

    pub(super) fn len(&self) -> usize {
        self.table.shards.iter().map(|s| lock(&s.map).len()).sum()
    }

    pub(super) fn end(&self, session: &SessionId) {
        let ended = self.shard(session).remove(session);
        if ended.is_some() {
            self.cap.release(1);
        }
        // Dropping an instance takes a while for a big guest: not under the lock.
        drop(ended);
    }

    /// The slot for `session`, created if needed (within the host's cap).
    /// Idle sessions are dropped on the way (no timer thread: the sweep
    /// rides on calls), at most every quarter TTL, and their instances
    /// after the locks are released.
    fn slot(&self, session: &SessionId) -> Result<Slot, ToolError> {
        let now = Instant::now();
        let idle = self.sweep_if_due(now, session);
        if let Some(entry) = self.shard(session).get_mut(session) {
            entry.last_used = now;
            return Ok(Arc::clone(&entry.slot));
        }
        // A new session: counted first (evicting another at the cap), with
        // no shard lock held, since eviction takes shard locks.
        let evicted = self.cap.reserve()?;
        let slot = match self.shard(session).entry(session.clone()) {
            MapEntry::Occupied(mut e) => {
                // Another call of this session made it meanwhile.
                self.cap.release(1);
                e.get_mut().last_used = now;
                Arc::clone(&e.get().slot)
            }
            MapEntry::Vacant(v) => {
                let slot = Slot::default();
                v.insert(Entry {
                    slot: Arc::clone(&slot),
                    last_used: now,
                });
                slot
            }
        };
        drop((idle, evicted));
        Ok(slot)
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
        for shard in &self.table.shards {
            idle.extend(
                lock(&shard.map)
                    .extract_if(|id, entry| {
                        id != keep
                            && now.duration_since(entry.last_used) >= self.idle_ttl
                            // Never drop an instance a call is using now.
                            && entry.is_idle()
                    })
                    .map(|(_, entry)| entry),
            );
        }
        self.cap.release(idle.len());
        idle
    }

    pub(super) async fn call(
        &self,
        guest: &Guest,
        session: &SessionId,
        name: &str,
        input: &str,
        sinks: &CallSinks,
    ) -> Result<GuestOutput, ToolError> {
        let slot = self.slot(session)?;
        let mut guard = slot.lock().await;
        // Taken out for the call: if the call is cancelled or traps, the
        // half-run instance is dropped instead of being reused.
        let mut live = match guard.take() {
            Some(live) => {
                crate::telemetry::note_instance(crate::telemetry::Instance::Reused);
                live
            }
            None => {
                crate::telemetry::note_instance(crate::telemetry::Instance::Fresh);
                guest.instantiate().await?
            }
        };
        let result = guest.call_live(&mut live, name, input, sinks).await;
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

impl Drop for Sessions {
    fn drop(&mut self) {
        // The plugin is gone: its sessions no longer count toward the cap.
        self.cap.release(self.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> SessionId {
        SessionId::new(name)
    }

    fn sessions(idle_ttl: Duration, max: usize) -> Sessions {
        Sessions::new(idle_ttl, SessionCap::new(max))
    }

    fn open(sessions: &Sessions, name: &str) -> Slot {
        sessions.slot(&id(name)).expect("within the cap")
    }

    fn has(sessions: &Sessions, name: &str) -> bool {
        sessions.shard(&id(name)).contains_key(&id(name))
    }

    #[test]
    fn idle_sessions_are_swept_unless_a_call_holds_them() {
        let sessions = sessions(Duration::ZERO, 100);
        let held = open(&sessions, "a");
        open(&sessions, "b");
        assert_eq!(sessions.len(), 2, "a is in use, so it stays");
        drop(held);
        open(&sessions, "c");
        assert_eq!(sessions.len(), 1, "a and b were idle: only c is left");
        assert_eq!(sessions.cap.live(), 1);
    }

    #[test]
    fn sessions_within_their_ttl_stay() {
        let sessions = sessions(Duration::from_secs(3600), 100);
        for name in ["a", "b", "c"] {
            open(&sessions, name);
        }
        assert_eq!(sessions.len(), 3);
        sessions.end(&id("b"));
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions.cap.live(), 2);
    }

    #[test]
    fn at_the_cap_the_least_recently_used_sessions_are_evicted() {
        let sessions = sessions(Duration::from_secs(3600), 3);
        for name in ["1", "2", "3"] {
            open(&sessions, name);
        }
        // 1 is used again, so 2 is now the least recently used.
        open(&sessions, "1");
        open(&sessions, "4");
        open(&sessions, "5");
        assert_eq!(sessions.len(), 3);
        assert_eq!(sessions.cap.live(), 3);
        for (name, kept) in [
            ("1", true),
            ("2", false),
            ("3", false),
            ("4", true),
            ("5", true),
        ] {
            assert_eq!(has(&sessions, name), kept, "session {name}");
        }
    }

    #[test]
    fn a_session_with_a_call_in_flight_is_never_evicted() {
        let sessions = sessions(Duration::from_secs(3600), 2);
        let busy = open(&sessions, "oldest");
        open(&sessions, "b");
        open(&sessions, "c");
        assert!(has(&sessions, "oldest"), "in use: b went instead");
        assert!(!has(&sessions, "b"));
        let _also_busy = open(&sessions, "c");
        let Err(e) = sessions.slot(&id("d")) else {
            panic!("both sessions are busy, yet d got a slot");
        };
        assert_eq!(e.kind, ToolErrorKind::Busy);
        assert!(e.message.contains("max_sessions"), "{}", e.message);
        drop(busy);
        open(&sessions, "d");
        assert!(!has(&sessions, "oldest") && has(&sessions, "d"));
    }

    #[test]
    fn the_cap_is_shared_by_every_plugin_of_a_host() {
        let cap = SessionCap::new(2);
        let first = Sessions::new(Duration::from_secs(3600), Arc::clone(&cap));
        let second = Sessions::new(Duration::from_secs(3600), Arc::clone(&cap));
        open(&first, "a");
        open(&second, "b");
        open(&second, "c");
        assert_eq!(
            (first.len(), second.len()),
            (0, 2),
            "a of the first plugin was the oldest"
        );
        drop(second);
        assert_eq!(cap.live(), 0, "a dropped plugin's sessions no longer count");
        open(&first, "d");
        assert_eq!(cap.live(), 1);
    }
}
