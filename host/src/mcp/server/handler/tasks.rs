//! A `tools/call` run as an MCP task, in both revisions that have tasks:
//! whether a call runs as one, its start on the host's
//! [`TaskHost`](crate::tasks::TaskHost), its owner, and the task in each
//! revision's shape (2026-07-28's extension through rmcp's types,
//! 2025-11-25's as JSON: rmcp 3.11 no longer has them).

use rmcp::model::{
    CreateTaskResult, DetailedTask, ElicitResult, ErrorCode, GetTaskResult, InputRequest,
    InputRequests, InputResponses, Request as WireRequest, Task as WireTask, TaskPayload,
    TaskStatus as WireStatus,
};
use tokio::sync::oneshot;

use super::task_peer::TaskPeer;
use super::*;
use crate::mcp::server::auth::Principal;
use crate::tasks::TaskControl;
use crate::tasks::{
    NewTask, TaskError, TaskHost, TaskOutcome, TaskRecord, TaskStatus, TaskSupport, iso8601,
};
use crate::tools::{Answer, Progress, ProgressSink, Question, QuestionSink};

/// How a client asked for its call to be a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mcp::server) enum Asked {
    /// 2025-11-25: the request's `params.task`. A task, or an error.
    Explicitly,
    /// 2026-07-28: the client declared the tasks extension, and the
    /// server decides (a tool that may run as one does).
    Declared,
    /// Not at all: a plain call, or an error for a tool that runs only as
    /// a task.
    No,
}

/// The owner of the tasks of a stdio connection: the person who started
/// the process, whose cache the store is in. A client that restarts its
/// server finds its tasks again.
const STDIO_OWNER: &str = "stdio";

/// The owner of the tasks of a sessionless HTTP request on a server
/// without authorization: anyone who knows a task's id (128 random bits).
const ANONYMOUS_OWNER: &str = "anonymous";

/// A connection's side of its tasks.
#[derive(Debug, Default)]
pub(in crate::mcp::server) struct Tasking {
    /// Who owns them, when not the connection's session.
    owner: OnceLock<&'static str>,
    /// A 2025-11-25 session's connection, which its tasks ask and tell
    /// of their status through.
    peer: OnceLock<TaskPeer>,
    /// Told when the handshake is done ([`reach`](Self::reach)).
    reached: Notify,
    done: AtomicBool,
    /// The tasks the client has polled.
    pub(in crate::mcp::server) polls: Arc<Polls>,
}

/// The tasks a 2025-11-25 client has polled (`tasks/get`) on a
/// connection: a task's question goes out only once the client knows the
/// task, since the answer that names it and the question travel on two
/// HTTP streams that may cross (the official Tasks client then fails to
/// match the question to its task).
#[derive(Debug, Default)]
pub(in crate::mcp::server) struct Polls {
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
    told: Notify,
}

impl Polls {
    /// The most task ids kept; past it they are forgotten (a question
    /// then waits its bound).
    const MAX: usize = 10_000;

    /// The client polled task `id`.
    pub(in crate::mcp::server) fn polled(&self, id: &str) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() >= Self::MAX {
            seen.clear();
        }
        if seen.insert(id.to_owned()) {
            self.told.notify_waiters();
        }
    }

    /// Wait (at most `within`) until the client has polled task `id`.
    pub(in crate::mcp::server) async fn known(&self, id: &str, within: std::time::Duration) {
        let wait = async {
            loop {
                let told = self.told.notified();
                tokio::pin!(told);
                told.as_mut().enable();
                let known = self
                    .seen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .contains(id);
                if known {
                    return;
                }
                told.await;
            }
        };
        let _ = tokio::time::timeout(within, wait).await;
    }
}

impl Tasking {
    /// The session (with a handshake) reaches its client through `peer`.
    pub(in crate::mcp::server) fn reach(&self, peer: &rmcp::Peer<RoleServer>) {
        if let Some(peer) = TaskPeer::of(peer) {
            let _ = self.peer.set(peer);
        }
        self.done.store(true, Ordering::Release);
        self.reached.notify_waiters();
    }

