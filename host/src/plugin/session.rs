//! One live instance per session for stateful plugins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::sandbox::{Guest, Live};
use crate::tools::{SessionId, ToolError};

/// A session's instance. The async mutex makes calls within one session run
/// one at a time; `None` means "instantiate on the next call".
type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

struct Entry {
    slot: Slot,
    last_used: Instant,
}

pub(super) struct Sessions {
    idle_ttl: Duration,
    state: Mutex<State>,
}

struct State {
    map: HashMap<SessionId, Entry>,
    /// When a call next looks for idle sessions.
    next_sweep: Instant,
}

/// The most a sweep waits after the last one: idle sessions go at most a
/// quarter of their TTL (or this) late, and a host with many sessions does
/// not scan them all on every call.
const MAX_SWEEP_GAP: Duration = Duration::from_secs(1);

impl Sessions {
    pub(super) fn new(idle_ttl: Duration) -> Self {
        Self {
            idle_ttl,
            state: Mutex::new(State {
                map: HashMap::new(),
                next_sweep: Instant::now(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub(super) fn end(&self, session: &SessionId) {
        let ended = self.lock().map.remove(session);
        // Dropping an instance takes a while for a big guest: not under the lock.
        drop(ended);
    }

    /// The slot for `session`, created if needed. Idle sessions are dropped
    /// on the way (no timer thread: the sweep rides on calls), at most every
    /// quarter TTL, and their instances after the lock is released.
    fn slot(&self, session: &SessionId) -> Slot {
        let now = Instant::now();
        let mut idle = Vec::new();
        let slot = {
            let mut state = self.lock();
            if now >= state.next_sweep {
                state.next_sweep = now + (self.idle_ttl / 4).min(MAX_SWEEP_GAP);
                idle.extend(
                    state
                        .map
                        .extract_if(|id, entry| {
                            id != session
                                && now.duration_since(entry.last_used) >= self.idle_ttl
                                // Never drop an instance a call is using now.
                                && Arc::strong_count(&entry.slot) == 1
                        })
                        .map(|(_, entry)| entry),
                );
            }
            let entry = state.map.entry(session.clone()).or_insert_with(|| Entry {
                slot: Arc::default(),
                last_used: now,
            });
            entry.last_used = now;
            Arc::clone(&entry.slot)
        };
        drop(idle);
        slot
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
