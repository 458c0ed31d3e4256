//! Tool calls that outlive a request: tasks, kept in a store that outlives
//! the process.
//!
//! A client that cannot wait for a long call (a crawl, a build, a batch over
//! files) asks for it as a *task*: the host writes the task to a
//! [`TaskStore`] **before** it answers, runs the call in the background with
//! the plugin's limits (a [`TaskRunner`] adds the task's own deadline and
//! cooperative cancel), and writes the outcome to the store, where the
//! client finds it by polling until the task's TTL passes.
//!
//! The store is one small trait so that the embedded default,
//! [`SqliteTaskStore`] (one SQLite file in WAL mode, in the cache directory
//! or where `[tasks] store` says), can be swapped for a server database
//! shared by many hosts. Its contract:
//!
//! - **Durable creation**: [`TaskStore::create`] returns only once the task
//!   is written.
//! - **Owners**: every task belongs to an *owner*, an opaque string (an MCP
//!   session today, the authenticated principal once a server has one). A
//!   task is visible only to its owner: another owner's id is
//!   [`TaskError::NotFound`], exactly as an id that never existed.
//! - **Never lost, never re-run**: [`TaskStore::fail_unfinished`], called
//!   when a host opens its store, turns every task still `working` or
//!   `input_required` (its process died with it) into `failed`, with a
//!   reason that says the host restarted.
//! - **Budgets**: a result larger than [`StoreBudget::max_result_bytes`] and
//!   a task past [`StoreBudget::max_tasks_per_owner`] are typed errors.
//!
//! Which tools may run as tasks: [`TaskSupport`], from the plugin's
//! manifest (`[task] support`) and the operator's override
//! (`[tasks.support]` in the host config, [`TasksConfig`]).
//!
//! ```
//! use toolhost::tasks::{NewTask, SqliteTaskStore, StoreBudget, TaskStatus, TaskStore};
//!
//! let store = SqliteTaskStore::open_in_memory(StoreBudget::default())?;
//! let task = store.create(NewTask::new("session-1", "crawl", 60_000))?;
//! assert_eq!(task.status, TaskStatus::Working);
//! store.finish(&task.id, TaskStatus::Completed, None, Some(r#"{"pages":3}"#))?;
//! let done = store.get("session-1", &task.id)?;
//! assert_eq!(done.result.as_deref(), Some(r#"{"pages":3}"#));
//! // Another owner does not see it.
//! assert!(store.get("session-2", &task.id).is_err());
//! # Ok::<(), toolhost::tasks::TaskError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

mod run;
mod served;
mod sqlite;

pub use run::{TaskControl, TaskOutcome, TaskRunner, guest_deadline, with_guest_deadline};
pub use served::{STORE_FILE, TaskHost, iso8601};
pub use sqlite::SqliteTaskStore;

/// The reason a task that was running when its host stopped is `failed`.
pub const RESTART_REASON: &str = "the host restarted while this task was running, so it was \
                                  stopped and will not be run again; call the tool again to retry";

/// Whether a tool may run as a task (MCP's `execution.taskSupport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never as a task (the default: a tool must say it may run long).
    #[default]
    Forbidden,
    /// As a task when the client asks for one, else as a plain call.
    Optional,
    /// Only as a task: a plain call of it is refused.
    Required,
}

impl TaskSupport {
    /// The value as MCP writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

impl fmt::Display for TaskSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a task is in its life. `completed`, `failed` and `cancelled` are
/// terminal: a task in one never changes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for an answer from the client (a question of the tool's).
    InputRequired,
    /// Ended with a result (a tool's own error is a result too).
    Completed,
    /// Ended without one: the host's error, the deadline, a restart.
    Failed,
    /// Stopped at the client's request.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The value as MCP writes it (`working`, `input_required`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status `text` names, as [`as_str`](Self::as_str) writes it.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The id the host gave it: 128 random bits as `t-` and 32 hex digits.
    pub id: String,
    /// Who may see it (a session, or an authenticated principal).
    pub owner: String,
    /// The tool it calls.
    pub tool: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the host says about its state (progress, the question it
    /// waits on, why it failed).
    pub status_message: Option<String>,
    /// Progress so far and the total, when the tool reports them.
    pub progress: Option<(f64, Option<f64>)>,
    /// Once terminal, the answer as JSON text (for MCP: the `tools/call`
    /// result, or the JSON-RPC error of a failed task), if it has one.
    pub result: Option<String>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it last changed, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// How long after its creation the store may forget it.
    pub ttl_ms: u64,
    /// Whether the client asked for it to stop.
    pub cancel_requested: bool,
}

impl TaskRecord {
    /// When the store may forget it, in milliseconds since the Unix epoch.
    pub fn expires_at_ms(&self) -> u64 {
        self.created_at_ms.saturating_add(self.ttl_ms)
    }
}

/// What [`TaskStore::create`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewTask {
    /// Who may see it.
    pub owner: String,
    /// The tool it calls.
    pub tool: String,
    /// How long after its creation the store may forget it.
    pub ttl_ms: u64,
}

