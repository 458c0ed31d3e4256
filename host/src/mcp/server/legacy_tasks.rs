//! MCP tasks as the 2025-11-25 revision has them, answered in front of
//! rmcp.
//!
//! rmcp 3.11 speaks only 2026-07-28's tasks extension: it drops a
//! `tools/call`'s `params.task`, has no `capabilities.tasks` nor a tool's
//! `execution`, and answers `tasks/result` and `tasks/list` with -32601.
//! So the two paths in front of it, which see each request as it came
//! (`stdio_direct` and `direct`), answer 2025-11-25's task requests here:
//!
//! - `tools/call` with `params.task` (a [`Request::Call`]): the task is
//!   stored, then the answer is `{"task": Task}`;
//! - `tasks/get`, `tasks/result` (waits for the end, then the call's own
//!   result, or its error), `tasks/list` (paginated) and `tasks/cancel`,
//!   each for the requester's own tasks only;
//!
//! and add to rmcp's answers what the revision says a server with tasks
//! answers ([`Patch`]): `capabilities.tasks` in `initialize`'s result,
//! and each tool's `execution.taskSupport` in `tools/list`'s.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, ErrorCode, JsonObject, JsonRpcVersion2_0, RequestId, RequestMetaObject,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Principal;
use super::handler::{Asked, Client, RELATED_TASK, legacy_task, stored_object, task_error};
use crate::tasks::TaskStatus;
use crate::telemetry::TraceParent;

/// The revision whose tasks these are.
pub(super) const REVISION: &str = "2025-11-25";

/// The most tasks one `tasks/list` page holds.
const PAGE: usize = 50;

/// How long `tasks/cancel` waits for the task to end before it answers
/// (a guest stops within a 10 ms epoch tick).
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// A JSON-RPC request, as far as this module reads it.
#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default)]
    params: Option<Value>,
}

/// One of 2025-11-25's task requests.
#[derive(Debug)]
pub(super) enum Request {
    /// `tools/call` with `params.task`: run it as a task, kept `ttl` ms
    /// if the client asked for less than the host keeps.
    Call {
        params: CallToolRequestParams,
        meta: RequestMetaObject,
        ttl: Option<u64>,
    },
    /// `tasks/get`.
    Get(String),
    /// `tasks/result`.
    Result(String),
    /// `tasks/list`, after the cursor.
    List(Option<String>),
    /// `tasks/cancel`.
    Cancel(String),
    /// A task request whose params are not what the revision says.
    Invalid(String),
}

/// A task request with its id.
#[derive(Debug)]
pub(super) struct TaskRequest {
    pub(super) id: RequestId,
    pub(super) request: Request,
}

