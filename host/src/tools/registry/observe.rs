//! A call as the operator sees it: what a registry records about its
//! calls ([`Observability`], fixed when the registry is built), and the
//! call's `execute_tool {name}` span (OpenTelemetry GenAI conventions).
//!
//! One span maker: what a span says is worked out once, in [`Opening`]
//! (known before the call runs) and [`Closing`] (what it measured and how
//! it ended); [`CallSpan`] only hands those to one of two sinks, a tracer
//! of the program's or a `tracing` span.

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use super::super::log::CallLog;
use super::super::{CallContext, ToolError, ToolErrorKind, ToolOrigin};
use crate::telemetry::{CallStats, Metrics, SPAN_TARGET, TraceParent, clipped, measured};

/// The most bytes of a name a span attribute keeps (a caller may call any
/// name; registered names are at most 64 bytes, plus a version).
const MAX_NAME: usize = 128;

/// What a [`ToolRegistry`](super::ToolRegistry) records about its calls,
/// given when it is built ([`ToolRegistry::observed`](super::ToolRegistry::observed))
/// and the same for its whole life: a call log, metrics, and how
/// `execute_tool` spans are made. The default records nothing but the
/// `tracing` spans a subscriber asks for.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use toolhost::telemetry::Metrics;
/// use toolhost::tools::{CallLog, Observability, ToolRegistry};
///
/// let metrics = Metrics::new();
/// let registry = ToolRegistry::new().observed(
///     Observability::new()
///         .log(Arc::new(CallLog::new(100, 64 * 1024)))
///         .metrics(metrics.clone()),
/// );
/// assert!(registry.log().is_some() && registry.metrics().is_some());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Observability {
    pub(super) log: Option<Arc<CallLog>>,
    pub(super) metrics: Option<Metrics>,
    /// Make `execute_tool` spans with this tracer, not through `tracing`.
    pub(super) tracer: Option<SdkTracer>,
    /// Record inputs and outputs in spans, clipped to this many bytes.
    pub(super) span_io: Option<usize>,
}

impl Observability {
    /// Nothing recorded but the `tracing` spans a subscriber asks for.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record every call in `log` ([`CallLog`]).
    #[must_use]
    pub fn log(mut self, log: Arc<CallLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Count every call in `metrics` ([`Metrics`]).
    #[must_use]
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Make each call's `execute_tool {name}` span with `tracer` (from the
    /// program's OpenTelemetry tracer provider) instead of as a `tracing`
    /// span: the same span, attributes and parent, at a fraction of the
    /// cost per call (no `tracing` subscriber in between). Without one,
    /// `execute_tool` is a `tracing` span under
    /// [`SPAN_TARGET`](crate::telemetry::SPAN_TARGET), made only where a
    /// subscriber wants it. Either way the caller's trace context
    /// ([`CallContext::trace_parent`]) is the parent, and REST and MCP
    /// requests the call makes carry the span on.
    #[must_use]
    pub fn tracer(mut self, tracer: SdkTracer) -> Self {
        self.tracer = Some(tracer);
        self
    }

    /// Record tool inputs and outputs in `execute_tool` spans, clipped to
    /// `max_bytes` (by default never: they may hold whatever the user or a
    /// tool handled).
    #[must_use]
    pub fn span_io(mut self, max_bytes: usize) -> Self {
        self.span_io = Some(max_bytes);
        self
    }

    /// The call log, if calls are recorded.
    pub fn call_log(&self) -> Option<&Arc<CallLog>> {
        self.log.as_ref()
    }

    /// The metrics calls are counted in, if any.
    pub fn call_metrics(&self) -> Option<&Metrics> {
        self.metrics.as_ref()
    }
}

/// What a call's span says before the call runs.
pub(super) struct Opening<'a> {
    name: &'a str,
    call_id: Option<&'a str>,
    arguments: Option<String>,
    /// Where the tool comes from (`toolhost.tool.source`).
    source: Option<&'static str>,
    /// Its plugin or MCP server (`toolhost.plugin`).
    plugin: Option<String>,
}

