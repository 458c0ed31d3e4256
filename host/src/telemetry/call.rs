//! What the sandbox measured during one call, carried back to the
//! registry (which counts and traces the call) without widening any
//! signature in between: a task-local the registry sets around the call.

use std::cell::Cell;
use std::future::Future;

/// How the instance that ran a call came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Instance {
    /// Made for this call (a spare made ahead of time, or inline).
    Fresh,
    /// A session's instance, kept from an earlier call.
    Reused,
}

impl Instance {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::Reused => "reused",
        }
    }
}

/// What one call used, as far as its tool could tell (a plugin tells; a
/// REST or native tool leaves it empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CallStats {
    /// Fuel used, summed over the call's attempts.
    pub(crate) fuel_used: Option<u64>,
    /// The instance's linear memory at the end, the most of any attempt.
    pub(crate) memory_bytes: Option<u64>,
    /// The instance of the last attempt.
    pub(crate) instance: Option<Instance>,
}

tokio::task_local! {
    static CALL: Cell<CallStats>;
}

/// Run `call` and return what the sandbox noted while it ran. A caller
/// measuring around this one (the MCP server, charging a principal's
/// quota around the registry's measured call) is noted the same.
pub(crate) async fn measured<F: Future>(call: F) -> (F::Output, CallStats) {
    let (output, stats) = CALL
        .scope(Cell::new(CallStats::default()), async {
            let output = call.await;
            (output, CALL.with(Cell::get))
        })
        .await;
    note(|outer| outer.add(&stats));
    (output, stats)
}

impl CallStats {
    /// Count what `inner` measured in this call too.
    fn add(&mut self, inner: &Self) {
        if let Some(fuel) = inner.fuel_used {
            self.fuel_used = Some(self.fuel_used.unwrap_or(0).saturating_add(fuel));
        }
        if let Some(memory) = inner.memory_bytes {
            self.memory_bytes = Some(self.memory_bytes.unwrap_or(0).max(memory));
        }
        self.instance = inner.instance.or(self.instance);
    }
}

/// Note what a sandboxed call used. Outside [`measured`] (a spare made in
/// the background, a plugin's `describe`) it is dropped.
pub(crate) fn note(f: impl FnOnce(&mut CallStats)) {
    let _ = CALL.try_with(|cell| {
        let mut stats = cell.get();
        f(&mut stats);
        cell.set(stats);
    });
}

/// Note the fuel and memory of one run of a guest.
pub(crate) fn note_usage(fuel_used: u64, memory_bytes: u64) {
    note(|stats| {
        stats.fuel_used = Some(stats.fuel_used.unwrap_or(0).saturating_add(fuel_used));
        stats.memory_bytes = Some(stats.memory_bytes.unwrap_or(0).max(memory_bytes));
    });
}

/// Note the instance a call ran on.
pub(crate) fn note_instance(instance: Instance) {
    note(|stats| stats.instance = Some(instance));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_measured_call_inside_another_counts_in_both() {
        let (((), inner), outer) = measured(async {
            note_usage(10, 100);
            measured(async {
                note_usage(5, 300);
                note_instance(Instance::Reused);
            })
            .await
        })
        .await;
        assert_eq!(inner.fuel_used, Some(5));
        assert_eq!(outer.fuel_used, Some(15));
        assert_eq!(outer.memory_bytes, Some(300));
        assert_eq!(outer.instance, Some(Instance::Reused));
        // Outside any measured call, nothing is kept and nothing fails.
        let ((), alone) = measured(async {}).await;
        assert_eq!(alone, CallStats::default());
    }
}