impl TaskRequest {
    /// `message` as one of 2025-11-25's task requests; `None` for
    /// anything else (rmcp's to answer).
    pub(super) fn parse(message: &[u8]) -> Option<Self> {
        const TASK: &[u8] = b"task";
        if !message.windows(TASK.len()).any(|w| w == TASK) {
            return None;
        }
        let Raw {
            id, method, params, ..
        } = serde_json::from_slice(message).ok()?;
        let task_id = |params: &Option<Value>| match params
            .as_ref()
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
        {
            Some(id) => Ok(id.to_owned()),
            None => Err(format!("{method}: params.taskId (a string) is required")),
        };
        let request = match method.as_ref() {
            "tools/call" => {
                let Some(Value::Object(mut params)) = params else {
                    return None;
                };
                let task = params.remove("task")?;
                let ttl = task.get("ttl").and_then(Value::as_u64);
                match serde_json::from_value::<CallToolRequestParams>(Value::Object(params)) {
                    Ok(mut params) => Request::Call {
                        meta: params.meta.take().unwrap_or_default(),
                        params,
                        ttl,
                    },
                    Err(e) => Request::Invalid(format!("tools/call: {e}")),
                }
            }
            "tasks/get" => task_id(&params).map_or_else(Request::Invalid, Request::Get),
            "tasks/result" => task_id(&params).map_or_else(Request::Invalid, Request::Result),
            "tasks/cancel" => task_id(&params).map_or_else(Request::Invalid, Request::Cancel),
            "tasks/list" => Request::List(
                params
                    .as_ref()
                    .and_then(|p| p.get("cursor"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            ),
            _ => return None,
        };
        Some(Self { id, request })
    }

    /// The name of the tool a [`Request::Call`] calls.
    pub(super) fn tool(&self) -> Option<&str> {
        match &self.request {
            Request::Call { params, .. } => Some(&params.name),
            _ => None,
        }
    }

    /// The `_meta` of a [`Request::Call`] (empty for the others).
    pub(super) fn meta(&self) -> &JsonObject {
        static EMPTY: std::sync::LazyLock<JsonObject> = std::sync::LazyLock::new(JsonObject::new);
        match &self.request {
            Request::Call { meta, .. } => meta,
            _ => &EMPTY,
        }
    }

    /// The answer (a JSON-RPC message) of `conn`, for `principal` when the
    /// server authenticated one; a task's call holds `permit` (the
    /// principal's policy admitted it) until it ends, and is charged to it.
    pub(super) async fn answer(
        self,
        conn: &Arc<Client>,
        principal: Option<&Principal>,
        trace_parent: Option<TraceParent>,
        permit: Option<super::auth::Permit>,
    ) -> Value {
        let id = self.id;
        match answer(conn, self.request, principal, trace_parent, permit).await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        }
    }
}

async fn answer(
    conn: &Arc<Client>,
    request: Request,
    principal: Option<&Principal>,
    trace_parent: Option<TraceParent>,
    permit: Option<super::auth::Permit>,
) -> Result<Value, McpError> {
    let Some(tasks) = conn.tasks() else {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            "this server offers no tasks",
            None,
        ));
    };
    let owner = conn.task_owner(principal);
    let poll = tasks.poll_interval_ms();
    let runner = tasks.runner();
    match request {
        Request::Invalid(message) => Err(McpError::invalid_params(message, None)),
        Request::Call { params, meta, ttl } => {
            let tools = conn.snapshot();
            if tools.get(&params.name).is_none() {
                return Err(McpError::invalid_params(
                    format!(
                        "no tool named `{}`; tools/list names the tools this server has",
                        params.name
                    ),
                    None,
                ));
            }
            conn.runs_as_task(&tools, &params.name, Asked::Explicitly)?;
            let task = conn.start_task(
                tools,
                params,
                meta,
                owner,
                (ttl, false),
                (super::handler::Origin::new(trace_parent, principal), permit),
            )?;
            Ok(json!({ "task": legacy_task(&task, poll) }))
        }
        Request::Get(id) => {
            let task = runner.get(&owner, &id).map_err(task_error)?;
            conn.tasking.polls.polled(&id);
            Ok(legacy_task(&task, poll))
        }
        Request::Result(id) => {
            if runner.get(&owner, &id).is_ok() {
                // The client knows the task: its questions may go out.
                conn.tasking.polls.polled(&id);
            }
            let task = runner.wait(&owner, &id).await.map_err(task_error)?;
            let related = json!({ RELATED_TASK: { "taskId": task.id } });
            match task.status {
                TaskStatus::Completed => {
                    let mut result = stored_object(task.result.as_deref()).unwrap_or_default();
                    // 2026-07-28's discriminator; this revision has none.
                    result.remove("resultType");
                    let meta = result
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(JsonObject::new()));
                    if let (Value::Object(meta), Value::Object(related)) = (meta, related) {
                        meta.extend(related);
                    }
                    Ok(Value::Object(result))
                }
                TaskStatus::Failed => {
                    let error = super::handler::failure(&task);
                    let code = error
                        .get("code")
                        .and_then(Value::as_i64)
                        .and_then(|c| i32::try_from(c).ok())
                        .unwrap_or(ErrorCode::INTERNAL_ERROR.0);
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("the task failed")
                        .to_owned();
                    Err(McpError::new(ErrorCode(code), message, Some(related)))
                }
                TaskStatus::Cancelled => Err(McpError::internal_error(
                    format!("task `{}` was cancelled: it has no result", task.id),
                    Some(related),
                )),
                // Run by another host on a shared store: not ended yet.
                _ => Err(McpError::internal_error(
                    format!(
                        "task `{}` is still {} on another host; poll tasks/get",
                        task.id, task.status
                    ),
                    Some(related),
                )),
            }
        }
        Request::List(cursor) => {
            let page = runner
                .store()
                .list(&owner, cursor.as_deref(), PAGE)
                .map_err(task_error)?;
            let mut result = json!({
                "tasks": page.iter().map(|t| legacy_task(t, poll)).collect::<Vec<_>>(),
            });
            if page.len() == PAGE
                && let (Some(last), Value::Object(object)) = (page.last(), &mut result)
            {
                object.insert("nextCursor".into(), Value::String(last.id.clone()));
            }
            Ok(result)
        }
        Request::Cancel(id) => {
            runner.cancel(&owner, &id).map_err(task_error)?;
            // Cooperative, but a guest stops within a tick: answer with
            // the task as it ended.
            let task = match tokio::time::timeout(CANCEL_WAIT, runner.wait(&owner, &id)).await {
                Ok(task) => task.map_err(task_error)?,
                Err(_) => runner.get(&owner, &id).map_err(task_error)?,
            };
            Ok(legacy_task(&task, poll))
        }
    }
}

