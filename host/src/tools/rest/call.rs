//! One attempt of a REST call: the input becomes a request, the response
//! an output or a [`ToolError`] of the right kind.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value};

use super::decl::{BodyMode, ResponseFormat};
use super::send::{self, Checker, MAX_ERROR_EXCERPT};
use super::template::{UrlTemplate, scalar_text};
use crate::tools::secrets::Secrets;
use crate::tools::{ToolError, ToolErrorKind};

/// Bytes read past a shown excerpt's end, so that a secret the cut would
/// split is still found and redacted.
const REDACT_MARGIN: usize = 4096;

/// Everything a call needs, checked when the tool was built.
pub(super) struct Request {
    pub(super) tool: String,
    pub(super) method: reqwest::Method,
    pub(super) template: UrlTemplate,
    pub(super) query: Vec<String>,
    pub(super) path_params: BTreeSet<String>,
    pub(super) body: BodyMode,
    pub(super) body_fields: Vec<String>,
    /// Constant and secret values; the secret ones are marked sensitive.
    pub(super) headers: HeaderMap,
    pub(super) pointer: String,
    pub(super) format: ResponseFormat,
    pub(super) retry_on_status: Vec<u16>,
    pub(super) fail_on_status: Vec<u16>,
    pub(super) max_bytes: u64,
    pub(super) timeout: Duration,
    pub(super) checker: Arc<Checker>,
    /// The header values sent from the environment: redacted from
    /// everything the endpoint answers.
    pub(super) secrets: Secrets,
    pub(super) client: reqwest::Client,
}