impl NewTask {
    /// A task of `owner` calling `tool`, kept `ttl_ms` after its creation.
    pub fn new(owner: impl Into<String>, tool: impl Into<String>, ttl_ms: u64) -> Self {
        Self {
            owner: owner.into(),
            tool: tool.into(),
            ttl_ms,
        }
    }
}

/// Budgets on what a store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreBudget {
    /// The largest result (JSON text) a task may store. Default 4 MiB.
    pub max_result_bytes: usize,
    /// The most tasks one owner may have stored (running, or finished and
    /// not yet expired). Default 100.
    pub max_tasks_per_owner: u32,
}

impl Default for StoreBudget {
    fn default() -> Self {
        Self {
            max_result_bytes: 4 << 20,
            max_tasks_per_owner: 100,
        }
    }
}

impl StoreBudget {
    /// A budget of `max_result_bytes` per result and `max_tasks_per_owner`.
    pub fn new(max_result_bytes: usize, max_tasks_per_owner: u32) -> Self {
        Self {
            max_result_bytes,
            max_tasks_per_owner,
        }
    }
}

/// Why a task store refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No task with this id for this owner (it never existed, it is
    /// another client's, or its TTL passed).
    #[error(
        "no task `{id}` for this client; a task is visible only to the client that created it, \
         and a finished one is gone once its TTL passes"
    )]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The task already ended: it cannot be cancelled or changed.
    #[error("task `{id}` already ended ({status}); a finished task cannot change")]
    Terminal {
        /// The task.
        id: String,
        /// How it ended.
        status: TaskStatus,
    },
    /// The owner has as many tasks stored as the budget allows.
    #[error(
        "this client already has {limit} tasks stored, the most the host keeps per client \
         ([tasks] max_per_client); cancel one, or wait for finished ones to expire"
    )]
    TooManyTasks {
        /// The budget.
        limit: u32,
    },
    /// The result is larger than the budget allows.
    #[error(
        "the task's result is {size} bytes, over the {limit}-byte limit on a stored result \
         ([tasks] max_result_kb); ask the tool for less, or raise the limit"
    )]
    ResultTooLarge {
        /// The result's size.
        size: usize,
        /// The budget.
        limit: usize,
    },
    /// The store itself failed (the database cannot be opened, read or
    /// written).
    #[error("task store: cannot {action}")]
    Store {
        /// What the store was doing, e.g. `open /var/cache/toolhost/tasks.sqlite3`.
        action: String,
        /// The database's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Where tasks are kept: created durably before the client hears of them,
/// seen only by their owner, forgotten after their TTL.
///
/// The methods are synchronous: the embedded store answers in well under a
/// millisecond. A store over the network should do its I/O on a thread of
/// its own.
pub trait TaskStore: Send + Sync + fmt::Debug + 'static {
    /// Write a new `working` task and return it; it is durable when this
    /// returns. Expired tasks of the owner are purged first.
    ///
    /// # Errors
    ///
    /// [`TaskError::TooManyTasks`] at the owner's budget;
    /// [`TaskError::Store`] when the write fails.
    fn create(&self, task: NewTask) -> Result<TaskRecord, TaskError>;

    /// The task `id` of `owner`.
    ///
    /// # Errors
    ///
    /// [`TaskError::NotFound`] when `owner` has no such task (or its TTL
    /// passed).
    fn get(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError>;

    /// Up to `limit` of `owner`'s tasks, oldest first, after the task
    /// `after` (a cursor: the last id of the previous page).
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when the read fails.
    fn list(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskError>;

    /// Set a running task's status (`working` or `input_required`), its
    /// message and its progress.
    ///
    /// # Errors
    ///
    /// [`TaskError::Terminal`] when it already ended; `NotFound`.
    fn set_state(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        progress: Option<(f64, Option<f64>)>,
    ) -> Result<TaskRecord, TaskError>;

    /// End a task: a terminal `status`, a message and the result (JSON
    /// text).
    ///
    /// # Errors
    ///
    /// [`TaskError::ResultTooLarge`] over the budget (the task is then
    /// `failed` with a message saying so); [`TaskError::Terminal`] when it
    /// already ended; `NotFound`.
    fn finish(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        result: Option<&str>,
    ) -> Result<TaskRecord, TaskError>;

    /// Note that `owner` asked task `id` to stop.
    ///
    /// # Errors
    ///
    /// [`TaskError::Terminal`] when it already ended; `NotFound`.
    fn request_cancel(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError>;

    /// Forget every task whose TTL passed by `now_ms`; how many went.
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when the write fails.
    fn purge_expired(&self, now_ms: u64) -> Result<usize, TaskError>;

    /// Mark every unfinished task `failed` with `reason`; how many. A host
    /// calls it when it opens the store: the tasks its last process ran
    /// died with it.
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when the write fails.
    fn fail_unfinished(&self, reason: &str) -> Result<usize, TaskError>;
}

impl<T: TaskStore + ?Sized> TaskStore for std::sync::Arc<T> {
    fn create(&self, task: NewTask) -> Result<TaskRecord, TaskError> {
        (**self).create(task)
    }
    fn get(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        (**self).get(owner, id)
    }
    fn list(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskError> {
        (**self).list(owner, after, limit)
    }
    fn set_state(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        progress: Option<(f64, Option<f64>)>,
    ) -> Result<TaskRecord, TaskError> {
        (**self).set_state(id, status, message, progress)
    }
    fn finish(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        result: Option<&str>,
    ) -> Result<TaskRecord, TaskError> {
        (**self).finish(id, status, message, result)
    }
    fn request_cancel(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        (**self).request_cancel(owner, id)
    }
    fn purge_expired(&self, now_ms: u64) -> Result<usize, TaskError> {
        (**self).purge_expired(now_ms)
    }
    fn fail_unfinished(&self, reason: &str) -> Result<usize, TaskError> {
        (**self).fail_unfinished(reason)
    }
}

/// The `[tasks]` table of the host config: where tasks are kept, how long,
/// how long one may run, and which tools may be tasks.
///
/// ```toml
/// [tasks]
/// store = "/var/lib/toolhost/tasks.sqlite3"  # default: tasks.sqlite3 in cache_dir
/// ttl_secs = 3600            # a task is kept this long after its creation
/// deadline_secs = 600        # a task runs at most this long (a manifest may ask for less or more, up to max_deadline_secs)
/// max_deadline_secs = 3600
/// poll_interval_ms = 1000    # what clients are told to poll at
/// max_result_kb = 4096       # the largest stored result
/// max_per_client = 100       # tasks stored per client
/// [tasks.support]            # the operator's word over the manifests'
/// crawl = "required"
/// "fs_*" = "forbidden"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TasksConfig {
    /// The SQLite file; `None`: `tasks.sqlite3` in the cache directory
    /// (and tasks kept in memory when there is none).
    pub store: Option<PathBuf>,
    /// How long a task is kept after its creation. Default 3600.
    pub ttl_secs: u64,
    /// How long a task may run when its manifest does not say. Default 600.
    pub deadline_secs: u64,
    /// The longest a manifest may ask for. Default 3600.
    pub max_deadline_secs: u64,
    /// The polling interval clients are told. Default 1000.
    pub poll_interval_ms: u64,
    /// The largest result kept, in KiB. Default 4096.
    pub max_result_kb: u64,
    /// Tasks one client may have stored. Default 100.
    pub max_per_client: u32,
    /// Task support by tool name pattern (`*` matches any run of
    /// characters), over what the tools' manifests say. The most specific
    /// (longest) matching pattern wins.
    pub support: BTreeMap<String, TaskSupport>,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            store: None,
            ttl_secs: 3600,
            deadline_secs: 600,
            max_deadline_secs: 3600,
            poll_interval_ms: 1000,
            max_result_kb: 4096,
            max_per_client: 100,
            support: BTreeMap::new(),
        }
    }
}

impl TasksConfig {
    /// The store's budget.
    pub fn budget(&self) -> StoreBudget {
        StoreBudget::new(
            usize::try_from(self.max_result_kb.saturating_mul(1024)).unwrap_or(usize::MAX),
            self.max_per_client,
        )
    }

    /// Whether `tool` may run as a task: the operator's override (the
    /// longest matching pattern), else what the tool says (`declared`).
    pub fn support_for(&self, tool: &str, declared: TaskSupport) -> TaskSupport {
        self.support
            .iter()
            .filter(|(pattern, _)| glob_match(pattern, tool))
            .max_by_key(|(pattern, _)| pattern.len())
            .map_or(declared, |(_, support)| *support)
    }

    /// How long a task of a tool that asks for `requested` seconds may
    /// run: the request (or `deadline_secs`), never over
    /// `max_deadline_secs`.
    pub fn deadline(&self, requested: Option<u64>) -> Duration {
        Duration::from_secs(
            requested
                .unwrap_or(self.deadline_secs)
                .min(self.max_deadline_secs),
        )
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of
/// characters.
fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A new task id: 128 random bits, as `t-` and 32 hex digits.
fn new_id() -> String {
    format!("t-{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests;