    /// Wait (at most `within`) until the handshake is done; whether it is.
    pub(in crate::mcp::server) async fn reached(&self, within: std::time::Duration) -> bool {
        let notified = self.reached.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.done.load(Ordering::Acquire) {
            return true;
        }
        tokio::time::timeout(within, notified).await.is_ok()
    }
}

/// The questions tasks wait on (2026-07-28's `input_required`), by task
/// id: what `tasks/get` shows as `inputRequests`, and where `tasks/update`
/// sends the answer. In memory: a restart fails the tasks that asked.
#[derive(Debug, Default)]
pub(in crate::mcp::server) struct TaskInputs {
    waiting: Mutex<HashMap<String, Waiting>>,
}

/// One task's question.
#[derive(Debug)]
struct Waiting {
    key: String,
    request: InputRequest,
    answer: oneshot::Sender<Answer>,
}

impl TaskInputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What task `id` waits for, if anything.
    fn requests(&self, id: &str) -> Option<InputRequests> {
        let waiting = self.lock();
        let waiting = waiting.get(id)?;
        Some(InputRequests::from([(
            waiting.key.clone(),
            waiting.request.clone(),
        )]))
    }

    /// Where task `control`'s questions go: each becomes the task's
    /// `input_required` until `tasks/update` answers it.
    fn sink(self: &Arc<Self>, control: TaskControl) -> QuestionSink {
        let inputs = Arc::clone(self);
        let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
        QuestionSink::new(move |question: Question| {
            let (inputs, control) = (Arc::clone(&inputs), control.clone());
            let n = asked.fetch_add(1, Ordering::Relaxed);
            async move {
                let message = question.message.clone();
                let Some(params) = crate::mcp::server::question::params(question) else {
                    return Answer::Cancel;
                };
                let (answer, answered) = oneshot::channel();
                let key = format!("{}-{n}", crate::mcp::server::question::QUESTION_INPUT_KEY);
                let request = InputRequest::Elicitation(WireRequest::new(params));
                let id = control.id().to_owned();
                inputs.lock().insert(
                    id.clone(),
                    Waiting {
                        key,
                        request,
                        answer,
                    },
                );
                control.input_required(&message);
                let answer = answered.await.unwrap_or(Answer::Cancel);
                inputs.lock().remove(&id);
                control.working(None, None);
                answer
            }
        })
    }

    /// Answer task `id`'s question with `responses` (`tasks/update`).
    fn answer(&self, id: &str, responses: &InputResponses) -> Result<(), McpError> {
        let mut waiting = self.lock();
        let key = waiting.get(id).map(|w| w.key.clone()).ok_or_else(|| {
            McpError::invalid_params(
                format!("task `{id}` waits for no input"),
                Some(serde_json::json!({ "taskId": id })),
            )
        })?;
        let response = responses.get(&key).ok_or_else(|| {
            McpError::invalid_params(
                format!("task `{id}` waits for the answer to `{key}`, which inputResponses lacks"),
                Some(serde_json::json!({ "taskId": id, "inputRequest": key })),
            )
        })?;
        let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
            McpError::invalid_params(
                format!("inputResponses.{key}: not an elicitation result: {e}"),
                None,
            )
        })?;
        if let Some(waiting) = waiting.remove(id) {
            let _ = waiting
                .answer
                .send(crate::mcp::server::question::answer(result));
        }
        Ok(())
    }
}

impl Client {
    /// The tasks this server offers, if it does.
    pub(in crate::mcp::server) fn tasks(&self) -> Option<&TaskHost> {
        self.tools.tasks.as_deref()
    }

    /// This connection's tasks belong to the stdio client.
    pub(in crate::mcp::server) fn own_tasks_as_stdio(&self) {
        let _ = self.tasking.owner.set(STDIO_OWNER);
    }

    /// Who owns the tasks a request of this connection makes, and sees
    /// them: the authenticated `principal`, else a stdio connection's
    /// user, else an HTTP session (its tasks are gone with it), else
    /// anyone with the id.
    pub(in crate::mcp::server) fn task_owner(&self, principal: Option<&Principal>) -> String {
        if let Some(principal) = principal {
            return format!("principal:{}", principal.subject());
        }
        if let Some(owner) = self.tasking.owner.get() {
            return (*owner).to_owned();
        }
        match &self.cx.session {
            Some(session) if self.lasting.load(Ordering::Relaxed) => format!("session:{session}"),
            _ => ANONYMOUS_OWNER.to_owned(),
        }
    }

