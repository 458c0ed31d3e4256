//! A call as the operator sees it: counted in the registry's
//! [`Metrics`] and traced as an `execute_tool {name}` span (OpenTelemetry
//! GenAI conventions), with what the sandbox measured.

use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use super::super::{CallContext, ToolError, ToolErrorKind, ToolOrigin};
use super::CallReport;
use super::set::ToolSet;
use crate::telemetry::{CallStats, Metrics, SPAN_TARGET, clipped, measured};

/// The most bytes of a name a span attribute keeps (a caller may call any
/// name; registered names are at most 64 bytes, plus a version).
const MAX_NAME: usize = 128;

/// What a registry records about its calls besides its call log.
#[derive(Debug, Clone, Default)]
pub(in crate::tools) struct Observe {
    pub(in crate::tools) metrics: Option<Metrics>,
    /// Record inputs and outputs in spans, clipped to this many bytes.
    pub(in crate::tools) span_io: Option<usize>,
}

impl ToolSet {
    /// Run the call; count it and trace it where that is on.
    pub(super) async fn execute(
        &self,
        name: &str,
        input: Result<Value, ToolError>,
        cx: &CallContext,
    ) -> CallReport {
        let span = tracing::info_span!(
            target: SPAN_TARGET,
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", clipped(name, MAX_NAME)),
            otel.kind = "internal",
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = clipped(name, MAX_NAME),
            gen_ai.tool.type = "function",
            gen_ai.tool.call.id = Empty,
            gen_ai.tool.call.arguments = Empty,
            gen_ai.tool.call.result = Empty,
            error.type = Empty,
            toolhost.tool.source = Empty,
            toolhost.plugin = Empty,
            toolhost.fuel_used = Empty,
            toolhost.memory_bytes = Empty,
            toolhost.instance = Empty,
            toolhost.limit = Empty,
            toolhost.retries = Empty,
        );
        let metrics = self.observe.metrics.as_ref();
        if span.is_disabled() && metrics.is_none() {
            return self.execute_logged(name, input, cx).await;
        }
        if !span.is_disabled() {
            self.open_span(&span, name, &input, cx);
        }
        let clock = Instant::now();
        let (report, stats) = measured(
            self.execute_logged(name, input, cx)
                .instrument(span.clone()),
        )
        .await;
        let outcome = match &report.output {
            Ok(_) => "ok",
            Err(e) => e.kind.as_str(),
        };
        if let Some(metrics) = metrics {
            let tool = self.resolve(name).map(|(key, _, _)| key);
            metrics.record_call(tool, outcome, report.attempts, clock.elapsed(), &stats);
        }
        if !span.is_disabled() {
            self.close_span(&span, &report, &stats);
        }
        report
    }

    fn open_span(
        &self,
        span: &tracing::Span,
        name: &str,
        input: &Result<Value, ToolError>,
        cx: &CallContext,
    ) {
        if let Some(parent) = &cx.trace_parent {
            parent.adopt(span);
        }
        if let Some(id) = &cx.call_id {
            span.record("gen_ai.tool.call.id", clipped(id, MAX_NAME));
        }
        if let Some(tool) = self.get(name) {
            match tool.origin() {
                ToolOrigin::Native => {
                    span.record("toolhost.tool.source", "native");
                }
                ToolOrigin::Plugin { plugin, .. } => {
                    span.record("toolhost.tool.source", "plugin");
                    span.record("toolhost.plugin", clipped(&plugin, MAX_NAME));
                }
                ToolOrigin::Rest { .. } => {
                    span.record("toolhost.tool.source", "rest");
                }
                ToolOrigin::Mcp { server } => {
                    span.record("toolhost.tool.source", "mcp");
                    span.record("toolhost.plugin", clipped(&server, MAX_NAME));
                }
            }
        }
        if let (Some(max), Ok(input)) = (self.observe.span_io, input) {
            span.record(
                "gen_ai.tool.call.arguments",
                clipped(&input.to_string(), max),
            );
        }
    }

    fn close_span(&self, span: &tracing::Span, report: &CallReport, stats: &CallStats) {
        if let Some(fuel) = stats.fuel_used {
            span.record("toolhost.fuel_used", fuel);
        }
        if let Some(memory) = stats.memory_bytes {
            span.record("toolhost.memory_bytes", memory);
        }
        if let Some(instance) = stats.instance {
            span.record("toolhost.instance", instance.as_str());
        }
        if report.attempts > 1 {
            span.record("toolhost.retries", report.attempts - 1);
        }
        match &report.output {
            Ok(output) => {
                if let Some(max) = self.observe.span_io {
                    span.record("gen_ai.tool.call.result", clipped(&output.to_string(), max));
                }
            }
            Err(e) => {
                span.record("otel.status_code", "error");
                span.record("error.type", e.kind.as_str());
                if let Some(limit) = limit_hit(e.kind) {
                    span.record("toolhost.limit", limit);
                }
                if let Some(max) = self.observe.span_io {
                    span.record("gen_ai.tool.call.result", clipped(&e.to_string(), max));
                }
            }
        }
    }
}

/// The limit a failure of `kind` hit, if it was one.
fn limit_hit(kind: ToolErrorKind) -> Option<&'static str> {
    match kind {
        ToolErrorKind::Timeout => Some("timeout"),
        ToolErrorKind::OutOfFuel => Some("fuel"),
        ToolErrorKind::MemoryLimit => Some("memory"),
        ToolErrorKind::OutputTooLarge => Some("output"),
        _ => None,
    }
}
