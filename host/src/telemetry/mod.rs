//! Observability: what an operator needs to see which tool is slow, which
//! plugin burns its fuel, how often calls time out, and which model
//! request led to which tool call.
//!
//! - **Metrics** ([`Metrics`]): counters, gauges and histograms in
//!   Prometheus' text format, kept only where a `Metrics` is handed in
//!   ([`Observability::metrics`](crate::tools::Observability::metrics), given
//!   when the registry is built);
//!   the MCP server serves them at `GET /metrics`.
//! - **Traces**: `tracing` spans under [`SPAN_TARGET`], named and
//!   attributed by the OpenTelemetry GenAI semantic conventions: the run
//!   (`invoke_agent`), each model request (`chat {model}`), each tool call
//!   (`execute_tool {name}`, with toolhost's own `toolhost.*` attributes:
//!   plugin, fuel used, memory, the limit hit, the instance, retries). A
//!   subscriber with the `tracing-opentelemetry` layer turns them into
//!   OpenTelemetry spans (the CLI exports them over OTLP when configured);
//!   without one they are disabled callsites and cost nothing. A program
//!   that exports spans hands the registry its tracer too
//!   ([`Observability::tracer`](crate::tools::Observability::tracer)):
//!   `execute_tool`, the one span made per call of a busy server, is then
//!   made with the OpenTelemetry API directly, at a fraction of the cost
//!   of going through `tracing` (the CLI does). A caller's
//!   W3C trace context ([`TraceParent`]) becomes the parent of the call's
//!   span, and REST and MCP requests a call makes carry the trace on.
//!
//! The library installs no subscriber, exporter or global: the program (or
//! the CLI) decides what is recorded and where it goes. Nothing secret or
//! unbounded goes into an attribute: no header values, no API keys; tool
//! inputs and outputs only when asked
//! ([`Observability::span_io`](crate::tools::Observability::span_io)),
//! clipped.

mod call;
mod config;
#[cfg(feature = "otlp")]
mod export;
mod metrics;
mod sharded;
mod trace;

pub(crate) use call::{CallStats, Instance, measured, note_instance, note_usage};
pub use config::{OtlpProtocol, TelemetryConfig};
#[cfg(feature = "otlp")]
pub use export::{ExportError, tracer_provider};
pub(crate) use metrics::ToolMetrics;
pub use metrics::{CONTENT_TYPE, Metrics, UNKNOWN_TOOL};
pub use trace::{SPAN_TARGET, TRACEPARENT, TRACESTATE, TraceParent};
pub(crate) use trace::{clipped, current_w3c};