    /// Whether a call of `name` on `tools` runs as a task, as the client
    /// `asked` and the tool's support (with the operator's word) allow.
    ///
    /// # Errors
    ///
    /// `-32601` for a task of a tool that forbids them, and for a plain
    /// call of one that runs only as a task (as MCP says); `-32602` for a
    /// task of a tool that needs a person's approval first, which a task
    /// cannot ask for.
    pub(in crate::mcp::server) fn runs_as_task(
        &self,
        tools: &ToolSet,
        name: &str,
        asked: Asked,
    ) -> Result<bool, McpError> {
        // Without tasks, or without the tool, the plain path answers.
        let (Some(tasks), Some(tool)) = (self.tasks(), tools.get(name)) else {
            return Ok(false);
        };
        let support = support(tasks, &**tool);
        let approval = || tools.needs_approval(name, &self.tools.approval, &self.tools.overrides);
        match (support, asked) {
            (TaskSupport::Forbidden, Asked::Explicitly) => Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool `{name}` cannot run as a task (its taskSupport is `forbidden`); call it \
                     without `task`"
                ),
                None,
            )),
            (TaskSupport::Required, Asked::No) => Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool `{name}` runs only as a task (its taskSupport is `required`): ask for \
                     one (`params.task` in 2025-11-25; declare the \
                     `io.modelcontextprotocol/tasks` extension in 2026-07-28)"
                ),
                None,
            )),
            (TaskSupport::Forbidden, _) | (_, Asked::No) => Ok(false),
            (support, asked) if approval() => {
                if asked == Asked::Explicitly || support == TaskSupport::Required {
                    Err(McpError::invalid_params(
                        format!(
                            "tool `{name}` needs a person's approval before each call, which a \
                             task cannot ask for; call it without `task`"
                        ),
                        None,
                    ))
                } else {
                    Ok(false)
                }
            }
            _ => Ok(true),
        }
    }

    /// Start the call `request` (its `_meta` in `meta`) on `tools` as a
    /// task of `owner`, kept `ttl_ms` (the client's wish, never over the
    /// host's TTL): written to the store before this returns, then run in
    /// the background under the plugin's own limits and the task's
    /// deadline. Its progress reports become the task's status. With
    /// `ask` (2026-07-28), its questions become the task's
    /// `input_required`, answered by `tasks/update`; without (2025-11-25),
    /// a session's task asks its client and tells it of its status through
    /// the session's connection ([`TaskPeer`]), and any other gets
    /// `unavailable`. Approval was ruled out by
    /// [`runs_as_task`](Self::runs_as_task). Under a policy, the call
    /// holds `permit` until it ends and is charged to its principal's
    /// quota, as a plain call is.
    ///
    /// # Errors
    ///
    /// What the store refuses (the owner's budget, a failed write).
    pub(in crate::mcp::server) fn start_task(
        self: &Arc<Self>,
        tools: Arc<ToolSet>,
        request: CallToolRequestParams,
        meta: rmcp::model::RequestMetaObject,
        owner: String,
        (ttl_ms, ask): (Option<u64>, bool),
        (origin, permit): (super::Origin, Option<crate::mcp::server::auth::Permit>),
    ) -> Result<TaskRecord, McpError> {
        let (Some(tasks), Some(tool)) = (self.tasks(), tools.get(&request.name)) else {
            return Err(McpError::internal_error(
                "this server runs no tasks of this tool",
                None,
            ));
        };
        let deadline = tasks.config().deadline(tool.task_deadline_secs());
        let ttl = ttl_ms.map_or(tasks.ttl_ms(), |asked| asked.min(tasks.ttl_ms()));
        let name = request.name.to_string();
        let conn = Arc::clone(self);
        let inputs = Arc::clone(&self.tools.task_inputs);
        // 2025-11-25: through the session's connection, when it has one.
        let peer = (!ask).then(|| self.tasking.peer.get().cloned()).flatten();
        let asker = peer.clone();
        let polls = Arc::clone(&self.tasking.polls);
        let task = NewTask::new(owner.clone(), name, ttl);
        let started = tasks
            .runner()
            .start(task, deadline, move |control| async move {
                let asks = match asker {
                    Some(peer) => peer.questions(control.clone(), polls),
                    None => ask.then(|| inputs.sink(control.clone())),
                };
                let progress = ProgressSink::new(move |p: Progress| {
                    control.working(p.message.as_deref(), Some((p.done, p.total)));
                });
                // The task ends only by its own end, its deadline or
                // `tasks/cancel` (the runner drops this future): not with the
                // request, nor with the session.
                let never = std::future::pending::<()>();
                let reach = Reach::Task(progress, asks);
                let call = conn.call_tool(&tools, request, &meta, reach, origin, never);
                // Under a policy the task holds its principal's permit
                // while it runs (its cap on calls at once), and what it
                // spends is charged to the principal's quota.
                let call = async move {
                    match permit {
                        Some(permit) => permit.charging(call).await,
                        None => call.await,
                    }
                };
                // The guest may run as long as the task (a moment longer:
                // the task's own deadline ends it first, saying so).
                let guest_deadline = deadline + std::time::Duration::from_secs(1);
                match crate::tasks::with_guest_deadline(guest_deadline, call).await {
                    Ok(CallToolResponse::Complete(result)) => {
                        TaskOutcome::Completed(json_text(&result))
                    }
                    Ok(_) => TaskOutcome::Failed {
                        message: "the call asked the client for input, which a task cannot give"
                            .to_owned(),
                        error: None,
                    },
                    Err(error) => TaskOutcome::Failed {
                        message: error.message.to_string(),
                        error: Some(json_text(&error)),
                    },
                }
            });
        let started = started.map_err(task_error)?;
        if let (Some(peer), Some(tasks)) = (peer, &self.tools.tasks) {
            peer.watch(Arc::clone(tasks), owner, started.id.clone());
        }
        Ok(started)
    }
}