impl<'a> Opening<'a> {
    /// The call of `name` (registered as `origin`, if it is) with `input`.
    pub(super) fn new(
        observe: &Observability,
        name: &'a str,
        origin: Option<ToolOrigin>,
        input: &Result<Value, ToolError>,
        cx: &'a CallContext,
    ) -> Self {
        let (source, plugin) = match origin {
            None => (None, None),
            Some(ToolOrigin::Native) => (Some("native"), None),
            Some(ToolOrigin::Plugin { plugin, .. }) => (Some("plugin"), Some(plugin)),
            Some(ToolOrigin::Rest { .. }) => (Some("rest"), None),
            Some(ToolOrigin::Mcp { server }) => (Some("mcp"), Some(server)),
        };
        let arguments = match (observe.span_io, input) {
            (Some(max), Ok(input)) => Some(clipped(&input.to_string(), max).to_owned()),
            _ => None,
        };
        Self {
            name: clipped(name, MAX_NAME),
            call_id: cx.call_id.as_deref().map(|id| clipped(id, MAX_NAME)),
            arguments,
            source,
            plugin: plugin.map(|plugin| clipped(&plugin, MAX_NAME).to_owned()),
        }
    }
}

/// What a call's span says once the call has ended.
pub(super) struct Closing {
    fuel_used: Option<u64>,
    memory_bytes: Option<u64>,
    instance: Option<&'static str>,
    retries: Option<u32>,
    /// The failure's kind (`error.type`); the span's status is an error.
    error: Option<&'static str>,
    /// The limit the failure hit, if it was one.
    limit: Option<&'static str>,
    /// The output or the error's text, if the operator asked for it.
    result: Option<String>,
}

impl Closing {
    pub(super) fn new(
        observe: &Observability,
        output: &Result<Value, ToolError>,
        attempts: u32,
        stats: &CallStats,
    ) -> Self {
        let (error, limit, result) = match output {
            Ok(output) => (None, None, observe.span_io.map(|max| clip(output, max))),
            Err(e) => (
                Some(e.kind.as_str()),
                limit_hit(e.kind),
                observe.span_io.map(|max| clip(e, max)),
            ),
        };
        Self {
            fuel_used: stats.fuel_used,
            memory_bytes: stats.memory_bytes,
            instance: stats.instance.map(|i| i.as_str()),
            retries: (attempts > 1).then(|| attempts - 1),
            error,
            limit,
            result,
        }
    }
}

fn clip(value: &impl ToString, max: usize) -> String {
    clipped(&value.to_string(), max).to_owned()
}

/// A call's `execute_tool` span, however it is made.
pub(super) enum CallSpan {
    /// An OpenTelemetry span made with the registry's tracer, as the
    /// active span of this context (which the call runs in, so that REST
    /// and MCP requests it makes carry it on).
    Otel(Context),
    /// A `tracing` span a subscriber (`tracing-opentelemetry`) turns into
    /// an OpenTelemetry one.
    Tracing(tracing::Span),
}

impl CallSpan {
    /// Whether a call would get a span: a tracer is set, or a subscriber
    /// wants `execute_tool` spans.
    pub(super) fn wanted(observe: &Observability) -> bool {
        observe.tracer.is_some()
            || tracing::span_enabled!(target: SPAN_TARGET, tracing::Level::INFO)
    }

    /// The call's span, a child of the caller's context: the caller's
    /// trace context if the call came with one, else the current
    /// `tracing` span's, else the current OpenTelemetry context.
    pub(super) fn start(observe: &Observability, opening: &Opening<'_>, cx: &CallContext) -> Self {
        match &observe.tracer {
            Some(tracer) => Self::Otel(start_otel(tracer, opening, cx)),
            None => Self::Tracing(open_span(opening, cx)),
        }
    }

    /// Run `call` inside the span; what it measured, with its output.
    pub(super) async fn run<T>(&self, call: impl Future<Output = T>) -> (T, CallStats) {
        match self {
            Self::Otel(otel) => measured(call.with_context(otel.clone())).await,
            Self::Tracing(span) => measured(call.instrument(span.clone())).await,
        }
    }

