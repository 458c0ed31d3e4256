//! Tasks of a 2025-11-25 server: a `tools/call` augmented with
//! `params.task`, answered with `{"task": {...}}`, then followed as the
//! extension's tasks are (`tasks/get`, then `tasks/result`).
//!
//! rmcp 3.11 reads neither that revision's `capabilities.tasks` nor a
//! tool's `execution.taskSupport`, so toolhost cannot see which tools must
//! run as tasks. It learns it from the refusal instead: a plain call of a
//! tool whose `taskSupport` is `required` is refused before it runs
//! (`-32601`, "requires task augmentation" from the TypeScript SDK,
//! "requires task-based execution" from FastMCP), and only such a refusal
//! is retried as a task, so no call ever runs twice.

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, JsonObject};
use serde_json::{Value, json};

use super::Upstream;
use super::tasks::{TaskEnd, TaskWatch, completed, poll_pause};

/// The phrases with which servers refuse a plain call of a tool that must
/// run as a task: the TypeScript SDK's, FastMCP's.
const REFUSALS: [&str; 2] = [
    "requires task augmentation",
    "requires task-based execution",
];

/// Whether a plain call was refused because the tool must run as a task:
/// the JSON-RPC error (method not found or invalid request) or the error
/// result the server made of it, saying so.
pub(crate) fn refused_as_not_a_task(answer: Result<&CallToolResult, &ServiceError>) -> bool {
    let says = |text: &str| REFUSALS.iter().any(|r| text.contains(r));
    match answer {
        Err(ServiceError::McpError(e)) => matches!(e.code.0, -32601 | -32600) && says(&e.message),
        // The TypeScript SDK turns the refusal into the call's error result.
        Ok(result) => {
            result.is_error == Some(true)
                && result.content.len() == 1
                && result.content[0]
                    .as_text()
                    .is_some_and(|t| says(&t.text) && t.text.len() < 512)
        }
        Err(_) => false,
    }
}

impl Upstream {
    /// Call tool `name` as a 2025-11-25 task (see the [module docs](self))
    /// and follow the task to its end; a server that answers at once
    /// gives its result.
    pub(crate) async fn call_as_task(
        &self,
        name: &str,
        arguments: JsonObject,
        watch: &TaskWatch,
    ) -> TaskEnd {
        let params = json!({ "name": name, "arguments": arguments, "task": {} });
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        let sent = self.peer.send_request(request);
        let answer = match watch.request_timeout {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(answer) => answer,
                Err(_) => return TaskEnd::PollTimeout(limit),
            },
            None => sent.await,
        };
        let answer = match answer.map(serde_json::to_value) {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return TaskEnd::Malformed(format!("its answer to a task call: {e}")),
            Err(e) => return TaskEnd::Poll(e),
        };
        let Some(task) = answer.get("task") else {
            // Answered at once, as a plain call.
            return completed(answer);
        };
        let Some(id) = task.get("taskId").and_then(Value::as_str) else {
            return TaskEnd::Malformed("its created task has no `taskId`".to_owned());
        };
        let pause = poll_pause(task.get("pollInterval").and_then(Value::as_u64));
        let message = task
            .get("statusMessage")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.follow(id.to_owned(), pause, message, watch).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::ErrorData;
    use rmcp::model::{ContentBlock as Content, ErrorCode};

    #[test]
    fn only_a_refusal_that_says_so_is_retried_as_a_task() {
        let error = |code: i32, text: &str| {
            let e = ServiceError::McpError(ErrorData::new(ErrorCode(code), text.to_owned(), None));
            refused_as_not_a_task(Err(&e))
        };
        let result = |text: &str| {
            refused_as_not_a_task(Ok(&CallToolResult::error(vec![Content::text(text)])))
        };
        let sdk =
            "MCP error -32601: Tool research requires task augmentation (taskSupport: 'required')";
        assert!(result(sdk));
        assert!(error(-32601, "Tool research requires task augmentation"));
        assert!(error(
            -32600,
            "Tool \"research_deep\" requires task-based execution."
        ));
        // A tool's own failure, or another code, is the call's answer.
        assert!(!error(-32602, "requires task augmentation"));
        assert!(!result("disk full"));
        let success = CallToolResult::success(vec![Content::text(sdk)]);
        assert!(!refused_as_not_a_task(Ok(&success)));
    }
}
