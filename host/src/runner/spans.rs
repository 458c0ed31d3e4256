//! The run's spans, named and attributed by the OpenTelemetry GenAI
//! conventions: `invoke_agent` for the run, `chat {model}` for each model
//! request. Each tool call's `execute_tool` span (made by the registry) is
//! a child of the request whose answer asked for it.

use tracing::Span;
use tracing::field::Empty;

use crate::llm::{ChatResponse, FinishReason, LlmError, Provider};
use crate::telemetry::SPAN_TARGET;

use super::outcome::RunOutcome;

/// The span of a whole run.
pub(super) fn run(provider: &dyn Provider, conversation: &str) -> Span {
    let model = provider.model().unwrap_or_default();
    tracing::info_span!(
        target: SPAN_TARGET,
        "invoke_agent",
        otel.name = "invoke_agent toolhost",
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "toolhost",
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = model,
        gen_ai.conversation.id = conversation,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        toolhost.iterations = Empty,
        toolhost.tool_calls = Empty,
        toolhost.stop_reason = Empty,
    )
}

/// Record how a run ended on its span.
pub(super) fn finish_run(span: &Span, outcome: &RunOutcome, failed: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.usage.input_tokens", outcome.usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", outcome.usage.output_tokens);
    span.record("toolhost.iterations", outcome.iterations);
    span.record("toolhost.tool_calls", outcome.tool_calls);
    span.record(
        "toolhost.stop_reason",
        tracing::field::display(&outcome.stop_reason),
    );
    if let Some(kind) = failed {
        span.record("otel.status_code", "error");
        span.record("error.type", kind);
    }
}

/// The span of one model request.
pub(super) fn chat(provider: &dyn Provider) -> Span {
    let model = provider.model().unwrap_or_default();
    tracing::info_span!(
        target: SPAN_TARGET,
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = model,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// Record a model request's answer on its span.
pub(super) fn finish_chat(span: &Span, response: &Result<ChatResponse, LlmError>) {
    if span.is_disabled() {
        return;
    }
    match response {
        Ok(response) => {
            span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
            span.record(
                "gen_ai.response.finish_reasons",
                finish_reason(response.finish_reason),
            );
        }
        Err(e) => {
            span.record("otel.status_code", "error");
            span.record("error.type", error_type(e));
        }
    }
}

/// The conventions' names for finish reasons.
fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other => "other",
    }
}

/// A low-cardinality name for a failed request: the HTTP status, or the
/// kind of failure (never the message, which may quote the provider).
fn error_type(error: &LlmError) -> String {
    match error {
        LlmError::Status { status, .. } => status.to_string(),
        _ => "_OTHER".to_owned(),
    }
}