impl Request {
    /// One attempt, within the tool's deadline. Whatever comes back (the
    /// output, or an error quoting the endpoint) has the secrets sent to
    /// it redacted.
    pub(super) async fn run(self: Arc<Self>, input: Value) -> Result<Value, ToolError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.attempt(input)).await {
            Ok(result) => self.secrets.redact_result(result),
            Err(_) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "REST tool `{}` got no complete answer within {} ms (`timeout_ms`)",
                    self.tool,
                    timeout.as_millis()
                ),
            )),
        }
    }

    async fn attempt(&self, input: Value) -> Result<Value, ToolError> {
        let Value::Object(input) = input else {
            return Err(ToolError::invalid_input("the input must be a JSON object"));
        };
        let text = self.template.expand(&input)?;
        let mut url = reqwest::Url::parse(&text).map_err(|e| {
            ToolError::invalid_input(format!("the input makes an invalid URL: {e}"))
        })?;
        self.add_query(&mut url, &input)?;
        // The origin was checked at load and parameters cannot change it;
        // checked again all the same, as every redirect hop is.
        let shown = crate::text::untrusted(url.as_str(), 256);
        if let Some(reason) = self.checker.refusal(&url) {
            return Err(ToolError::new(
                ToolErrorKind::PermissionDenied,
                format!("the request to {shown} was refused: {reason}"),
            ));
        }
        let mut request = self
            .client
            .request(self.method.clone(), url)
            .headers(self.headers.clone());
        if let Some(body) = self.body_of(input) {
            request = request.json(&body);
        }
        // The call's trace goes on to the service (W3C trace context).
        for (key, value) in crate::telemetry::current_w3c() {
            request = request.header(key, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.send_error(&shown, &e))?;
        let status = response.status();
        let final_url = crate::text::untrusted(response.url().as_str(), 256);
        if self.retry_on_status.contains(&status.as_u16()) {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| crate::tools::retry_after::parse_retry_after(v, SystemTime::now()));
            let mut error = ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "{final_url} answered {}: the service asks to try again later{}",
                    status_text(status),
                    match retry_after {
                        Some(after) => format!(" (Retry-After: {} s)", after.as_secs()),
                        None => String::new(),
                    }
                ),
            );
            if let Some(after) = retry_after {
                error = error.with_retry_after(after);
            }
            return Err(error);
        }
        if !status.is_success() || self.fail_on_status.contains(&status.as_u16()) {
            let excerpt = self.excerpt(response).await;
            return Err(ToolError::failed(format!(
                "{final_url} answered {}{excerpt}",
                status_text(status)
            )));
        }
        let body = self.read_body(response, &final_url).await?;
        self.output(&body, &final_url)
    }

    fn add_query(
        &self,
        url: &mut reqwest::Url,
        input: &Map<String, Value>,
    ) -> Result<(), ToolError> {
        let mut pairs = Vec::new();
        for name in &self.query {
            match input.get(name) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        pairs.push((name, scalar_text(name, item)?));
                    }
                }
                Some(value) => pairs.push((name, scalar_text(name, value)?)),
            }
        }
        if !pairs.is_empty() {
            let mut query = url.query_pairs_mut();
            for (name, value) in pairs {
                query.append_pair(name, &value);
            }
        }
        Ok(())
    }

    fn body_of(&self, input: Map<String, Value>) -> Option<Value> {
        match self.body {
            BodyMode::None => None,
            BodyMode::Input => Some(Value::Object(input)),
            BodyMode::Rest => Some(Value::Object(
                input
                    .into_iter()
                    .filter(|(k, _)| !self.path_params.contains(k) && !self.query.contains(k))
                    .collect(),
            )),
            BodyMode::Fields => Some(Value::Object(
                input
                    .into_iter()
                    .filter(|(k, _)| self.body_fields.contains(k))
                    .collect(),
            )),
        }
    }

    /// A failed send as a tool error: refused by the policy, or the
    /// service could not be reached.
    fn send_error(&self, shown: &str, error: &reqwest::Error) -> ToolError {
        if let Some(reason) = send::refusal_in(error) {
            return ToolError::new(
                ToolErrorKind::PermissionDenied,
                format!("the request to {shown} was refused: {reason}"),
            );
        }
        if error.is_timeout() {
            return ToolError::new(
                ToolErrorKind::Timeout,
                format!("the request to {shown} timed out"),
            );
        }
        // The chain says what failed (DNS, connect, TLS); no secret is in
        // it (reqwest quotes the URL, never a header).
        let mut message = format!("the request to {shown} failed: {error}");
        let mut source = std::error::Error::source(error);
        while let Some(e) = source {
            message.push_str(&format!(": {e}"));
            source = e.source();
        }
        ToolError::new(
            ToolErrorKind::Unavailable,
            crate::text::untrusted(&message, 1024),
        )
    }

    /// The start of an error response's body, for the message.
    async fn excerpt(&self, mut response: reqwest::Response) -> String {
        let mut bytes = Vec::new();
        // Read past what is shown, so that a secret across the cut is
        // redacted whole rather than shown in part.
        while bytes.len() < MAX_ERROR_EXCERPT + REDACT_MARGIN {
            match response.chunk().await {
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        let text = self.secrets.redact(&text);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(": {}", crate::text::untrusted(text, MAX_ERROR_EXCERPT))
        }
    }

    /// The whole body, at most `max_bytes`, read as it streams in.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        shown: &str,
    ) -> Result<Vec<u8>, ToolError> {
        let too_large = || {
            ToolError::new(
                ToolErrorKind::OutputTooLarge,
                format!(
                    "the response from {shown} is larger than {} KiB (`max_response_kb`); ask for less (a filter or a smaller page), or raise `max_response_kb`",
                    self.max_bytes >> 10
                ),
            )
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                ToolError::new(
                    ToolErrorKind::Unavailable,
                    format!("reading the response from {shown} failed: {e}"),
                )
            })?;
            let Some(chunk) = chunk else { break };
            if (body.len() + chunk.len()) as u64 > self.max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The output: the body (or the part the pointer names).
    fn output(&self, body: &[u8], shown: &str) -> Result<Value, ToolError> {
        let value = match self.format {
            ResponseFormat::Text => {
                let text = String::from_utf8(body.to_vec()).map_err(|_| {
                    ToolError::new(
                        ToolErrorKind::InvalidOutput,
                        format!("the response from {shown} is not UTF-8 text"),
                    )
                })?;
                return Ok(Value::String(text));
            }
            ResponseFormat::Json if body.iter().all(u8::is_ascii_whitespace) => Value::Null,
            ResponseFormat::Json => serde_json::from_slice(body).map_err(|e| {
                ToolError::new(
                    ToolErrorKind::InvalidOutput,
                    format!(
                        "the response from {shown} is not JSON ({e}); it starts: {} (declare `response_format = \"text\"` for a text API)",
                        crate::text::untrusted(
                            &self.secrets.redact(&String::from_utf8_lossy(
                                &body[..body.len().min(200 + REDACT_MARGIN)]
                            )),
                            200
                        )
                    ),
                )
            })?,
        };
        if self.pointer.is_empty() {
            return Ok(value);
        }
        value.pointer(&self.pointer).cloned().ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::InvalidOutput,
                format!(
                    "the response from {shown} has nothing at `{}` (`response`)",
                    self.pointer
                ),
            )
        })
    }
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}
