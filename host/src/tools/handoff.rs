//! A call that its source runs as a task elsewhere (an `[[mcp]]` server's
//! MCP task), and how a caller that will not wait for it lets it run on and
//! picks it up later.
//!
//! The caller puts a [`TaskHandoff`] in the call's
//! [`CallContext`](super::CallContext). A tool whose calls can run as
//! remote tasks ([`Tool::follows_tasks`](super::Tool::follows_tasks))
//! reports each task it starts ([`TaskHandoff::started`]); a caller that
//! stops waiting [`detach`](TaskHandoff::detach)es the handoff before it
//! drops the call, and the tool then leaves the task running instead of
//! cancelling it. Later, a call of the same tool with
//! [`TaskHandoff::resuming`] in its context follows that task to its end
//! instead of starting the work again. The loop does this for
//! [`RunnerConfig::task_pause`](crate::runner::RunnerConfig::task_pause).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

/// One call's link to the task its source runs it as; see the
/// [module docs](self). Clones share it.
#[derive(Clone)]
pub struct TaskHandoff {
    inner: Arc<Inner>,
}

struct Inner {
    /// The task the call runs as, once its source said.
    task: watch::Sender<Option<String>>,
    /// The task to follow instead of starting the call's work.
    resuming: Option<String>,
    /// Whether the caller stopped waiting and the task must run on.
    detached: AtomicBool,
}

impl TaskHandoff {
    /// A handoff for a fresh call.
    pub fn new() -> Self {
        Self::with(None)
    }

    /// A handoff for a call that picks up the task `task_id` that an
    /// earlier call of the same tool left running: the tool follows it to
    /// its end and never starts the work again.
    pub fn resuming(task_id: impl Into<String>) -> Self {
        let task_id = task_id.into();
        let handoff = Self::with(Some(task_id.clone()));
        handoff.started(&task_id);
        handoff
    }

    fn with(resuming: Option<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                task: watch::Sender::new(None),
                resuming,
                detached: AtomicBool::new(false),
            }),
        }
    }

    /// The task this call picks up, when it resumes one.
    pub fn resumed_task(&self) -> Option<&str> {
        self.inner.resuming.as_deref()
    }

    /// The source runs the call as task `task_id` (said by the tool).
    pub fn started(&self, task_id: &str) {
        self.inner.task.send_replace(Some(task_id.to_owned()));
    }

    /// The task the call runs as, once its source said.
    pub fn task(&self) -> Option<String> {
        self.inner.task.borrow().clone()
    }

    /// Wait until the call runs as a task, and give its id. A call that
    /// never becomes a task never gets here.
    pub async fn running(&self) -> String {
        let mut seen = self.inner.task.subscribe();
        loop {
            if let Some(task) = seen.borrow_and_update().clone() {
                return task;
            }
            if seen.changed().await.is_err() {
                // The sender lives as long as `self`: not reached.
                std::future::pending::<()>().await;
            }
        }
    }

    /// The caller stops waiting: the task must run on when the call is
    /// dropped (the tool does not cancel it).
    pub fn detach(&self) {
        self.inner.detached.store(true, Ordering::Release);
    }

    /// Whether the caller stopped waiting ([`detach`](Self::detach)).
    pub fn is_detached(&self) -> bool {
        self.inner.detached.load(Ordering::Acquire)
    }
}

impl Default for TaskHandoff {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TaskHandoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandoff")
            .field("task", &self.task())
            .field("resuming", &self.inner.resuming)
            .field("detached", &self.is_detached())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_caller_hears_the_task_and_a_resumed_call_knows_its_own() {
        let handoff = TaskHandoff::new();
        assert_eq!(handoff.task(), None);
        let waiting = tokio::spawn({
            let handoff = handoff.clone();
            async move { handoff.running().await }
        });
        handoff.started("t-1");
        assert_eq!(waiting.await.unwrap(), "t-1");
        assert!(!handoff.is_detached());
        handoff.clone().detach();
        assert!(handoff.is_detached(), "clones share the handoff");

        let resumed = TaskHandoff::resuming("t-2");
        assert_eq!(resumed.resumed_task(), Some("t-2"));
        assert_eq!(resumed.running().await, "t-2");
        assert_eq!(TaskHandoff::new().resumed_task(), None);
    }
}
