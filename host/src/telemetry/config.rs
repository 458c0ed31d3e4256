//! `[telemetry]`: where traces go and what is recorded.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

/// What toolhost records about its work, and where traces go
/// (`[telemetry]`). Every default: no traces exported, metrics counted
/// (served by `toolhost serve --http` at `/metrics`), every trace sampled
/// once exporting, tool inputs and outputs never recorded.
///
/// ```toml
/// [telemetry]
/// endpoint = "http://127.0.0.1:4318"   # an OTLP/HTTP collector; traces go to /v1/traces
/// protocol = "http/protobuf"
/// service_name = "toolhost"
/// sample_percent = 100                   # of traces that start here; a caller's decision is kept
/// metrics = true
/// metrics_addr = "127.0.0.1:9464"        # /metrics on an address of its own (no token)
/// record_io_bytes = 0                    # > 0: tool inputs and outputs in spans, clipped
/// shutdown_timeout_ms = 1000             # at exit, the last spans' export waits at most this
/// ```
///
/// The CLI also reads `OTEL_EXPORTER_OTLP_ENDPOINT` and
/// `OTEL_SERVICE_NAME` for what the file leaves unset, and
/// `OTEL_SDK_DISABLED=true` turns exporting off; the library reads no
/// environment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP endpoint's base URL (`http://host:4318`); traces are
    /// posted to `/v1/traces` under it. `None`: no traces exported.
    pub endpoint: Option<String>,
    /// The OTLP protocol: only `http/protobuf` is built in.
    pub protocol: OtlpProtocol,
    /// `service.name` of the exported spans. Default `toolhost`.
    pub service_name: Option<String>,
    /// Percent (0 to 100) of the traces that start here to record; a
    /// caller's `traceparent` decides for its own trace. Default 100.
    pub sample_percent: u8,
    /// Count metrics (calls, latency, fuel, memory, instances, sessions,
    /// HTTP requests). Default on; `serve --http` serves them.
    pub metrics: bool,
    /// Serve `/metrics` on this address instead of the MCP server's own
    /// (where it needs the MCP bearer token, if one is set).
    pub metrics_addr: Option<SocketAddr>,
    /// Record tool inputs and outputs in `execute_tool` spans, clipped to
    /// this many bytes; 0 (the default) never records them: they may hold
    /// whatever the user or a tool handled.
    pub record_io_bytes: usize,
    /// How long, at the end of a command (or of `serve`, where
    /// `--shutdown-grace` caps it too), the export of the last spans may
    /// hold the process before it exits anyway, those spans lost. Default
    /// 1000 ms: a collector that accepts and never answers delays an exit
    /// by at most this.
    pub shutdown_timeout_ms: u64,
}

impl TelemetryConfig {
    /// [`shutdown_timeout_ms`](Self::shutdown_timeout_ms) as a duration.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            protocol: OtlpProtocol::default(),
            service_name: None,
            sample_percent: 100,
            metrics: true,
            metrics_addr: None,
            record_io_bytes: 0,
            shutdown_timeout_ms: 1000,
        }
    }
}

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// OTLP over HTTP, protobuf bodies (port 4318).
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

impl TelemetryConfig {
    /// Check the values; a message naming the key and what to do.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.sample_percent > 100 {
            return Err(format!(
                "`telemetry.sample_percent` = {} is more than 100; give a percentage",
                self.sample_percent
            ));
        }
        if let Some(endpoint) = &self.endpoint {
            let url = reqwest::Url::parse(endpoint).map_err(|e| {
                format!(
                    "`telemetry.endpoint` = {endpoint:?} is not a URL ({e}); give the \
                     collector's base URL, e.g. http://127.0.0.1:4318"
                )
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "`telemetry.endpoint` = {endpoint:?} is not http or https; OTLP/HTTP \
                     needs e.g. http://127.0.0.1:4318"
                ));
            }
        }
        Ok(())
    }
}