impl McpTools {
    /// The owner a task request of `context` acts for, and the tasks.
    fn task_scope(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(String, &TaskHost), McpError> {
        let tasks = self.conn.tasks().ok_or_else(|| {
            McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                "this server offers no tasks",
                None,
            )
        })?;
        let owner = self.conn.task_owner(Principal::of(&context.extensions));
        Ok((owner, tasks))
    }

    /// 2026-07-28 `tasks/get` of task `id`.
    pub(super) fn task_get(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let (owner, tasks) = self.task_scope(context)?;
        let task = tasks.runner().get(&owner, id).map_err(task_error)?;
        let inputs = self.conn.tools.task_inputs.requests(&task.id);
        Ok(GetTaskResult::new(detailed(
            &task,
            tasks.poll_interval_ms(),
            inputs,
        )))
    }

    /// 2026-07-28 `tasks/cancel` of task `id`.
    pub(super) fn task_cancel(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (owner, tasks) = self.task_scope(context)?;
        tasks.runner().cancel(&owner, id).map_err(task_error)?;
        Ok(())
    }

    /// 2026-07-28 `tasks/update` of task `id`: the answer to the question
    /// it waits on.
    pub(super) fn task_update(
        &self,
        id: &str,
        responses: &InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (owner, tasks) = self.task_scope(context)?;
        let task = tasks.runner().get(&owner, id).map_err(task_error)?;
        self.conn.tools.task_inputs.answer(&task.id, responses)
    }
}

/// Whether `tool` may run as a task: the operator's `[tasks.support]`
/// over the tool's own word.
pub(in crate::mcp::server) fn support(
    tasks: &TaskHost,
    tool: &dyn crate::tools::Tool,
) -> TaskSupport {
    tasks
        .config()
        .support_for(&tool.spec().name, tool.task_support())
}

