//! What `[telemetry]` and the `OTEL_*` environment ask for: the log and
//! the trace export as one `tracing` subscriber.

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use toolhost::config::HostConfig;
use toolhost::telemetry::{SPAN_TARGET, TelemetryConfig};
use tracing_subscriber::filter::{EnvFilter, FilterExt, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use super::PluginArgs;

/// The `[telemetry]` of the host config a command will read, with the
/// `OTEL_*` variables filling in what it leaves unset. Read before the
/// command runs, because the subscriber is set up once, first; a config
/// that does not load is reported by the command itself.
pub(super) fn settings(plugins: Option<&PluginArgs>) -> TelemetryConfig {
    let mut telemetry = plugins
        .and_then(PluginArgs::config_file)
        .and_then(|path| HostConfig::from_file(&path).ok())
        .map(|config| config.telemetry)
        .unwrap_or_default();
    apply_env(&mut telemetry, |name| std::env::var(name).ok());
    telemetry
}

/// OpenTelemetry's standard variables, for what the file leaves unset.
fn apply_env(telemetry: &mut TelemetryConfig, var: impl Fn(&str) -> Option<String>) {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        telemetry.endpoint = None;
        return;
    }
    if telemetry.endpoint.is_none() {
        telemetry.endpoint = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    }
    if telemetry.service_name.is_none() {
        telemetry.service_name = set("OTEL_SERVICE_NAME");
    }
}

/// Log to stderr under `filter`; export spans too when `telemetry` names
/// an endpoint. The provider returned must be shut down before exit, so
/// the last spans go out.
pub(super) fn init(
    filter: EnvFilter,
    ansi: bool,
    telemetry: &TelemetryConfig,
) -> Option<SdkTracerProvider> {
    // What the log shows at most: `log` records of dependencies (wasmtime
    // logs at every store it makes and drops) are forwarded to `tracing`
    // only up to it, however finely the span export listens.
    let log_level = filter.max_level_hint();
    // The log never shows the trace spans (they would prefix every line
    // logged inside a call); they are only for the exporter, and without
    // one their callsites stay off and cost nothing.
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_filter(filter.and(filter_fn(|meta| {
            !(meta.is_span() && meta.target() == SPAN_TARGET)
        })));
    let provider = match toolhost::telemetry::tracer_provider(telemetry) {
        Ok(provider) => provider,
        Err(e) => {
            Registry::default().with(log).init();
            cap_log_records(log_level);
            tracing::warn!(
                "not exporting traces: {}",
                super::ChainDisplay(&e).escaped()
            );
            return None;
        }
    };
    if let Some(provider) = &provider {
        let _ = TRACER.set(provider.tracer("toolhost"));
    }
    let otel = provider.as_ref().map(|provider| {
        // Only what the spans say themselves: no code location, thread,
        // target or busy/idle attributes (each an allocation per span, and
        // the timings two clock reads per poll of an instrumented call),
        // and no OpenTelemetry context attached on every poll (the host
        // reads a span's context from the span: `TraceParent::of`).
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("toolhost"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(Targets::new().with_target(SPAN_TARGET, tracing::Level::TRACE))
    });
    // No `Option` layer: a `None` one counts as wanting every callsite, so
    // the trace spans would be made and recorded on every call for nobody.
    let subscriber = Registry::default().with(log);
    match otel {
        Some(otel) => subscriber.with(otel).init(),
        None => subscriber.init(),
    }
    cap_log_records(log_level);
    provider
}

/// The tracer of the span export, once [`init`] made one.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The tracer a registry makes its `execute_tool` spans with
/// ([`Observability::tracer`](toolhost::tools::Observability::tracer)),
/// when spans are exported: the same spans as through the `tracing` layer,
/// made directly (a tool call is the one span made per request of a busy
/// `serve`).
pub(super) fn tracer() -> Option<SdkTracer> {
    TRACER.get().cloned()
}

/// Forward `log` records only up to `level`: `init` forwards every record
/// the subscriber as a whole might want, and the span export's filter
/// (every level of its own target) would let each `log::trace!` of a
/// dependency be formatted and matched against the log's filter, only to
/// be dropped. Spans never come from `log`.
fn cap_log_records(level: Option<tracing::level_filters::LevelFilter>) {
    use tracing::level_filters::LevelFilter;
    let cap = match level {
        Some(LevelFilter::OFF) => log::LevelFilter::Off,
        Some(LevelFilter::ERROR) => log::LevelFilter::Error,
        Some(LevelFilter::WARN) => log::LevelFilter::Warn,
        Some(LevelFilter::INFO) => log::LevelFilter::Info,
        Some(LevelFilter::DEBUG) => log::LevelFilter::Debug,
        Some(_) | None => log::LevelFilter::Trace,
    };
    log::set_max_level(cap);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_fills_in_what_the_file_leaves_unset() {
        let mut telemetry = TelemetryConfig::default();
        apply_env(
            &mut telemetry,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                ("OTEL_SERVICE_NAME", "agents"),
            ]),
        );
        assert_eq!(telemetry.endpoint.as_deref(), Some("http://collector:4318"));
        assert_eq!(telemetry.service_name.as_deref(), Some("agents"));

        let mut from_file = TelemetryConfig {
            endpoint: Some("http://file:4318".into()),
            ..TelemetryConfig::default()
        };
        apply_env(
            &mut from_file,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]),
        );
        assert_eq!(from_file.endpoint.as_deref(), Some("http://file:4318"));

        apply_env(&mut from_file, env(&[("OTEL_SDK_DISABLED", "true")]));
        assert_eq!(from_file.endpoint, None);
    }
}
