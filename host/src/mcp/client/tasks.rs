//! Following a call that the server runs as a task, to its end.
//!
//! The client declares the tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663, the shape rmcp 3.11 speaks; `toolhost serve` answers it too).
//! A server that has it may answer a long `tools/call` with a task instead
//! of its result; the call then polls `tasks/get` at the server's
//! `pollIntervalMs` (kept within [`MIN_POLL`] and [`MAX_POLL`]) until the
//! task ends, each poll held to the request timeout but the whole call
//! only to the caller's (longer) task deadline. Each new status message
//! is passed on as the call's progress. A call dropped before its task
//! ended (its deadline passed, its caller gave up) sends `tasks/cancel`,
//! so the server stops the work.

use std::time::Duration;

use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, Task};
use rmcp::{ErrorData, Peer, RoleClient, ServiceError};
use serde_json::{Value, json};

use super::Upstream;
use crate::tools::secrets::Secrets;
use crate::tools::{Progress, ProgressSink, TaskHandoff};

/// The shortest pause between two polls, whatever the server asks for.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(50);

/// The longest pause between two polls, whatever the server asks for.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(30);

/// The pause between polls when the server does not say.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// How long a `tasks/cancel` sent for a dropped call may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest status message passed on as progress, in bytes.
const MAX_STATUS_BYTES: usize = 512;

/// What following a task needs from the call.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskWatch {
    /// How long one poll may take; `None`: no limit of its own.
    pub(crate) request_timeout: Option<Duration>,
    /// Where the task's status messages go, as progress.
    pub(crate) progress: Option<ProgressSink>,
    /// Secrets sent to the server, kept out of the messages passed on.
    pub(crate) redact: Secrets,
    /// The caller's link to the task: told its id, and detached when the
    /// caller stops waiting (the task then runs on when the call is
    /// dropped, instead of being cancelled).
    pub(crate) handoff: Option<TaskHandoff>,
}

/// How a task ended, or why following it stopped.
#[derive(Debug)]
pub(crate) enum TaskEnd {
    /// It completed with this result (which may be a tool error).
    Completed(CallToolResult),
    /// It failed with this JSON-RPC error.
    Failed(ErrorData),
    /// The server cancelled it; its last status message.
    Cancelled(Option<String>),
    /// It asks for input, which toolhost cannot give an upstream's task
    /// yet (the task is cancelled).
    InputRequired,
    /// The server's answer is not what the extension says.
    Malformed(String),
    /// A poll failed (the task is cancelled if the server can be reached).
    Poll(ServiceError),
    /// A poll got no answer within the request timeout.
    PollTimeout(Duration),
}

impl Upstream {
    /// Whether the server declared the tasks extension.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_tasks())
    }

    /// Poll task `created` until it ends; see the [module docs](self).
    /// Dropping the future before then cancels the task on the server.
    pub(crate) async fn follow_task(&self, created: Task, watch: &TaskWatch) -> TaskEnd {
        let pause = poll_pause(created.poll_interval_ms);
        self.follow(created.task_id, pause, created.status_message, watch)
            .await
    }

    /// Poll task `id`, which an earlier call left running (see
    /// [`TaskHandoff`]), until it ends, as [`follow_task`](Self::follow_task)
    /// does; its first poll goes out at once.
    pub(crate) async fn follow_task_id(&self, id: &str, watch: &TaskWatch) -> TaskEnd {
        self.follow(id.to_owned(), Duration::ZERO, None, watch)
            .await
    }

    pub(super) async fn follow(
        &self,
        id: String,
        mut pause: Duration,
        status_message: Option<String>,
        watch: &TaskWatch,
    ) -> TaskEnd {
        if let Some(handoff) = &watch.handoff {
            handoff.started(&id);
        }
        let mut guard = CancelOnDrop {
            peer: self.peer.clone(),
            task_id: Some(id.clone()),
            handoff: watch.handoff.clone(),
        };
        let mut reporter = Reporter::new(watch);
        reporter.saw(status_message.as_deref());
        loop {
            tokio::time::sleep(pause).await;
            let task = match self.task_request("tasks/get", &id, watch).await {
                Ok(task) => task,
                Err(end) => return end,
            };
            let message = task.get("statusMessage").and_then(Value::as_str);
            reporter.saw(message);
            let asked = ["pollIntervalMs", "pollInterval"]
                .iter()
                .find_map(|key| task.get(*key).and_then(Value::as_u64));
            pause = poll_pause(asked);
            let end = match task.get("status").and_then(Value::as_str) {
                Some("working") => continue,
                // Cancelled on the server by the guard, as the call fails.
                Some("input_required") => return TaskEnd::InputRequired,
                Some("completed") => match task.get("result") {
                    Some(result) => completed(result.clone()),
                    // 2025-11-25: the result is `tasks/result`'s answer.
                    None => match self.task_request("tasks/result", &id, watch).await {
                        Ok(result) => completed(result),
                        Err(end) => end,
                    },
                },
                Some("failed") => match task.get("error") {
                    Some(error) => serde_json::from_value::<ErrorData>(error.clone()).map_or_else(
                        |e| TaskEnd::Malformed(format!("its task's error: {e}")),
                        TaskEnd::Failed,
                    ),
                    None => match self.task_request("tasks/result", &id, watch).await {
                        Ok(_) => TaskEnd::Malformed("its failed task has a result".to_owned()),
                        Err(end) => end,
                    },
                },
                Some("cancelled") => TaskEnd::Cancelled(message.map(str::to_owned)),
                _ => TaskEnd::Malformed(format!(
                    "a task status toolhost does not know: {}",
                    task.get("status").unwrap_or(&Value::Null)
                )),
            };
            // The task ended on the server: nothing to cancel.
            guard.task_id = None;
            return end;
        }
    }

    /// `method` (`tasks/get`, `tasks/result`) for task `id`, within the
    /// request timeout: its answer as JSON. Sent as raw JSON-RPC, so that
    /// both revisions' answers are read (2025-11-25's `ttl` and
    /// `pollInterval`, 2026-07-28's `ttlMs`, `pollIntervalMs`, `result`
    /// and `error`), whatever rmcp's types make of them.
    async fn task_request(
        &self,
        method: &str,
        id: &str,
        watch: &TaskWatch,
    ) -> Result<Value, TaskEnd> {
        let request =
            ClientRequest::CustomRequest(CustomRequest::new(method, Some(json!({ "taskId": id }))));
        let sent = self.peer.send_request(request);
        let answer = match watch.request_timeout {
            Some(limit) => tokio::time::timeout(limit, sent)
                .await
                .map_err(|_| TaskEnd::PollTimeout(limit))?,
            None => sent.await,
        };
        let answer = answer.map_err(TaskEnd::Poll)?;
        serde_json::to_value(answer)
            .map_err(|e| TaskEnd::Malformed(format!("its answer to `{method}`: {e}")))
    }
}

