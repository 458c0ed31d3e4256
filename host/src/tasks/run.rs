//! Running work as a task: created in the store first, then run in the
//! background under a deadline, stopped on cancel, its outcome stored.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::{NewTask, TaskError, TaskRecord, TaskStatus, TaskStore};

tokio::task_local! {
    /// The wall-clock deadline of the guest calls of a task (see
    /// [`with_guest_deadline`]).
    static GUEST_DEADLINE: Duration;
}

/// Run `work` (a task's work) with each guest call in it under `deadline`
/// instead of its plugin's `[limits] timeout_ms`: a task may run longer
/// than a request may wait (how long: the plugin's `[task]
/// deadline_secs`, bounded by the host's `[tasks] max_deadline_secs`).
/// Fuel, memory and output caps stay the plugin's, and the watchdog
/// still stops a guest at the deadline.
pub async fn with_guest_deadline<F: Future>(deadline: Duration, work: F) -> F::Output {
    GUEST_DEADLINE.scope(deadline, work).await
}

/// The guest deadline [`with_guest_deadline`] set around the running
/// tokio task, if any.
pub fn guest_deadline() -> Option<Duration> {
    GUEST_DEADLINE.try_with(|d| *d).ok()
}

/// How a task's work ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskOutcome {
    /// It has a result (JSON text): the task is `completed`. A tool's own
    /// error is a result too.
    Completed(String),
    /// It has none: the task is `failed`, with `message`, and the error
    /// (JSON text) when there is one to hand back.
    Failed {
        /// Why, for the task's status message.
        message: String,
        /// The error as the client should get it, if any.
        error: Option<String>,
    },
}

/// Runs work as tasks of one [`TaskStore`]: each is written to the store
/// before [`start`](Self::start) returns, runs on the tokio runtime until
/// it ends, its deadline passes or it is cancelled, and its outcome is
/// written back. Cheap to clone: clones share the running tasks.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use toolhost::tasks::{NewTask, SqliteTaskStore, StoreBudget, TaskOutcome, TaskRunner, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), toolhost::tasks::TaskError> {
/// let runner = TaskRunner::new(Arc::new(SqliteTaskStore::open_in_memory(StoreBudget::default())?));
/// let task = runner.start(NewTask::new("me", "add", 60_000), Duration::from_secs(5), |_control| async {
///     TaskOutcome::Completed("3".to_owned())
/// })?;
/// let done = runner.wait("me", &task.id).await?;
/// assert_eq!((done.status, done.result.as_deref()), (TaskStatus::Completed, Some("3")));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TaskRunner {
    store: Arc<dyn TaskStore>,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The tasks this runner runs now, and what stops each.
    running: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// Bumped at every change of a task this runner made.
    changed: watch::Sender<u64>,
}

