//! Trace context: the caller's (a W3C `traceparent`) continued into the
//! spans of a call, and ours handed on to the services a call reaches.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `tracing` target of every span toolhost makes for OpenTelemetry
/// (`invoke_agent`, `chat {model}`, `execute_tool {name}`). A subscriber
/// that exports traces enables it; a log that does not want span context
/// in its lines leaves it off, and then the spans cost nothing.
pub const SPAN_TARGET: &str = "toolhost::telemetry";

/// The W3C trace context header names (and MCP `_meta` keys, SEP-414).
pub const TRACEPARENT: &str = "traceparent";
/// See [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";

/// A span to continue: the caller's, from a `traceparent`, or one of ours.
#[derive(Debug, Clone)]
pub struct TraceParent(opentelemetry::Context);

impl TraceParent {
    /// The parent a W3C `traceparent` (and `tracestate`) names; `None`
    /// unless it is well-formed.
    ///
    /// ```
    /// use toolhost::telemetry::TraceParent;
    /// let parent = TraceParent::from_w3c("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None);
    /// assert!(parent.is_some());
    /// assert!(TraceParent::from_w3c("not a traceparent", None).is_none());
    /// ```
    pub fn from_w3c(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert(TRACEPARENT.to_owned(), traceparent.to_owned());
        if let Some(state) = tracestate {
            carrier.insert(TRACESTATE.to_owned(), state.to_owned());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        cx.span().span_context().is_valid().then_some(Self(cx))
    }

    /// The span `span` is, as a parent for spans elsewhere; `None` when
    /// no OpenTelemetry layer records it (tracing is off).
    pub fn of(span: &tracing::Span) -> Option<Self> {
        if span.is_disabled() {
            return None;
        }
        let cx = span.context();
        cx.span().span_context().is_valid().then_some(Self(cx))
    }

    /// The `traceparent` (and `tracestate`, if any) that hand this span on.
    pub fn to_w3c(&self) -> Vec<(&'static str, String)> {
        let mut carrier = HashMap::with_capacity(2);
        TraceContextPropagator::new().inject_context(&self.0, &mut carrier);
        [TRACEPARENT, TRACESTATE]
            .into_iter()
            .filter_map(|key| carrier.remove(key).map(|value| (key, value)))
            .collect()
    }

    /// The OpenTelemetry context this parent is.
    pub fn into_context(self) -> opentelemetry::Context {
        self.0
    }

    /// Make `span` a child of this parent (no-op when tracing is off).
    pub(crate) fn adopt(&self, span: &tracing::Span) {
        if !span.is_disabled() {
            let _ = span.set_parent(self.0.clone());
        }
    }
}

/// The headers that hand the current span on to a service a call reaches
/// (none when tracing is off): the active OpenTelemetry span a call runs
/// in (an `execute_tool` span made with a registry's tracer), else the
/// current `tracing` span.
pub(crate) fn current_w3c() -> Vec<(&'static str, String)> {
    let otel = opentelemetry::Context::map_current(|cx| {
        cx.span()
            .span_context()
            .is_valid()
            .then(|| TraceParent(cx.clone()))
    });
    otel.or_else(|| TraceParent::of(&tracing::Span::current()))
        .map_or_else(Vec::new, |p| p.to_w3c())
}

/// Clip `text` to at most `max` bytes (at a character boundary) for a span
/// attribute.
pub(crate) fn clipped(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_w3c_traceparent_is_read_and_written_back_the_same() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::from_w3c(header, Some("vendor=x")).expect("well-formed");
        let written = parent.to_w3c();
        assert!(
            written.contains(&(TRACEPARENT, header.to_owned())),
            "{written:?}"
        );
        assert!(
            written.contains(&(TRACESTATE, "vendor=x".to_owned())),
            "{written:?}"
        );
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::from_w3c(bad, None).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn without_a_tracing_layer_nothing_is_handed_on() {
        assert!(TraceParent::of(&tracing::Span::current()).is_none());
        assert!(current_w3c().is_empty());
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clipped("héllo", 2), "h");
        assert_eq!(clipped("héllo", 3), "hé");
        assert_eq!(clipped("abc", 10), "abc");
    }
}
