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
    map: Mutex<HashMap<SessionId, Entry>>,
}

impl Sessions {
    pub(super) fn new(idle_ttl: Duration) -> Self {
        Self {
            idle_ttl,
            map: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(super) fn end(&self, session: &SessionId) {
        self.lock().remove(session);
    }

    /// The slot for `session`, created if needed; idle sessions are dropped
    /// on the way (no timer thread: the sweep rides on calls).
    fn slot(&self, session: &SessionId) -> Slot {
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|id, entry| {
            id == session
                || now.duration_since(entry.last_used) < self.idle_ttl
                // Never drop an instance a call is using right now.
                || Arc::strong_count(&entry.slot) > 1
        });
        let entry = map.entry(session.clone()).or_insert_with(|| Entry {
            slot: Arc::default(),
            last_used: now,
        });
        entry.last_used = now;
        Arc::clone(&entry.slot)
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
