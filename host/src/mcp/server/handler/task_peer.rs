//! What a 2025-11-25 task tells the client that started it, through the
//! session's own connection (stdio, or an HTTP session's stream):
//!
//! - its questions: the task turns `input_required` and the server sends
//!   `elicitation/create`, tagged with the task
//!   (`io.modelcontextprotocol/related-task`, as the revision requires of
//!   a request associated with a task); the answer goes to the tool and
//!   the task is `working` again. The request goes out at once rather than
//!   only on a `tasks/result` the client may call early: the official
//!   Tasks client polls `tasks/get` until the end and calls `tasks/result`
//!   only then, so a question held for it would never be asked. Over HTTP
//!   it travels on the session's standalone stream (its GET), where
//!   streamable HTTP puts a server's requests that answer no request.
//! - `notifications/tasks/status` at each change of its status or status
//!   message, which the revision allows (MAY) so that a client need not
//!   poll.
//!
//! A client that did not declare form elicitation gets no questions (each
//! answers `unavailable` to the tool, which goes on without it), as a
//! plain call's would. 2026-07-28 clients hear neither: their tasks ask
//! through `tasks/get`'s `inputRequests` and `tasks/update`.

use std::sync::Arc;

use rmcp::model::{
    ClientResult, CustomNotification, ElicitRequestParams, ProtocolVersion, Request,
    RequestMetaObject, ServerNotification, ServerRequest,
};
use rmcp::{Peer, RoleServer};
use serde_json::json;

use crate::tasks::{TaskControl, TaskHost};

/// How long a task's question waits for the client to poll the task
/// before it goes out anyway.
const KNOWN_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);
use crate::tools::{Answer, Question, QuestionSink};

/// The `_meta` key that ties a message to its task.
pub(in crate::mcp::server) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The notification of a task's new status (2025-11-25).
const STATUS_NOTIFICATION: &str = "notifications/tasks/status";

/// A 2025-11-25 session's connection, as its tasks use it.
#[derive(Debug, Clone)]
pub(in crate::mcp::server) struct TaskPeer {
    peer: Peer<RoleServer>,
    /// The client declared form elicitation.
    elicits: bool,
}

impl TaskPeer {
    /// The connection `peer` of a session that finished its handshake, if
    /// it speaks a revision whose tasks use it (before 2026-07-28).
    pub(in crate::mcp::server) fn of(peer: &Peer<RoleServer>) -> Option<Self> {
        let info = peer.peer_info()?;
        if info.protocol_version >= ProtocolVersion::V_2026_07_28 {
            return None;
        }
        let elicits = info
            .capabilities
            .elicitation
            .as_ref()
            // A capability that names neither mode is form mode (2025-06-18).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        Some(Self {
            peer: peer.clone(),
            elicits,
        })
    }

    /// Where task `control`'s questions go: to the client's user, each
    /// while the task is `input_required`. None when the client cannot be
    /// asked.
    /// The question goes out once the client has polled the task (`polls`,
    /// at most [`KNOWN_WITHIN`] later), so that it knows the task the
    /// question names.
    pub(in crate::mcp::server) fn questions(
        &self,
        control: TaskControl,
        polls: Arc<super::tasks::Polls>,
    ) -> Option<QuestionSink> {
        if !self.elicits {
            return None;
        }
        let peer = self.peer.clone();
        Some(QuestionSink::new(move |question: Question| {
            let (peer, control, polls) = (peer.clone(), control.clone(), Arc::clone(&polls));
            async move {
                let message = question.message.clone();
                let Some(mut params) = crate::mcp::server::question::params(question) else {
                    return Answer::Cancel;
                };
                if let ElicitRequestParams::FormElicitationParams { meta, .. } = &mut params {
                    let mut tagged = RequestMetaObject::new();
                    tagged.insert(RELATED_TASK.into(), json!({ "taskId": control.id() }));
                    *meta = Some(tagged);
                }
                control.input_required(&message);
                polls.known(control.id(), KNOWN_WITHIN).await;
                let sent = peer.send_request(ServerRequest::ElicitRequest(Request::new(params)));
                let answer = match sent.await {
                    Ok(ClientResult::ElicitResult(result)) => {
                        crate::mcp::server::question::answer(result)
                    }
                    Ok(_) | Err(_) => Answer::Cancel,
                };
                control.working(None, None);
                answer
            }
        }))
    }

    /// Send `notifications/tasks/status` for task `id` of `owner` at each
    /// change of its status or message, until it ends (that last status
    /// included) or the connection is gone.
    pub(in crate::mcp::server) fn watch(&self, tasks: Arc<TaskHost>, owner: String, id: String) {
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let runner = tasks.runner();
            let mut changes = runner.changes();
            let mut told = None;
            loop {
                let Ok(task) = runner.get(&owner, &id) else {
                    return;
                };
                let params = super::legacy_task(&task, tasks.poll_interval_ms());
                let seen = (params["status"].clone(), params["statusMessage"].clone());
                if told.as_ref() != Some(&seen) {
                    let note = CustomNotification::new(STATUS_NOTIFICATION, Some(params));
                    let sent = peer.send_notification(ServerNotification::CustomNotification(note));
                    if sent.await.is_err() {
                        return;
                    }
                    told = Some(seen);
                }
                if task.status.is_terminal() || changes.changed().await.is_err() {
                    return;
                }
            }
        });
    }
}