/// A store's refusal as MCP's error: an unknown (or another client's)
/// task is `-32602` with `data.taskId`, as both revisions say.
pub(in crate::mcp::server) fn task_error(error: TaskError) -> McpError {
    let mut message = error.to_string();
    if let Some(source) = std::error::Error::source(&error) {
        message = format!("{message}: {source}");
    }
    match error {
        TaskError::NotFound { id } | TaskError::Terminal { id, .. } => {
            McpError::invalid_params(message, Some(serde_json::json!({ "taskId": id })))
        }
        TaskError::TooManyTasks { .. } | TaskError::ResultTooLarge { .. } => {
            McpError::invalid_request(message, None)
        }
        _ => McpError::internal_error(message, None),
    }
}

/// What the task says of its state: its message, else its progress.
fn status_message(task: &TaskRecord) -> Option<String> {
    task.status_message.clone().or_else(|| match task.progress {
        Some((done, Some(total))) => Some(format!("{done} of {total} done")),
        Some((done, None)) => Some(format!("{done} done")),
        None => None,
    })
}

/// The task as 2026-07-28 writes it (the extension's `Task`).
pub(in crate::mcp::server) fn wire_task(task: &TaskRecord, poll_interval_ms: u64) -> WireTask {
    let status = match task.status {
        TaskStatus::Working => WireStatus::Working,
        TaskStatus::InputRequired => WireStatus::InputRequired,
        TaskStatus::Completed => WireStatus::Completed,
        TaskStatus::Failed => WireStatus::Failed,
        _ => WireStatus::Cancelled,
    };
    let mut wire = WireTask::new(
        task.id.clone(),
        status,
        iso8601(task.created_at_ms),
        iso8601(task.updated_at_ms),
    )
    .with_ttl_ms(task.ttl_ms)
    .with_poll_interval_ms(poll_interval_ms);
    wire.status_message = status_message(task);
    wire
}

/// 2026-07-28's answer to a call that became a task.
pub(in crate::mcp::server) fn created(
    task: &TaskRecord,
    poll_interval_ms: u64,
) -> CallToolResponse {
    CallToolResponse::Task(CreateTaskResult::new(wire_task(task, poll_interval_ms)))
}

/// The task with what its status carries, as 2026-07-28's `tasks/get`
/// answers: the result of a completed one, the error of a failed one, the
/// `inputs` one waits on.
pub(in crate::mcp::server) fn detailed(
    task: &TaskRecord,
    poll_interval_ms: u64,
    inputs: Option<InputRequests>,
) -> DetailedTask {
    let payload = match task.status {
        TaskStatus::InputRequired if inputs.is_some() => TaskPayload::InputRequired {
            input_requests: inputs.unwrap_or_default(),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: stored_object(task.result.as_deref()).unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: failure(task),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        // Its question already answered (or none to hand over): working.
        _ => TaskPayload::Working,
    };
    DetailedTask::new(wire_task(task, poll_interval_ms), payload)
}

/// The JSON-RPC error a failed task ended with: the stored one, else one
/// made of its status message.
pub(in crate::mcp::server) fn failure(task: &TaskRecord) -> JsonObject {
    stored_object(task.result.as_deref()).unwrap_or_else(|| {
        let mut error = JsonObject::new();
        error.insert("code".into(), Value::from(ErrorCode::INTERNAL_ERROR.0));
        error.insert(
            "message".into(),
            Value::String(
                task.status_message
                    .clone()
                    .unwrap_or_else(|| "the task failed".to_owned()),
            ),
        );
        error
    })
}

/// Stored JSON text as an object, if it is one.
pub(in crate::mcp::server) fn stored_object(text: Option<&str>) -> Option<JsonObject> {
    match serde_json::from_str(text?) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// The task as 2025-11-25 writes it (its `Task`: `ttl` and
/// `pollInterval` in milliseconds).
pub(in crate::mcp::server) fn legacy_task(task: &TaskRecord, poll_interval_ms: u64) -> Value {
    let mut wire = serde_json::json!({
        "taskId": task.id,
        "status": task.status.as_str(),
        "createdAt": iso8601(task.created_at_ms),
        "lastUpdatedAt": iso8601(task.updated_at_ms),
        "ttl": task.ttl_ms,
        "pollInterval": poll_interval_ms,
    });
    if let (Some(message), Value::Object(object)) = (status_message(task), &mut wire) {
        object.insert("statusMessage".into(), Value::String(message));
    }
    wire
}
