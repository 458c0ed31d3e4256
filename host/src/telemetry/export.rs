//! Traces exported over OTLP/HTTP (protobuf), as [`TelemetryConfig`] says
//! (cargo feature `otlp`, on with `cli`).

use std::time::Duration;

use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

use super::config::{OtlpProtocol, TelemetryConfig};

/// How long one export may take before it is given up (the spans of that
/// batch are lost; the host goes on).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why traces cannot be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The HTTP client for the exporter could not be made.
    #[error("cannot make the HTTP client that exports traces")]
    Client(#[source] reqwest::Error),
    /// The exporter rejected its settings (the endpoint, most likely).
    #[error("cannot export traces to {endpoint}; check `telemetry.endpoint`")]
    Exporter {
        /// The URL spans would go to.
        endpoint: String,
        /// What the exporter said.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// A tracer provider that batches spans and posts them to
/// `{endpoint}/v1/traces`, or `None` when `config` names no endpoint. Hand
/// its tracer to `tracing_opentelemetry::layer()`, and call
/// [`SdkTracerProvider::shutdown`] before the process exits so the last
/// batch is sent. Spans go out from a thread of the SDK's own; a slow
/// collector never holds up a call.
///
/// # Errors
///
/// [`ExportError`] when the client or the exporter cannot be made.
pub fn tracer_provider(config: &TelemetryConfig) -> Result<Option<SdkTracerProvider>, ExportError> {
    let Some(endpoint) = &config.endpoint else {
        return Ok(None);
    };
    let endpoint = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let protocol = match config.protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
    };
    // A blocking client must be made (and dropped) off any async runtime;
    // the SDK exports from a thread of its own.
    let client = std::thread::spawn(|| {
        reqwest::blocking::Client::builder()
            .tls_backend_preconfigured((*crate::tls::client_config()).clone())
            .timeout(EXPORT_TIMEOUT)
            .build()
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    .map_err(ExportError::Client)?;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(&endpoint)
        .with_protocol(protocol)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|source| ExportError::Exporter {
            endpoint: endpoint.clone(),
            source,
        })?;
    let ratio = f64::from(config.sample_percent) / 100.0;
    let service = config
        .service_name
        .clone()
        .unwrap_or_else(|| "toolhost".to_owned());
    // `builder_empty`: the resource says what the config says, not what
    // the process environment does.
    let resource = Resource::builder_empty().with_service_name(service).build();
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                ratio,
            ))))
            .with_resource(resource)
            .build(),
    ))
}