/// What to add to rmcp's answer to a request of a 2025-11-25 client of a
/// server with tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Patch {
    /// `initialize`: the `tasks` capability.
    Initialize,
    /// `tools/list`: each tool's `execution.taskSupport`.
    ToolsList,
}

impl Patch {
    /// The request `message`'s id and the patch its answer needs; `None`
    /// for a request whose answer needs none.
    pub(super) fn of(message: &[u8]) -> Option<(RequestId, Self)> {
        const INITIALIZE: &[u8] = b"initialize";
        const TOOLS_LIST: &[u8] = b"tools/list";
        let has = |word: &[u8]| message.windows(word.len()).any(|w| w == word);
        if !has(INITIALIZE) && !has(TOOLS_LIST) {
            return None;
        }
        let Raw { id, method, .. } = serde_json::from_slice(message).ok()?;
        match method.as_ref() {
            "initialize" => Some((id, Self::Initialize)),
            "tools/list" => Some((id, Self::ToolsList)),
            _ => None,
        }
    }

    /// Add to `answer` (rmcp's JSON-RPC answer) what the patch adds; for
    /// `tools/list`, from `conn`'s tools. Returns whether `answer` is of
    /// the revision with these tasks (an `initialize` of another revision
    /// is left as it is).
    pub(super) fn apply(self, answer: &mut Value, conn: Option<&Client>) -> bool {
        let Some(result) = answer.get_mut("result").and_then(Value::as_object_mut) else {
            return false;
        };
        match self {
            Self::Initialize => {
                if result.get("protocolVersion").and_then(Value::as_str) != Some(REVISION) {
                    return false;
                }
                if let Some(Value::Object(capabilities)) = result.get_mut("capabilities") {
                    capabilities.insert(
                        "tasks".into(),
                        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                    );
                }
                true
            }
            Self::ToolsList => {
                let Some((conn, tasks)) = conn.and_then(|c| Some((c, c.tasks()?))) else {
                    return false;
                };
                let snapshot = conn.snapshot();
                let Some(Value::Array(listed)) = result.get_mut("tools") else {
                    return false;
                };
                for listed in listed.iter_mut().filter_map(Value::as_object_mut) {
                    let Some(tool) = listed
                        .get("name")
                        .and_then(Value::as_str)
                        .and_then(|name| snapshot.get(name))
                    else {
                        continue;
                    };
                    let support = super::handler::task_support(tasks, &**tool);
                    if support != crate::tasks::TaskSupport::Forbidden {
                        listed.insert(
                            "execution".into(),
                            json!({ "taskSupport": support.as_str() }),
                        );
                    }
                }
                true
            }
        }
    }
}