/// A completed task's `result`: the call's result.
pub(super) fn completed(result: Value) -> TaskEnd {
    serde_json::from_value::<CallToolResult>(result).map_or_else(
        |e| TaskEnd::Malformed(format!("its task's result: {e}")),
        TaskEnd::Completed,
    )
}

/// The pause before the next poll: what the server asks for, within
/// [`MIN_POLL`] and [`MAX_POLL`].
pub(super) fn poll_pause(asked_ms: Option<u64>) -> Duration {
    asked_ms
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// Sends `tasks/cancel` for a task still running when the call is dropped.
/// Not when the caller detached the call's handoff: its task runs on.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    task_id: Option<String>,
    handoff: Option<TaskHandoff>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        if self.handoff.as_ref().is_some_and(TaskHandoff::is_detached) {
            tracing::debug!("left upstream task {task_id} running: its caller will pick it up");
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            // Raw, as `tasks/get`: the two revisions answer it differently.
            let cancel = peer.send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tasks/cancel",
                Some(json!({ "taskId": task_id })),
            )));
            match tokio::time::timeout(CANCEL_TIMEOUT, cancel).await {
                Ok(Ok(_)) => tracing::debug!("cancelled upstream task {task_id}"),
                Ok(Err(e)) => tracing::debug!("cancelling upstream task {task_id} failed: {e}"),
                Err(_) => tracing::debug!("cancelling upstream task {task_id} got no answer"),
            }
        });
    }
}

/// Passes each new status message on as progress: the count of messages
/// seen so far, and the message (escaped, clipped, secrets redacted).
struct Reporter<'a> {
    watch: &'a TaskWatch,
    last: Option<String>,
    seen: u32,
}

impl<'a> Reporter<'a> {
    fn new(watch: &'a TaskWatch) -> Self {
        Self {
            watch,
            last: None,
            seen: 0,
        }
    }

    fn saw(&mut self, message: Option<&str>) {
        let (Some(sink), Some(message)) = (&self.watch.progress, message) else {
            return;
        };
        if self.last.as_deref() == Some(message) {
            return;
        }
        self.last = Some(message.to_owned());
        self.seen += 1;
        let text = self.watch.redact.redact(message);
        sink.report(Progress {
            done: f64::from(self.seen),
            total: None,
            message: Some(crate::text::untrusted(&text, MAX_STATUS_BYTES)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_honour_the_server_within_bounds() {
        assert_eq!(poll_pause(None), DEFAULT_POLL);
        assert_eq!(poll_pause(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_pause(Some(0)), MIN_POLL);
        assert_eq!(poll_pause(Some(3_600_000)), MAX_POLL);
    }

    #[test]
    fn each_new_status_message_is_one_progress_report() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = {
            let seen = std::sync::Arc::clone(&seen);
            ProgressSink::new(move |p| seen.lock().unwrap().push(p))
        };
        let watch = TaskWatch {
            progress: Some(sink),
            redact: Secrets::new(["hunter2"]),
            ..TaskWatch::default()
        };
        let mut reporter = Reporter::new(&watch);
        for message in [None, Some("page 1"), Some("page 1"), Some("key hunter2\n")] {
            reporter.saw(message);
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].done, 1.0);
        assert_eq!(seen[0].message.as_deref(), Some("page 1"));
        let last = seen[1].message.as_deref().unwrap_or_default();
        assert!(!last.contains("hunter2") && !last.contains('\n'), "{last}");
    }
}
