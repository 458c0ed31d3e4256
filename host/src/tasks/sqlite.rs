//! The embedded task store: one SQLite file in WAL mode.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use super::{
    NewTask, RESTART_REASON, StoreBudget, TaskError, TaskRecord, TaskStatus, TaskStore, new_id,
    now_ms,
};

/// Tasks in one SQLite database (a file in WAL mode, or memory).
///
/// Opening a file marks the tasks a previous process left running as
/// `failed` ([`RESTART_REASON`]) and purges expired ones: the store never
/// reports a task as running that nothing runs.
#[derive(Debug)]
pub struct SqliteTaskStore {
    conn: Mutex<Connection>,
    budget: StoreBudget,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    progress REAL,
    total REAL,
    result TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (owner, seq);
CREATE INDEX IF NOT EXISTS tasks_expiry ON tasks (expires_at_ms);
";

const COLUMNS: &str = "id, owner, tool, status, status_message, progress, total, result, \
                       created_at_ms, updated_at_ms, ttl_ms, cancel_requested";

fn store_error(action: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> TaskError {
    let action = action.into();
    move |source| TaskError::Store {
        action,
        source: Box::new(source),
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRecord> {
    let status: String = row.get(3)?;
    let progress: Option<f64> = row.get(5)?;
    let total: Option<f64> = row.get(6)?;
    Ok(TaskRecord {
        id: row.get(0)?,
        owner: row.get(1)?,
        tool: row.get(2)?,
        // Only this module writes the column, from `TaskStatus::as_str`.
        status: TaskStatus::parse(&status).unwrap_or(TaskStatus::Failed),
        status_message: row.get(4)?,
        progress: progress.map(|p| (p, total)),
        result: row.get(7)?,
        created_at_ms: to_u64(row.get(8)?),
        updated_at_ms: to_u64(row.get(9)?),
        ttl_ms: to_u64(row.get(10)?),
        cancel_requested: row.get::<_, i64>(11)? != 0,
    })
}

impl SqliteTaskStore {
    /// Open (or create) the store in the file at `path`, in WAL mode;
    /// tasks its last user left running become `failed` with
    /// [`RESTART_REASON`], and expired ones are purged.
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when the file cannot be opened or is not a
    /// task store.
    pub fn open(path: &Path, budget: StoreBudget) -> Result<Self, TaskError> {
        let action = || format!("open {}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| TaskError::Store {
                action: format!("create the directory of {}", path.display()),
                source: Box::new(e),
            })?;
        }
        let conn = Connection::open(path).map_err(store_error(action()))?;
        // WAL: readers never wait for the writer; `synchronous = NORMAL`
        // is durable against a crash of the process (what a restart
        // survives), and costs no fsync per commit.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(store_error(action()))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(store_error(action()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(store_error(action()))?;
        let store = Self::with(conn, budget, &action())?;
        store.fail_unfinished(RESTART_REASON)?;
        store.purge_expired(now_ms())?;
        Ok(store)
    }

    /// A store in memory (gone with the process): for tests and hosts
    /// without a cache directory.
    ///
    /// # Errors
    ///
    /// [`TaskError::Store`] when SQLite cannot start.
    pub fn open_in_memory(budget: StoreBudget) -> Result<Self, TaskError> {
        let conn = Connection::open_in_memory().map_err(store_error("open a memory database"))?;
        Self::with(conn, budget, "open a memory database")
    }

    fn with(conn: Connection, budget: StoreBudget, action: &str) -> Result<Self, TaskError> {
        conn.execute_batch(SCHEMA)
            .map_err(store_error(format!("{action}: set up its tables")))?;
        Ok(Self {
            conn: Mutex::new(conn),
            budget,
        })
    }

    /// The store's budget.
    pub fn budget(&self) -> StoreBudget {
        self.budget
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn by_id(conn: &Connection, id: &str) -> Result<TaskRecord, TaskError> {
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
            .and_then(|mut s| s.query_row(params![id], record).optional())
            .map_err(store_error("read a task"))?
            .ok_or_else(|| TaskError::NotFound { id: id.to_owned() })
    }

    /// The running task `id`, or why it cannot change.
    fn running(conn: &Connection, id: &str) -> Result<TaskRecord, TaskError> {
        let task = Self::by_id(conn, id)?;
        if task.status.is_terminal() {
            return Err(TaskError::Terminal {
                id: task.id,
                status: task.status,
            });
        }
        Ok(task)
    }
}

impl TaskStore for SqliteTaskStore {
    fn create(&self, task: NewTask) -> Result<TaskRecord, TaskError> {
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(store_error("create a task"))?;
        tx.execute(
            "DELETE FROM tasks WHERE owner = ?1 AND expires_at_ms <= ?2",
            params![task.owner, to_i64(now)],
        )
        .map_err(store_error("purge expired tasks"))?;
        let stored: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM tasks WHERE owner = ?1",
                params![task.owner],
                |row| row.get(0),
            )
            .map_err(store_error("count a client's tasks"))?;
        if to_u64(stored) >= u64::from(self.budget.max_tasks_per_owner) {
            return Err(TaskError::TooManyTasks {
                limit: self.budget.max_tasks_per_owner,
            });
        }
        let record = TaskRecord {
            id: new_id(),
            owner: task.owner,
            tool: task.tool,
            status: TaskStatus::Working,
            status_message: None,
            progress: None,
            result: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: task.ttl_ms,
            cancel_requested: false,
        };
        tx.execute(
            "INSERT INTO tasks (id, owner, tool, status, created_at_ms, updated_at_ms, ttl_ms, \
             expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)",
            params![
                record.id,
                record.owner,
                record.tool,
                record.status.as_str(),
                to_i64(now),
                to_i64(record.ttl_ms),
                to_i64(record.expires_at_ms()),
            ],
        )
        .map_err(store_error("create a task"))?;
        tx.commit().map_err(store_error("create a task"))?;
        Ok(record)
    }

    fn get(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        let task = Self::by_id(&self.conn(), id)?;
        // Another owner's task is not there, for this owner; an expired
        // one is gone even before the purge comes by.
        if task.owner != owner || task.expires_at_ms() <= now_ms() {
            return Err(TaskError::NotFound { id: id.to_owned() });
        }
        Ok(task)
    }

    fn list(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskError> {
        let conn = self.conn();
        let after_seq: i64 = match after {
            None => 0,
            Some(id) => conn
                .query_row(
                    "SELECT seq FROM tasks WHERE id = ?1 AND owner = ?2",
                    params![id, owner],
                    |row| row.get(0),
                )
                .optional()
                .map_err(store_error("list tasks"))?
                .ok_or_else(|| TaskError::NotFound { id: id.to_owned() })?,
        };
        let mut statement = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND seq > ?2 AND expires_at_ms > ?3 \
                 ORDER BY seq LIMIT ?4"
            ))
            .map_err(store_error("list tasks"))?;
        let rows = statement
            .query_map(
                params![
                    owner,
                    after_seq,
                    to_i64(now_ms()),
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                record,
            )
            .map_err(store_error("list tasks"))?;
        rows.collect::<Result<_, _>>()
            .map_err(store_error("list tasks"))
    }

    fn set_state(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        progress: Option<(f64, Option<f64>)>,
    ) -> Result<TaskRecord, TaskError> {
        debug_assert!(!status.is_terminal(), "a task ends through `finish`");
        let conn = self.conn();
        Self::running(&conn, id)?;
        conn.execute(
            "UPDATE tasks SET status = ?2, status_message = ?3, \
             progress = COALESCE(?4, progress), total = CASE WHEN ?4 IS NULL THEN total ELSE ?5 END, \
             updated_at_ms = ?6 WHERE id = ?1",
            params![
                id,
                status.as_str(),
                message,
                progress.map(|p| p.0),
                progress.and_then(|p| p.1),
                to_i64(now_ms()),
            ],
        )
        .map_err(store_error("update a task"))?;
        Self::by_id(&conn, id)
    }

    fn finish(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        result: Option<&str>,
    ) -> Result<TaskRecord, TaskError> {
        debug_assert!(status.is_terminal(), "`finish` ends a task");
        let conn = self.conn();
        Self::running(&conn, id)?;
        let size = result.map_or(0, str::len);
        let too_large = size > self.budget.max_result_bytes;
        let too_large_error = TaskError::ResultTooLarge {
            size,
            limit: self.budget.max_result_bytes,
        };
        let (status, message, result) = if too_large {
            (TaskStatus::Failed, Some(too_large_error.to_string()), None)
        } else {
            (status, message.map(str::to_owned), result)
        };
        conn.execute(
            "UPDATE tasks SET status = ?2, status_message = ?3, result = ?4, updated_at_ms = ?5 \
             WHERE id = ?1",
            params![id, status.as_str(), message, result, to_i64(now_ms())],
        )
        .map_err(store_error("finish a task"))?;
        if too_large {
            return Err(too_large_error);
        }
        Self::by_id(&conn, id)
    }

    fn request_cancel(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        let conn = self.conn();
        let task = Self::by_id(&conn, id)?;
        if task.owner != owner {
            return Err(TaskError::NotFound { id: id.to_owned() });
        }
        Self::running(&conn, id)?;
        conn.execute(
            "UPDATE tasks SET cancel_requested = 1, updated_at_ms = ?2 WHERE id = ?1",
            params![id, to_i64(now_ms())],
        )
        .map_err(store_error("cancel a task"))?;
        Self::by_id(&conn, id)
    }

    fn purge_expired(&self, now_ms: u64) -> Result<usize, TaskError> {
        self.conn()
            .execute(
                "DELETE FROM tasks WHERE expires_at_ms <= ?1",
                params![to_i64(now_ms)],
            )
            .map_err(store_error("purge expired tasks"))
    }

    fn fail_unfinished(&self, reason: &str) -> Result<usize, TaskError> {
        self.conn()
            .execute(
                "UPDATE tasks SET status = 'failed', status_message = ?1, updated_at_ms = ?2 \
                 WHERE status IN ('working', 'input_required')",
                params![reason, to_i64(now_ms())],
            )
            .map_err(store_error("mark unfinished tasks failed"))
    }
}
