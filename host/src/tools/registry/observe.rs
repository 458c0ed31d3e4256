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
        let metrics = self.observe.metrics.as_ref();
        let traced = tracing::span_enabled!(target: SPAN_TARGET, tracing::Level::INFO);
        if !traced && metrics.is_none() {
            return self.execute_logged(name, input, cx).await;
        }
        let span = if traced {
            self.open_span(name, &input, cx)
        } else {
            tracing::Span::none()
        };
        let clock = Instant::now();
        let (report, stats) = measured(
            self.execute_logged(name, input, cx)
                .instrument(span.clone()),
        )
        .await;
        if let Some(metrics) = metrics {
            let outcome = match &report.output {
                Ok(_) => "ok",
                Err(e) => e.kind.as_str(),
            };
            let tool = self.resolve(name).map(|(key, _, _)| key);
            metrics.record_call(tool, outcome, report.attempts, clock.elapsed(), &stats);
        }
        if !span.is_disabled() {
            self.close_span(&span, &report, &stats);
        }
        report
    }

    /// The call's span, with everything known before it runs given at
    /// once: each later `record` is a dispatch through every layer.
    fn open_span(
        &self,
        name: &str,
        input: &Result<Value, ToolError>,
        cx: &CallContext,
    ) -> tracing::Span {
        let (source, plugin) = match self.get(name).map(|tool| tool.origin()) {
            None => (None, None),
            Some(ToolOrigin::Native) => (Some("native"), None),
            Some(ToolOrigin::Plugin { plugin, .. }) => (Some("plugin"), Some(plugin)),
            Some(ToolOrigin::Rest { .. }) => (Some("rest"), None),
            Some(ToolOrigin::Mcp { server }) => (Some("mcp"), Some(server)),
        };
        let arguments = match (self.observe.span_io, input) {
            (Some(max), Ok(input)) => Some(clipped(&input.to_string(), max).to_owned()),
            _ => None,
        };
        let span = tracing::info_span!(
            target: SPAN_TARGET,
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", clipped(name, MAX_NAME)),
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = clipped(name, MAX_NAME),
            gen_ai.tool.type = "function",
            gen_ai.tool.call.id = cx.call_id.as_deref().map(|id| clipped(id, MAX_NAME)),
            gen_ai.tool.call.arguments = arguments.as_deref(),
            gen_ai.tool.call.result = Empty,
            error.type = Empty,
            toolhost.tool.source = source,
            toolhost.plugin = plugin.as_deref().map(|p| clipped(p, MAX_NAME)),
            toolhost.fuel_used = Empty,
            toolhost.memory_bytes = Empty,
            toolhost.instance = Empty,
            toolhost.limit = Empty,
            toolhost.retries = Empty,
        );
        if let Some(parent) = &cx.trace_parent {
            parent.adopt(&span);
        }
        span
    }

    /// What the call measured and how it ended, recorded in one dispatch.
    fn close_span(&self, span: &tracing::Span, report: &CallReport, stats: &CallStats) {
        let Some(fields) = span.metadata().map(|meta| meta.fields()) else {
            return;
        };
        let (status, error, limit, result) = match &report.output {
            Ok(output) => (
                None,
                None,
                None,
                self.observe
                    .span_io
                    .map(|max| clipped(&output.to_string(), max).to_owned()),
            ),
            Err(e) => (
                Some("error"),
                Some(e.kind.as_str()),
                limit_hit(e.kind),
                self.observe
                    .span_io
                    .map(|max| clipped(&e.to_string(), max).to_owned()),
            ),
        };
        let instance = stats.instance.map(|i| i.as_str());
        let retries = (report.attempts > 1).then(|| report.attempts - 1);
        let values: [(&str, Option<&dyn tracing::Value>); 8] = [
            ("toolhost.fuel_used", stats.fuel_used.as_ref().map(as_value)),
            (
                "toolhost.memory_bytes",
                stats.memory_bytes.as_ref().map(as_value),
            ),
            ("toolhost.instance", instance.as_ref().map(as_value)),
            ("toolhost.retries", retries.as_ref().map(as_value)),
            ("otel.status_code", status.as_ref().map(as_value)),
            ("error.type", error.as_ref().map(as_value)),
            ("toolhost.limit", limit.as_ref().map(as_value)),
            ("gen_ai.tool.call.result", result.as_ref().map(as_value)),
        ];
        if values.iter().all(|(_, value)| value.is_none()) {
            return;
        }
        let entries = values.map(|(name, value)| (fields.field(name), value));
        let [a, b, c, d, e, f, g, h] = &entries;
        let (Some(a0), Some(b0), Some(c0), Some(d0), Some(e0), Some(f0), Some(g0), Some(h0)) =
            (&a.0, &b.0, &c.0, &d.0, &e.0, &f.0, &g.0, &h.0)
        else {
            return;
        };
        span.record_all(&fields.value_set(&[
            (a0, a.1),
            (b0, b.1),
            (c0, c.1),
            (d0, d.1),
            (e0, e.1),
            (f0, f.1),
            (g0, g.1),
            (h0, h.1),
        ]));
    }
}

fn as_value<T: tracing::Value>(value: &T) -> &dyn tracing::Value {
    value
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