impl Inner {
    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// What the work of one task may tell its task while it runs.
#[derive(Debug, Clone)]
pub struct TaskControl {
    id: String,
    store: Arc<dyn TaskStore>,
    inner: Arc<Inner>,
}

impl TaskControl {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task is working: `message` and `progress` (so far, and of a
    /// total if known).
    pub fn working(&self, message: Option<&str>, progress: Option<(f64, Option<f64>)>) {
        self.set(TaskStatus::Working, message, progress);
    }

    /// The task waits for the client to answer `question`.
    pub fn input_required(&self, question: &str) {
        self.set(TaskStatus::InputRequired, Some(question), None);
    }

    fn set(&self, status: TaskStatus, message: Option<&str>, progress: Option<(f64, Option<f64>)>) {
        // A task that already ended (cancelled under its work) keeps its end.
        if let Err(e) = self.store.set_state(&self.id, status, message, progress) {
            tracing::debug!(task = %self.id, "task state not stored: {e}");
        }
        self.inner.bump();
    }
}

impl TaskRunner {
    /// A runner whose tasks live in `store`.
    pub fn new(store: Arc<dyn TaskStore>) -> Self {
        let (changed, _) = watch::channel(0);
        Self {
            store,
            inner: Arc::new(Inner {
                running: Mutex::default(),
                changed,
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// Write `task` to the store, then run the work `work` makes in the
    /// background: at most `deadline` (then the task is `failed`, saying
    /// so), until [`cancel`](Self::cancel) (then the work is dropped, which
    /// stops a guest at its next epoch check, and the task is
    /// `cancelled`). Returns the task as created.
    ///
    /// # Errors
    ///
    /// What [`TaskStore::create`] refuses; nothing runs then.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start<F, Fut>(
        &self,
        task: NewTask,
        deadline: Duration,
        work: F,
    ) -> Result<TaskRecord, TaskError>
    where
        F: FnOnce(TaskControl) -> Fut,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        let record = self.store.create(task)?;
        let id = record.id.clone();
        let (stop, mut stopped) = watch::channel(false);
        self.inner
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), stop);
        let work = work(TaskControl {
            id: id.clone(),
            store: Arc::clone(&self.store),
            inner: Arc::clone(&self.inner),
        });
        let (store, inner) = (Arc::clone(&self.store), Arc::clone(&self.inner));
        tokio::spawn(async move {
            let (status, message, result) = tokio::select! {
                outcome = work => match outcome {
                    TaskOutcome::Completed(result) => (TaskStatus::Completed, None, Some(result)),
                    TaskOutcome::Failed { message, error } => (TaskStatus::Failed, Some(message), error),
                },
                () = tokio::time::sleep(deadline) => (
                    TaskStatus::Failed,
                    Some(format!(
                        "the task ran past its deadline of {} s and was stopped; the plugin's \
                         manifest ([task] deadline_secs) and the host's [tasks] deadline_secs \
                         say how long a task may run",
                        deadline.as_secs_f64()
                    )),
                    None,
                ),
                _ = stopped.wait_for(|stop| *stop) => (
                    TaskStatus::Cancelled,
                    Some("cancelled at the client's request".to_owned()),
                    None,
                ),
            };
            if let Err(e) = store.finish(&id, status, message.as_deref(), result.as_deref()) {
                tracing::warn!(task = %id, "task outcome: {e}");
            }
            inner
                .running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            inner.bump();
        });
        Ok(record)
    }

    /// The task `id` of `owner`, as stored.
    ///
    /// # Errors
    ///
    /// [`TaskError::NotFound`] when `owner` has no such task.
    pub fn get(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        self.store.get(owner, id)
    }

    /// Ask task `id` of `owner` to stop: noted in the store, and its work
    /// dropped if this runner runs it. Returns the task as it is now (the
    /// work may still end it otherwise: cancel is cooperative).
    ///
    /// # Errors
    ///
    /// [`TaskError::NotFound`] when `owner` has no such task,
    /// [`TaskError::Terminal`] when it already ended.
    pub fn cancel(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        let task = self.store.request_cancel(owner, id)?;
        let running = self.inner.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.get(id) {
            Some(stop) => {
                let _ = stop.send(true);
            }
            // Nothing runs it (its host died, and the store was opened
            // without marking it): end it here.
            None => {
                drop(running);
                return self.store.finish(
                    id,
                    TaskStatus::Cancelled,
                    Some("cancelled at the client's request"),
                    None,
                );
            }
        }
        Ok(task)
    }

    /// Wait until task `id` of `owner` has ended, and return it. A task
    /// this runner does not run (another host's, on a shared store) is
    /// returned at once, as it is.
    ///
    /// # Errors
    ///
    /// [`TaskError::NotFound`] when `owner` has no such task (or it
    /// expired while waited for).
    pub async fn wait(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        let mut changes = self.inner.changed.subscribe();
        loop {
            let task = self.store.get(owner, id)?;
            if task.status.is_terminal() || !self.is_running(id) {
                return Ok(task);
            }
            if changes.changed().await.is_err() {
                return self.store.get(owner, id);
            }
        }
    }

    /// A receiver that sees a new value at every change of a task this
    /// runner runs (its state, its end): what status notifications wait on.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    fn is_running(&self, id: &str) -> bool {
        self.inner
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(id)
    }
}
