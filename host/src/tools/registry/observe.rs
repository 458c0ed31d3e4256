//! A call as the operator sees it: counted in the registry's
//! [`Metrics`] and traced as an `execute_tool {name}` span (OpenTelemetry
//! GenAI conventions), with what the sandbox measured.

use std::borrow::Cow;
use std::time::Instant;

use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use super::super::{CallContext, ToolError, ToolErrorKind, ToolOrigin};
use super::CallReport;
use super::set::ToolSet;
use crate::telemetry::{CallStats, Metrics, SPAN_TARGET, TraceParent, clipped, measured};

/// The most bytes of a name a span attribute keeps (a caller may call any
/// name; registered names are at most 64 bytes, plus a version).
const MAX_NAME: usize = 128;

/// What a registry records about its calls besides its call log.
#[derive(Debug, Clone, Default)]
pub(in crate::tools) struct Observe {
    pub(in crate::tools) metrics: Option<Metrics>,
    /// Make `execute_tool` spans with this tracer, not through `tracing`.
    pub(in crate::tools) tracer: Option<SdkTracer>,
    /// Record inputs and outputs in spans, clipped to this many bytes.
    pub(in crate::tools) span_io: Option<usize>,
}

/// A call's `execute_tool` span, however it is made.
enum CallSpan {
    /// An OpenTelemetry span made with the registry's tracer, as the
    /// active span of this context (which the call runs in, so that REST
    /// and MCP requests it makes carry it on).
    Otel(Context),
    /// A `tracing` span a subscriber (`tracing-opentelemetry`) turns into
    /// an OpenTelemetry one.
    Tracing(tracing::Span),
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
        let span = match &self.observe.tracer {
            Some(tracer) => Some(CallSpan::Otel(self.start_otel(tracer, name, &input, cx))),
            None if tracing::span_enabled!(target: SPAN_TARGET, tracing::Level::INFO) => {
                Some(CallSpan::Tracing(self.open_span(name, &input, cx)))
            }
            None => None,
        };
        if span.is_none() && metrics.is_none() {
            return self.execute_logged(name, input, cx).await;
        }
        let clock = Instant::now();
        let call = self.execute_logged(name, input, cx);
        let (report, stats) = match &span {
            Some(CallSpan::Otel(otel)) => measured(call.with_context(otel.clone())).await,
            Some(CallSpan::Tracing(span)) => measured(call.instrument(span.clone())).await,
            None => measured(call).await,
        };
        if let Some(metrics) = metrics {
            let outcome = match &report.output {
                Ok(_) => "ok",
                Err(e) => e.kind.as_str(),
            };
            let elapsed = clock.elapsed();
            match self.resolve(name) {
                Some((key, _, entry)) => {
                    let series = entry.metrics.get_or_init(|| metrics.tool(Some(key)));
                    metrics.record(series, outcome, report.attempts, elapsed, &stats);
                }
                None => metrics.record_call(None, outcome, report.attempts, elapsed, &stats),
            }
        }
        match span {
            Some(CallSpan::Otel(otel)) => self.end_otel(&otel, &report, &stats),
            Some(CallSpan::Tracing(span)) => self.close_span(&span, &report, &stats),
            None => {}
        }
        report
    }

    /// Where the tool comes from (`toolhost.tool.source`) and its plugin
    /// or MCP server (`toolhost.plugin`), if it is registered.
    fn source(&self, name: &str) -> (Option<&'static str>, Option<String>) {
        match self.get(name).map(|tool| tool.origin()) {
            None => (None, None),
            Some(ToolOrigin::Native) => (Some("native"), None),
            Some(ToolOrigin::Plugin { plugin, .. }) => (Some("plugin"), Some(plugin)),
            Some(ToolOrigin::Rest { .. }) => (Some("rest"), None),
            Some(ToolOrigin::Mcp { server }) => (Some("mcp"), Some(server)),
        }
    }

    /// The call's input as a span attribute, if the operator asked for it.
    fn arguments(&self, input: &Result<Value, ToolError>) -> Option<String> {
        match (self.observe.span_io, input) {
            (Some(max), Ok(input)) => Some(clipped(&input.to_string(), max).to_owned()),
            _ => None,
        }
    }

    /// The call's span made with `tracer`, as the active span of a child
    /// of the caller's context: the caller's trace context if the call
    /// came with one, else the current `tracing` span's, else the current
    /// OpenTelemetry context.
    fn start_otel(
        &self,
        tracer: &SdkTracer,
        name: &str,
        input: &Result<Value, ToolError>,
        cx: &CallContext,
    ) -> Context {
        let parent = match cx
            .trace_parent
            .clone()
            .or_else(|| TraceParent::of(&tracing::Span::current()))
        {
            Some(parent) => parent.into_context(),
            None => Context::current(),
        };
        let name = clipped(name, MAX_NAME);
        let (source, plugin) = self.source(name);
        let mut attributes = Vec::with_capacity(16);
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", name.to_owned()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ]);
        if let Some(id) = &cx.call_id {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.id",
                clipped(id, MAX_NAME).to_owned(),
            ));
        }
        if let Some(arguments) = self.arguments(input) {
            attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments));
        }
        if let Some(source) = source {
            attributes.push(KeyValue::new("toolhost.tool.source", source));
        }
        if let Some(plugin) = plugin {
            attributes.push(KeyValue::new(
                "toolhost.plugin",
                clipped(&plugin, MAX_NAME).to_owned(),
            ));
        }
        let span = tracer
            .span_builder(Cow::Owned(format!("execute_tool {name}")))
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        parent.with_span(span)
    }

    /// What the call measured and how it ended, then the span's end.
    fn end_otel(&self, otel: &Context, report: &CallReport, stats: &CallStats) {
        let span = otel.span();
        if !span.is_recording() {
            // Sampled out: nothing is kept, so nothing to add.
            return;
        }
        let mut attributes = Vec::with_capacity(8);
        if let Some(fuel) = stats.fuel_used {
            attributes.push(KeyValue::new("toolhost.fuel_used", saturating_i64(fuel)));
        }
        if let Some(memory) = stats.memory_bytes {
            attributes.push(KeyValue::new(
                "toolhost.memory_bytes",
                saturating_i64(memory),
            ));
        }
        if let Some(instance) = stats.instance {
            attributes.push(KeyValue::new("toolhost.instance", instance.as_str()));
        }
        if report.attempts > 1 {
            attributes.push(KeyValue::new(
                "toolhost.retries",
                i64::from(report.attempts - 1),
            ));
        }
        match &report.output {
            Ok(output) => {
                if let Some(max) = self.observe.span_io {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.call.result",
                        clipped(&output.to_string(), max).to_owned(),
                    ));
                }
            }
            Err(e) => {
                attributes.push(KeyValue::new("error.type", e.kind.as_str()));
                if let Some(limit) = limit_hit(e.kind) {
                    attributes.push(KeyValue::new("toolhost.limit", limit));
                }
                if let Some(max) = self.observe.span_io {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.call.result",
                        clipped(&e.to_string(), max).to_owned(),
                    ));
                }
                span.set_status(Status::error(""));
            }
        }
        span.set_attributes(attributes);
        span.end();
    }

    /// The call's span, with everything known before it runs given at
    /// once: each later `record` is a dispatch through every layer.
    fn open_span(
        &self,
        name: &str,
        input: &Result<Value, ToolError>,
        cx: &CallContext,
    ) -> tracing::Span {
        let (source, plugin) = self.source(name);
        let arguments = self.arguments(input);
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

/// A count as an OpenTelemetry integer (which is signed).
fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
    use serde_json::json;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;
    use crate::tools::{NativeTool, ToolRegistry};

    /// Keeps what it is handed.
    #[derive(Debug, Clone, Default)]
    struct Kept(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Kept {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().unwrap().extend(batch);
            Ok(())
        }
    }

    const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn registry() -> ToolRegistry {
        let registry = ToolRegistry::new();
        registry
            .register(NativeTool::new(
                "echo",
                "Echoes.",
                json!({"type": "object"}),
                |input| async move { Ok(input) },
            ))
            .unwrap();
        registry
            .register(NativeTool::new(
                "boom",
                "Fails.",
                json!({"type": "object"}),
                |_| async move { Err::<Value, _>(ToolError::new(ToolErrorKind::Timeout, "too slow")) },
            ))
            .unwrap();
        // What a REST or MCP request made during the call would carry.
        registry
            .register(NativeTool::new(
                "onward",
                "Says what it hands on.",
                json!({"type": "object"}),
                |_| async move {
                    Ok(json!(
                        crate::telemetry::current_w3c()
                            .into_iter()
                            .find(|(key, _)| *key == crate::telemetry::TRACEPARENT)
                            .map(|(_, value)| value)
                    ))
                },
            ))
            .unwrap();
        registry
    }

    fn cx(id: &str) -> CallContext {
        CallContext {
            call_id: Some(id.to_owned()),
            trace_parent: TraceParent::from_w3c(CALLER, None),
            ..CallContext::default()
        }
    }

    /// Three calls (one fails, one reports what it hands on), traced one
    /// way or the other; the spans and what `onward` handed on.
    async fn traced(direct: bool) -> (Vec<SpanData>, serde_json::Value) {
        let kept = Kept::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(kept.clone())
            .build();
        let registry = registry();
        let _subscriber = if direct {
            registry.set_tracer(Some(provider.tracer("toolhost")));
            None
        } else {
            // As the CLI's layer is set up.
            let layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("toolhost"))
                .with_location(false)
                .with_threads(false)
                .with_target(false)
                .with_tracked_inactivity(false)
                .with_context_activation(false);
            Some(tracing::subscriber::set_default(
                tracing_subscriber::registry().with(layer),
            ))
        };
        assert_eq!(
            registry
                .call("echo", r#"{"a":1}"#, &cx("call_1"))
                .await
                .output,
            Ok(json!({"a": 1}))
        );
        assert!(
            registry
                .call("boom", "{}", &cx("call_2"))
                .await
                .output
                .is_err()
        );
        let onward = registry
            .call("onward", "{}", &cx("call_3"))
            .await
            .output
            .unwrap();
        provider.force_flush().unwrap();
        let spans = kept.0.lock().unwrap().clone();
        (spans, onward)
    }

    fn attributes(span: &SpanData) -> BTreeMap<String, String> {
        span.attributes
            .iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn a_tracer_makes_the_same_execute_tool_spans_as_the_tracing_layer() {
        let mut seen = Vec::new();
        for direct in [true, false] {
            let (spans, onward) = traced(direct).await;
            assert_eq!(spans.len(), 3, "direct: {direct}: {spans:#?}");
            let caller = TraceParent::from_w3c(CALLER, None).unwrap().into_context();
            let caller = caller.span().span_context().clone();
            for span in &spans {
                assert_eq!(span.span_context.trace_id(), caller.trace_id());
                assert_eq!(span.parent_span_id, caller.span_id(), "the caller's span");
                assert_ne!(span.span_context.span_id(), SpanId::INVALID);
            }
            let by_name = |name: &str| {
                spans
                    .iter()
                    .find(|s| s.name == name)
                    .unwrap_or_else(|| panic!("no `{name}` span, direct: {direct}: {spans:#?}"))
            };
            let echo = by_name("execute_tool echo");
            let boom = by_name("execute_tool boom");
            let onward_span = by_name("execute_tool onward");
            assert_eq!(echo.status, Status::Unset);
            assert_eq!(boom.status, Status::error(""));
            let (echo, boom) = (attributes(echo), attributes(boom));
            assert_eq!(echo["gen_ai.operation.name"], "execute_tool");
            assert_eq!(echo["gen_ai.tool.name"], "echo");
            assert_eq!(echo["gen_ai.tool.type"], "function");
            assert_eq!(echo["gen_ai.tool.call.id"], "call_1");
            assert_eq!(echo["toolhost.tool.source"], "native");
            assert!(!echo.contains_key("error.type"), "{echo:?}");
            assert!(!echo.contains_key("gen_ai.tool.call.arguments"), "{echo:?}");
            assert_eq!(boom["error.type"], "timeout");
            assert_eq!(boom["toolhost.limit"], "timeout");
            // A request the call makes continues the call's own span.
            let handed = onward.as_str().expect("a traceparent was handed on");
            assert_eq!(
                handed,
                format!(
                    "00-{}-{}-01",
                    onward_span.span_context.trace_id(),
                    onward_span.span_context.span_id()
                )
            );
            seen.push((echo, boom));
        }
        assert_eq!(seen[0], seen[1], "the same attributes either way");
    }

    #[tokio::test]
    async fn without_a_tracer_or_a_subscriber_no_span_is_made_and_nothing_handed_on() {
        let registry = registry();
        let onward = registry
            .call("onward", "{}", &cx("call_1"))
            .await
            .output
            .unwrap();
        assert_eq!(onward, serde_json::Value::Null);
    }

    #[tokio::test]
    async fn calls_count_in_the_metrics_the_registry_has_at_each_call() {
        // A tool keeps its series after its first counted call; a later
        // `Metrics` must still get every call, and the first no more.
        let registry = registry();
        let first = Metrics::new();
        registry.set_metrics(Some(first.clone()));
        registry
            .call("echo", "{}", &cx("call_1"))
            .await
            .output
            .unwrap();
        registry
            .call("echo", "{}", &cx("call_2"))
            .await
            .output
            .unwrap();
        let _ = registry.call("boom", "{}", &cx("call_3")).await;
        let second = Metrics::new();
        registry.set_metrics(Some(second.clone()));
        registry
            .call("echo", "{}", &cx("call_4"))
            .await
            .output
            .unwrap();
        let _ = registry.call("boom", "{}", &cx("call_5")).await;
        let _ = registry.call("nope", "{}", &cx("call_6")).await;
        assert_eq!(first.calls("echo", "ok"), 2);
        assert_eq!(first.calls("boom", "timeout"), 1);
        assert_eq!(second.calls("echo", "ok"), 1);
        assert_eq!(second.calls("boom", "timeout"), 1);
        assert_eq!(
            second.calls(crate::telemetry::UNKNOWN_TOOL, "unknown_tool"),
            1
        );
        let text = first.render();
        assert!(
            text.contains(r#"toolhost_tool_call_duration_seconds_count{tool="echo"} 2"#),
            "{text}"
        );
        // The options of a tool change; its series stay the same.
        let mut options = registry.snapshot().options("echo").unwrap().clone();
        options.retries = 0;
        assert!(registry.set_options("echo", options));
        registry
            .call("echo", "{}", &cx("call_7"))
            .await
            .output
            .unwrap();
        assert_eq!(second.calls("echo", "ok"), 2);
        assert!(
            second
                .render()
                .contains(r#"toolhost_tool_call_duration_seconds_count{tool="echo"} 2"#)
        );
    }
}
