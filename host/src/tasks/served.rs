//! Tasks as a host serves them: one runner over the opened store, and the
//! `[tasks]` rules that say which tools may be tasks, for how long, and
//! how long their results are kept.

use std::path::Path;
use std::sync::Arc;

use super::{SqliteTaskStore, TaskError, TaskRunner, TaskStore, TasksConfig};

/// The file name of the embedded store in a cache directory.
pub const STORE_FILE: &str = "tasks.sqlite3";

/// What a server needs to offer tasks: a [`TaskRunner`] over the store
/// and the host's [`TasksConfig`]. Opened once per process; the tasks its
/// last process left running are `failed` by then (the store's
/// contract), so nothing is run twice.
///
/// ```
/// use toolhost::tasks::{TaskHost, TasksConfig};
///
/// let tasks = TaskHost::open(TasksConfig::default(), None)?; // in memory
/// assert_eq!(tasks.ttl_ms(), 3_600_000);
/// # Ok::<(), toolhost::tasks::TaskError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TaskHost {
    runner: TaskRunner,
    config: Arc<TasksConfig>,
}

impl TaskHost {
    /// Open the store `config` names (`[tasks] store`), else
    /// [`STORE_FILE`] in `cache_dir`, else one in memory.
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when the file cannot be opened or is not a
    /// task store.
    pub fn open(config: TasksConfig, cache_dir: Option<&Path>) -> Result<Self, TaskError> {
        let budget = config.budget();
        let path = config
            .store
            .clone()
            .or_else(|| cache_dir.map(|dir| dir.join(STORE_FILE)));
        let store: Arc<dyn TaskStore> = match path {
            Some(path) => Arc::new(SqliteTaskStore::open(&path, budget)?),
            None => Arc::new(SqliteTaskStore::open_in_memory(budget)?),
        };
        Ok(Self::new(store, config))
    }

    /// Tasks kept in `store` (already opened: see
    /// [`TaskStore::fail_unfinished`]) under `config`'s rules.
    pub fn new(store: Arc<dyn TaskStore>, config: TasksConfig) -> Self {
        Self {
            runner: TaskRunner::new(store),
            config: Arc::new(config),
        }
    }

    /// The runner.
    pub fn runner(&self) -> &TaskRunner {
        &self.runner
    }

    /// The rules.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }

    /// How long a task is kept after its creation, in milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        self.config.ttl_secs.saturating_mul(1000)
    }

    /// How often clients are told to poll, in milliseconds.
    pub fn poll_interval_ms(&self) -> u64 {
        self.config.poll_interval_ms
    }
}

/// `ms` milliseconds since the Unix epoch as an ISO 8601 UTC timestamp
/// with milliseconds (`2026-11-29T00:08:59.123Z`), as MCP writes a task's
/// `createdAt` and `lastUpdatedAt`.
pub fn iso8601(ms: u64) -> String {
    let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-29T00:08:59.123Z, and a leap day.
        assert_eq!(iso8601(1_795_910_939_123), "2026-11-29T00:08:59.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
