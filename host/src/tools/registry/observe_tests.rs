//! Tests of `observe.rs`: the spans either way, the metrics a registry
//! is built with.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

use super::*;
use crate::telemetry::Metrics;
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

fn registry_with(observability: Observability) -> ToolRegistry {
    let registry = ToolRegistry::new().observed(observability);
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
    let registry = registry_with(match direct {
        true => Observability::new().tracer(provider.tracer("toolhost")),
        false => Observability::new(),
    });
    if !direct {
        // Register the registry's callsites before our dispatchers exist:
        // a callsite first hit on another test's thread while the interest
        // cache is rebuilt for ours can keep "never" (tracing computes a
        // new callsite's interest from the dispatchers it saw when it
        // started); one registered before is rebuilt with ours.
        let _ = registry.call("echo", "{}", &CallContext::default()).await;
    }
    let _subscriber = if direct {
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
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        // With one live dispatcher, `tracing` works out a callsite's
        // interest and the max level from whichever thread's default
        // asks (another test's has none, and would turn these spans
        // off); with two or more, from every live one, ours included.
        let second = tracing::Dispatch::new(tracing_subscriber::registry());
        tracing::callsite::rebuild_interest_cache();
        Some((guard, second))
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

/// Set in the process [`a_tracer_makes_the_same_execute_tool_spans_as_the_tracing_layer`]
/// runs its checks in.
const ALONE: &str = "TOOLHOST_OBSERVE_TEST_ALONE";

/// `tracing` keeps each callsite's interest in one process-wide cache,
/// which other tests' threads rebuild while this one runs (it once left
/// the tracing layer's spans off in a fresh-clone run, after c601001's
/// mitigation): the checks run alone, in a process of their own (this
/// test binary again, with only this test).
#[test]
fn a_tracer_makes_the_same_execute_tool_spans_as_the_tracing_layer() {
    if std::env::var_os(ALONE).is_some() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        return runtime.block_on(the_same_spans_either_way());
    }
    let module = module_path!();
    let name = format!(
        "{}::a_tracer_makes_the_same_execute_tool_spans_as_the_tracing_layer",
        module.split_once("::").map_or(module, |(_, path)| path)
    );
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name.as_str(), "--exact", "--test-threads", "1"])
        .env(ALONE, "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn the_same_spans_either_way() {
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
    let registry = registry_with(Observability::new());
    let onward = registry
        .call("onward", "{}", &cx("call_1"))
        .await
        .output
        .unwrap();
    assert_eq!(onward, serde_json::Value::Null);
}

#[tokio::test]
async fn calls_count_in_the_metrics_the_registry_was_built_with() {
    let metrics = Metrics::new();
    let registry = registry_with(Observability::new().metrics(metrics.clone()));
    let other = Metrics::new();
    let unobserved = registry_with(Observability::new().metrics(other.clone()));
    for id in ["call_1", "call_2"] {
        registry.call("echo", "{}", &cx(id)).await.output.unwrap();
    }
    let _ = registry.call("boom", "{}", &cx("call_3")).await;
    let _ = registry.call("nope", "{}", &cx("call_4")).await;
    unobserved
        .call("echo", "{}", &cx("call_5"))
        .await
        .output
        .unwrap();
    assert_eq!(metrics.calls("echo", "ok"), 2);
    assert_eq!(metrics.calls("boom", "timeout"), 1);
    assert_eq!(
        metrics.calls(crate::telemetry::UNKNOWN_TOOL, "unknown_tool"),
        1
    );
    assert_eq!(other.calls("echo", "ok"), 1, "each registry its own");
    let text = metrics.render();
    assert!(
        text.contains(r#"toolhost_tool_call_duration_seconds_count{tool="echo"} 2"#),
        "{text}"
    );
    // The options of a tool change; its series stay the same.
    let mut options = registry.snapshot().options("echo").unwrap().clone();
    options.retries = 0;
    assert!(registry.set_options("echo", options));
    registry
        .call("echo", "{}", &cx("call_6"))
        .await
        .output
        .unwrap();
    assert_eq!(metrics.calls("echo", "ok"), 3);
    assert!(
        metrics
            .render()
            .contains(r#"toolhost_tool_call_duration_seconds_count{tool="echo"} 3"#)
    );
    // A registry built without metrics counts nothing anywhere.
    let quiet = registry_with(Observability::new());
    quiet
        .call("echo", "{}", &cx("call_7"))
        .await
        .output
        .unwrap();
    assert!(quiet.metrics().is_none());
    assert_eq!(metrics.calls("echo", "ok"), 3);
}
