//! One call to a server's tool, and what its answer or failure becomes.

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::CallToolResponse;
use serde_json::Value;

use super::{Link, output};
use crate::mcp::Upstream;
use crate::mcp::client::{TaskEnd, TaskWatch, refused_as_not_a_task};
use crate::tools::{CallContext, ToolError, ToolErrorKind, ToolOutput};

impl Link {
    /// Call the server's tool `remote` with `input`. What comes back (the
    /// output, or an error quoting the server) has the secrets sent to the
    /// server redacted.
    ///
    /// Each request is held to the declaration's `exec.timeout_ms`
    /// (unless the caller set its own timeout, which the registry applies
    /// to the whole call); a call the server runs as a task is followed to
    /// its end, up to `task_timeout_secs` (the registry's deadline).
    pub(super) async fn call(
        &self,
        remote: &str,
        input: Value,
        cx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let result = self.call_unredacted(remote, input, cx).await;
        self.plan.bounds.redact.redact_output(result)
    }

    async fn call_unredacted(
        &self,
        remote: &str,
        input: Value,
        cx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &self.plan.name;
        let (connection, down) = {
            let state = self.state();
            (state.connection.clone(), state.down.clone())
        };
        let Some(connection) = connection else {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "MCP server `{server}` is not running ({}); toolhost restarts it with backoff: {}",
                    down.as_deref().unwrap_or("not started"),
                    self.plan.hint
                ),
            ));
        };
        let Value::Object(arguments) = input else {
            return Err(ToolError::invalid_input(
                "an MCP tool takes a JSON object as its input",
            ));
        };
        // The caller's own timeout is the registry's for the whole call.
        let request_timeout = if cx.overrides.timeout.is_some() {
            None
        } else {
            self.plan.request_timeout
        };
        let watch = || TaskWatch {
            request_timeout,
            progress: cx.progress.clone(),
            redact: self.plan.bounds.redact.clone(),
            handoff: cx.handoff.clone(),
        };
        if let Some(task) = cx.handoff.as_ref().and_then(|h| h.resumed_task()) {
            // An earlier call left it running: follow it, never call again.
            let end = connection.follow_task_id(task, &watch()).await;
            return self.task_ended(remote, end);
        }
        // Kept for a 2025-11-25 server that refuses the plain call.
        let request = connection.call(remote, arguments.clone());
        let answer = match request_timeout {
            Some(limit) => match tokio::time::timeout(limit, request).await {
                Ok(answer) => answer,
                Err(_) => return Err(self.request_timed_out(remote, limit)),
            },
            None => request.await,
        };
        let refused = match &answer {
            Ok(CallToolResponse::Complete(result)) => refused_as_not_a_task(Ok(result)),
            Err(e) => refused_as_not_a_task(Err(e)),
            Ok(_) => false,
        };
        if refused {
            // Refused before it ran: the tool must run as a task.
            let end = connection.call_as_task(remote, arguments, &watch()).await;
            return self.task_ended(remote, end);
        }
        match answer {
            Ok(CallToolResponse::Complete(result)) => {
                output::output_of(server, result, self.plan.max_result_bytes)
            }
            Ok(CallToolResponse::Task(created)) => {
                let end = connection.follow_task(created.task, &watch()).await;
                self.task_ended(remote, end)
            }
            Ok(CallToolResponse::InputRequired(_)) => Err(ToolError::failed(format!(
                "MCP server `{server}` asks for input before it answers `{remote}`, which toolhost cannot give an upstream yet"
            ))),
            Ok(_) => Err(ToolError::failed(format!(
                "MCP server `{server}` answered `{remote}` with a kind of result toolhost does not know"
            ))),
            Err(e) => Err(self.failure(e)),
        }
    }

    /// What the end of a call the server ran as a task becomes.
    fn task_ended(&self, remote: &str, end: TaskEnd) -> Result<ToolOutput, ToolError> {
        let server = &self.plan.name;
        let secrets = &self.plan.bounds.redact;
        match end {
            TaskEnd::Completed(result) => {
                output::output_of(server, result, self.plan.max_result_bytes)
            }
            TaskEnd::Failed(e) => Err(self.failure(ServiceError::McpError(e))),
            TaskEnd::Cancelled(message) => Err(ToolError::failed(format!(
                "MCP server `{server}` cancelled the task running `{remote}`{}",
                message.map_or_else(String::new, |m| format!(
                    ": {}",
                    crate::text::untrusted(&secrets.redact(&m), 512)
                ))
            ))),
            TaskEnd::InputRequired => Err(ToolError::failed(format!(
                "MCP server `{server}`'s task running `{remote}` asks for input, which toolhost cannot give an upstream's task yet; the task was cancelled"
            ))),
            TaskEnd::Malformed(what) => Err(ToolError::failed(format!(
                "MCP server `{server}` answered `{remote}` with a task that is not valid ({})",
                crate::text::untrusted(&secrets.redact(&what), 512)
            ))),
            TaskEnd::Poll(e) => Err(self.failure(e)),
            TaskEnd::PollTimeout(limit) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server `{server}` did not answer a poll of the task running `{remote}` within {} ms (`exec.timeout_ms` in its [[mcp]] declaration); the task was cancelled",
                    limit.as_millis()
                ),
            )),
        }
    }

    /// A request of tool `remote` got no answer within `limit`.
    fn request_timed_out(&self, remote: &str, limit: Duration) -> ToolError {
        let server = &self.plan.name;
        let tasks = if self
            .state()
            .connection
            .as_ref()
            .is_some_and(Upstream::offers_tasks)
        {
            "; it offers tasks, but did not run this call as one"
        } else {
            "; it does not offer MCP tasks, which would let a long call outlive one request"
        };
        ToolError::new(
            ToolErrorKind::Timeout,
            format!(
                "MCP server `{server}` did not answer `{remote}` within {} ms{tasks}: allow it more time (`exec.timeout_ms` in its [[mcp]] declaration) or ask for less work",
                limit.as_millis()
            ),
        )
    }

    /// What a call that failed with `error` becomes: the kind the model
    /// sees, and a message that quotes the server with the secrets sent to
    /// it redacted. A lost connection also wakes the supervisor to
    /// reconnect.
    fn failure(&self, error: ServiceError) -> ToolError {
        let server = &self.plan.name;
        // Redacted before a cut, so that no part of a secret survives it.
        let secrets = &self.plan.bounds.redact;
        match error {
            ServiceError::McpError(e) if crate::mcp::too_large(&e).is_some() => {
                self.too_large(crate::mcp::too_large(&e).map_or(0, |t| t.cap))
            }
            ServiceError::McpError(e) => {
                // JSON-RPC "invalid params": the server refused the input.
                let kind = if e.code.0 == -32602 {
                    ToolErrorKind::InvalidInput
                } else {
                    ToolErrorKind::ToolFailed
                };
                ToolError::new(
                    kind,
                    format!(
                        "MCP server `{server}` refused the call: {}",
                        crate::text::clip(&secrets.redact(&e.message), 4096)
                    ),
                )
            }
            ServiceError::TransportSend(e) if http_body_cap(&e).is_some() => {
                self.too_large(http_body_cap(&e).unwrap_or_default())
            }
            e @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed) => {
                self.lost.notify_one();
                ToolError::new(
                    ToolErrorKind::Unavailable,
                    format!(
                        "MCP server `{server}` could not be reached ({}); toolhost reconnects with backoff: {}",
                        crate::text::clip(&secrets.redact(&e.to_string()), 512),
                        self.plan.hint
                    ),
                )
            }
            ServiceError::Timeout { timeout } => ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server `{server}` did not answer within {} ms",
                    timeout.as_millis()
                ),
            ),
            e => ToolError::failed(format!(
                "MCP server `{server}`: {}",
                crate::text::clip(&secrets.redact(&e.to_string()), 512)
            )),
        }
    }

    /// The server's answer was over `cap`, the most one message may have.
    fn too_large(&self, cap: impl std::fmt::Display) -> ToolError {
        ToolError::new(
            ToolErrorKind::OutputTooLarge,
            format!(
                "MCP server `{}` answered with more than {cap} bytes, the most one message may have (its results may have {} bytes, `max_result_kb`); ask the tool for less",
                self.plan.name, self.plan.max_result_bytes
            ),
        )
    }
}

/// The cap an HTTP answer went over, if that is why sending failed (the
/// request itself went out; its answer was too large to read).
fn http_body_cap(error: &rmcp::transport::DynamicTransportError) -> Option<usize> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()?
    {
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Some(*max_size),
        _ => None,
    }
}