    /// What the call measured and how it ended, then the span's end.
    pub(super) fn end(self, closing: &Closing) {
        match self {
            Self::Otel(otel) => end_otel(&otel, closing),
            Self::Tracing(span) => close_span(&span, closing),
        }
    }
}

fn start_otel(tracer: &SdkTracer, opening: &Opening<'_>, cx: &CallContext) -> Context {
    let parent = match cx
        .trace_parent
        .clone()
        .or_else(|| TraceParent::of(&tracing::Span::current()))
    {
        Some(parent) => parent.into_context(),
        None => Context::current(),
    };
    let mut attributes = Vec::with_capacity(16);
    attributes.extend([
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", opening.name.to_owned()),
        KeyValue::new("gen_ai.tool.type", "function"),
    ]);
    if let Some(id) = opening.call_id {
        attributes.push(KeyValue::new("gen_ai.tool.call.id", id.to_owned()));
    }
    if let Some(arguments) = &opening.arguments {
        attributes.push(KeyValue::new(
            "gen_ai.tool.call.arguments",
            arguments.clone(),
        ));
    }
    if let Some(source) = opening.source {
        attributes.push(KeyValue::new("toolhost.tool.source", source));
    }
    if let Some(plugin) = &opening.plugin {
        attributes.push(KeyValue::new("toolhost.plugin", plugin.clone()));
    }
    let span = tracer
        .span_builder(Cow::Owned(format!("execute_tool {}", opening.name)))
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    parent.with_span(span)
}

fn end_otel(otel: &Context, closing: &Closing) {
    let span = otel.span();
    if !span.is_recording() {
        // Sampled out: nothing is kept, so nothing to add.
        return;
    }
    let mut attributes = Vec::with_capacity(8);
    if let Some(fuel) = closing.fuel_used {
        attributes.push(KeyValue::new("toolhost.fuel_used", saturating_i64(fuel)));
    }
    if let Some(memory) = closing.memory_bytes {
        attributes.push(KeyValue::new(
            "toolhost.memory_bytes",
            saturating_i64(memory),
        ));
    }
    if let Some(instance) = closing.instance {
        attributes.push(KeyValue::new("toolhost.instance", instance));
    }
    if let Some(retries) = closing.retries {
        attributes.push(KeyValue::new("toolhost.retries", i64::from(retries)));
    }
    if let Some(error) = closing.error {
        attributes.push(KeyValue::new("error.type", error));
        span.set_status(Status::error(""));
    }
    if let Some(limit) = closing.limit {
        attributes.push(KeyValue::new("toolhost.limit", limit));
    }
    if let Some(result) = &closing.result {
        attributes.push(KeyValue::new("gen_ai.tool.call.result", result.clone()));
    }
    span.set_attributes(attributes);
    span.end();
}

/// The call's `tracing` span, with everything known before it runs given
/// at once: each later `record` is a dispatch through every layer.
fn open_span(opening: &Opening<'_>, cx: &CallContext) -> tracing::Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", opening.name),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = opening.name,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.id = opening.call_id,
        gen_ai.tool.call.arguments = opening.arguments.as_deref(),
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        toolhost.tool.source = opening.source,
        toolhost.plugin = opening.plugin.as_deref(),
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
fn close_span(span: &tracing::Span, closing: &Closing) {
    let Some(fields) = span.metadata().map(|meta| meta.fields()) else {
        return;
    };
    let status = closing.error.map(|_| "error");
    let values: [(&str, Option<&dyn tracing::Value>); 8] = [
        (
            "toolhost.fuel_used",
            closing.fuel_used.as_ref().map(as_value),
        ),
        (
            "toolhost.memory_bytes",
            closing.memory_bytes.as_ref().map(as_value),
        ),
        ("toolhost.instance", closing.instance.as_ref().map(as_value)),
        ("toolhost.retries", closing.retries.as_ref().map(as_value)),
        ("otel.status_code", status.as_ref().map(as_value)),
        ("error.type", closing.error.as_ref().map(as_value)),
        ("toolhost.limit", closing.limit.as_ref().map(as_value)),
        (
            "gen_ai.tool.call.result",
            closing.result.as_ref().map(as_value),
        ),
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
#[path = "observe_tests.rs"]
mod tests;
