//! One call to a server's tool, and what its answer or failure becomes.

use rmcp::ServiceError;
use serde_json::Value;

use super::{Link, output};
use crate::tools::{ToolError, ToolErrorKind, ToolOutput};

impl Link {
    /// Call the server's tool `remote` with `input`. What comes back (the
    /// output, or an error quoting the server) has the secrets sent to the
    /// server redacted.
    pub(super) async fn call(&self, remote: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let result = self.call_unredacted(remote, input).await;
        self.plan.bounds.redact.redact_output(result)
    }

    async fn call_unredacted(&self, remote: &str, input: Value) -> Result<ToolOutput, ToolError> {
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
        match connection.call(remote, arguments).await {
            Ok(result) => output::output_of(server, result, self.plan.max_result_bytes),
            Err(e) => Err(self.failure(e)),
        }
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
