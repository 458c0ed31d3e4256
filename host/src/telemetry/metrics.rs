//! [`Metrics`]: the counters, gauges and histograms of one host, rendered
//! in Prometheus' text format.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::registry::Registry;

use super::call::CallStats;
use super::sharded::{ShardedCounter, ShardedHistogram};

/// The media type of [`Metrics::render`]'s text (OpenMetrics 1.0, which
/// Prometheus reads natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The longest tool name kept as a label; a longer one (no registered
/// tool has one) is counted under [`UNKNOWN_TOOL`].
const MAX_TOOL_LABEL: usize = 128;

/// The `tool` label of calls to a name no tool has: callers choose the
/// names they call, and each distinct label is a series Prometheus keeps.
pub const UNKNOWN_TOOL: &str = "(unknown)";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    rule: String,
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

type HistogramFamily<L> = Family<L, ShardedHistogram, fn() -> ShardedHistogram>;

/// What a scrape asks of the parts whose state is read, not counted (the
/// instance pool): each is called before the text is rendered.
type Probe = Box<dyn Fn(&Metrics) + Send + Sync>;

struct Inner {
    /// Tells this host's metrics from another's ([`ToolMetrics::owner`]).
    id: u64,
    registry: Registry,
    calls: Family<OutcomeLabels, ShardedCounter>,
    duration: HistogramFamily<ToolLabels>,
    fuel: HistogramFamily<ToolLabels>,
    memory: HistogramFamily<ToolLabels>,
    retries: Family<ToolLabels, Counter>,
    instances_in_use: Gauge,
    instances_spare: Gauge,
    sessions: Gauge,
    http: Family<StatusLabels, ShardedCounter>,
    /// The `200` series of `http`, looked up once: nearly every request.
    http_ok: std::sync::OnceLock<ShardedCounter>,
    policy: Family<PolicyLabels, Counter>,
    upstream_up: Family<ServerLabels, Gauge>,
    upstream_restarts: Family<ServerLabels, Counter>,
    probes: Mutex<Vec<Probe>>,
}

/// The metrics of one host: calls by tool and outcome, call latency, fuel
/// and memory per call, instances in use and spare, live MCP sessions, HTTP
/// requests by status, upstream MCP servers up and their restarts.
///
/// Nothing is counted until a `Metrics` is handed to the parts that count:
/// a [`ToolRegistry`](crate::tools::ToolRegistry) counts its calls
/// ([`Observability::metrics`](crate::tools::Observability::metrics)), the MCP
/// server its HTTP requests and sessions, and serves
/// [`render`](Self::render) at `GET /metrics`. Cheap to clone: clones share
/// the counters.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolhost::telemetry::Metrics;
/// use toolhost::tools::{CallContext, NativeTool, Observability, ToolRegistry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let metrics = Metrics::new();
/// let registry = ToolRegistry::new().observed(Observability::new().metrics(metrics.clone()));
/// registry.register(NativeTool::new("echo", "Echoes.", json!({"type": "object"}), |v| async move { Ok(v) }))?;
/// registry.call("echo", "{}", &CallContext::default()).await.output.unwrap();
/// assert_eq!(metrics.calls("echo", "ok"), 1);
/// assert!(metrics.render().contains(r#"toolhost_tool_calls_total{tool="echo",outcome="ok"} 1"#));
/// # Ok::<_, toolhost::tools::RegistryError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn latency_histogram() -> ShardedHistogram {
    // 100 µs to ~100 s.
    ShardedHistogram::new(exponential_buckets(0.0001, 2.5, 16))
}

fn fuel_histogram() -> ShardedHistogram {
    // 10 thousand to 100 billion instructions' worth.
    ShardedHistogram::new(exponential_buckets(1e4, 10.0, 8))
}

fn memory_histogram() -> ShardedHistogram {
    // 64 KiB (one page) to 4 GiB.
    ShardedHistogram::new(exponential_buckets(65536.0, 4.0, 9))
}

/// One tool's series of a [`Metrics`], looked up once: a registry keeps
/// them with the tool, so that counting a call takes no lock and makes no
/// label. Errors and retries (rarer) are looked up per call.
#[derive(Clone, Debug)]
pub(crate) struct ToolMetrics {
    /// The [`Metrics`] these series belong to.
    owner: u64,
    /// The `tool` label.
    tool: String,
    duration: ShardedHistogram,
    fuel: ShardedHistogram,
    memory: ShardedHistogram,
    ok: ShardedCounter,
}

impl Metrics {
    /// Every metric at zero.
    // One table: each metric, its help text, registered in turn; reads best whole.
    pub fn new() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let mut registry = Registry::with_prefix("toolhost");
        let calls = Family::<OutcomeLabels, ShardedCounter>::default();
        registry.register(
            "tool_calls",
            "Tool calls, by tool and outcome (ok, or the error kind: timeout, out_of_fuel, ...)",
            calls.clone(),
        );
        let duration: HistogramFamily<ToolLabels> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls took, retries included",
            duration.clone(),
        );
        let fuel: HistogramFamily<ToolLabels> = Family::new_with_constructor(fuel_histogram);
        registry.register(
            "tool_call_fuel_used",
            "Fuel (WebAssembly instructions' worth) a plugin's call used",
            fuel.clone(),
        );
        let memory: HistogramFamily<ToolLabels> = Family::new_with_constructor(memory_histogram);
        registry.register(
            "tool_call_memory_bytes",
            "Linear memory a plugin's instance held at the end of a call",
            memory.clone(),
        );
        let retries = Family::<ToolLabels, Counter>::default();
        registry.register(
            "tool_call_retries",
            "Attempts past the first, by tool",
            retries.clone(),
        );
        let instances_in_use = Gauge::default();
        registry.register(
            "instances_in_use",
            "Instance slots held: calls running, sessions and spare instances",
            instances_in_use.clone(),
        );
        let instances_spare = Gauge::default();
        registry.register(
            "instances_spare",
            "Fresh instances made ahead of time, waiting for a call",
            instances_spare.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "mcp_sessions",
            "Live MCP sessions of the HTTP server",
            sessions.clone(),
        );
        let http = Family::<StatusLabels, ShardedCounter>::default();
        registry.register(
            "http_requests",
            "HTTP requests the MCP server answered, by status",
            http.clone(),
        );
        let policy = Family::<PolicyLabels, Counter>::default();
        registry.register(
            "policy_decisions",
            "Tool calls the MCP server's access policy decided on, by rule and decision \
             (allowed, or why not: no_rule, tool, rate_limited, quota, busy)",
            policy.clone(),
        );
        let upstream_up = Family::<ServerLabels, Gauge>::default();
        registry.register(
            "upstream_mcp_up",
            "Whether an upstream MCP server ([[mcp]]) is connected (1) or not (0)",
            upstream_up.clone(),
        );
        let upstream_restarts = Family::<ServerLabels, Counter>::default();
        registry.register(
            "upstream_mcp_restarts",
            "Times an upstream MCP server was started again after it went away",
            upstream_restarts.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                registry,
                calls,
                duration,
                fuel,
                memory,
                retries,
                instances_in_use,
                instances_spare,
                sessions,
                http,
                http_ok: std::sync::OnceLock::new(),
                policy,
                upstream_up,
                upstream_restarts,
                probes: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Everything, in the OpenMetrics text format Prometheus scrapes
    /// ([`CONTENT_TYPE`]). Gauges read from their sources first.
    pub fn render(&self) -> String {
        for probe in self
            .inner
            .probes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            probe(self);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.inner.registry);
        text
    }

    /// Read some gauges from their source on every [`render`](Self::render)
    /// (the instance pool is read, not counted).
    pub fn probe(&self, probe: impl Fn(&Metrics) + Send + Sync + 'static) {
        self.inner
            .probes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(probe));
    }

    /// Count one call of `tool` that ended with `outcome` (`ok` or an
    /// error kind) after `attempts` tries and `elapsed`.
    pub(crate) fn record_call(
        &self,
        tool: Option<&str>,
        outcome: &'static str,
        attempts: u32,
        elapsed: Duration,
        stats: &CallStats,
    ) {
        self.record(&self.tool(tool), outcome, attempts, elapsed, stats);
    }

    /// The series of calls of `tool` (of a name no tool has: `None`), to
    /// keep for [`record`](Self::record).
    pub(crate) fn tool(&self, tool: Option<&str>) -> ToolMetrics {
        let labels = ToolLabels {
            tool: tool_label(tool),
        };
        let ok = self
            .inner
            .calls
            .get_or_create(&OutcomeLabels {
                tool: labels.tool.clone(),
                outcome: "ok".to_owned(),
            })
            .clone();
        ToolMetrics {
            owner: self.inner.id,
            duration: self.inner.duration.get_or_create(&labels).clone(),
            fuel: self.inner.fuel.get_or_create(&labels).clone(),
            memory: self.inner.memory.get_or_create(&labels).clone(),
            ok,
            tool: labels.tool,
        }
    }

    /// As [`record_call`](Self::record_call), on series looked up before
    /// with [`tool`](Self::tool) (of this `Metrics` or another: then they
    /// are looked up again here).
    pub(crate) fn record(
        &self,
        series: &ToolMetrics,
        outcome: &'static str,
        attempts: u32,
        elapsed: Duration,
        stats: &CallStats,
    ) {
        if series.owner != self.inner.id {
            let tool = Some(series.tool.as_str());
            self.record(&self.tool(tool), outcome, attempts, elapsed, stats);
            return;
        }
        series.duration.observe(elapsed.as_secs_f64());
        if let Some(fuel) = stats.fuel_used {
            series.fuel.observe(fuel as f64);
        }
        if let Some(memory) = stats.memory_bytes {
            series.memory.observe(memory as f64);
        }
        if attempts > 1 {
            self.inner
                .retries
                .get_or_create(&ToolLabels {
                    tool: series.tool.clone(),
                })
                .inc_by(u64::from(attempts - 1));
        }
        if outcome == "ok" {
            series.ok.inc();
        } else {
            let labels = OutcomeLabels {
                tool: series.tool.clone(),
                outcome: outcome.to_owned(),
            };
            self.inner.calls.get_or_create(&labels).inc();
        }
    }

    /// How many calls of `tool` ended with `outcome` (`ok` or an error
    /// kind such as `timeout`).
    pub fn calls(&self, tool: &str, outcome: &str) -> u64 {
        self.inner
            .calls
            .get(&OutcomeLabels {
                tool: tool_label(Some(tool)),
                outcome: outcome.to_owned(),
            })
            .map_or(0, |c| c.get())
    }

    /// Set the instance gauges (from a probe).
    pub fn set_instances(&self, in_use: u64, spare: u64) {
        self.inner.instances_in_use.set(saturate(in_use));
        self.inner.instances_spare.set(saturate(spare));
    }

    /// Add `delta` (less than 0: take it away) to the live MCP session
    /// gauge: each HTTP server adds its own sessions as they open and close.
    #[cfg(feature = "server")]
    pub(crate) fn add_sessions(&self, delta: i64) {
        self.inner.sessions.inc_by(delta);
    }

    /// Live MCP sessions, of every HTTP server counting here.
    pub fn sessions(&self) -> u64 {
        u64::try_from(self.inner.sessions.get()).unwrap_or(0)
    }

    /// Count one HTTP request answered with `status`.
    pub fn record_http(&self, status: u16) {
        let counter = |status| {
            self.inner
                .http
                .get_or_create(&StatusLabels { status })
                .clone()
        };
        if status == 200 {
            self.inner.http_ok.get_or_init(|| counter(200)).inc();
        } else {
            counter(status).inc();
        }
    }

    /// Count one decision of the access policy on a call: `decision`
    /// (`allowed`, or why not) under `rule` (empty when no rule matched).
    pub fn record_policy(&self, rule: &str, decision: &str) {
        self.inner
            .policy
            .get_or_create(&PolicyLabels {
                rule: rule.to_owned(),
                decision: decision.to_owned(),
            })
            .inc();
    }

    /// Decisions `decision` of the access policy under `rule`.
    pub fn policy_decisions(&self, rule: &str, decision: &str) -> u64 {
        self.inner
            .policy
            .get(&PolicyLabels {
                rule: rule.to_owned(),
                decision: decision.to_owned(),
            })
            .map_or(0, |c| c.get())
    }

    /// HTTP requests answered with `status`.
    pub fn http_requests(&self, status: u16) -> u64 {
        self.inner
            .http
            .get(&StatusLabels { status })
            .map_or(0, |c| c.get())
    }

    /// Set the state of upstream MCP server `server` (from a probe):
    /// connected or not, and how often it was restarted in all.
    pub fn set_upstream(&self, server: &str, up: bool, restarts: u64) {
        let labels = ServerLabels {
            server: server.to_owned(),
        };
        self.inner
            .upstream_up
            .get_or_create(&labels)
            .set(i64::from(up));
        let counter = self.inner.upstream_restarts.get_or_create(&labels);
        // A counter only goes up: add what is new since the last look.
        counter.inc_by(restarts.saturating_sub(counter.get()));
    }
}

fn saturate(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn tool_label(tool: Option<&str>) -> String {
    match tool {
        Some(tool) if tool.len() <= MAX_TOOL_LABEL => tool.to_owned(),
        _ => UNKNOWN_TOOL.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(fuel: u64, memory: u64) -> CallStats {
        CallStats {
            fuel_used: Some(fuel),
            memory_bytes: Some(memory),
            instance: None,
        }
    }

    #[test]
    fn calls_are_counted_by_tool_and_outcome_with_their_costs() {
        let metrics = Metrics::new();
        let ms = Duration::from_millis(3);
        metrics.record_call(Some("calc"), "ok", 1, ms, &stats(1_000_000, 1 << 20));
        metrics.record_call(Some("calc"), "ok", 1, ms, &stats(2_000_000, 1 << 20));
        metrics.record_call(Some("calc"), "timeout", 3, ms, &CallStats::default());
        assert_eq!(metrics.calls("calc", "ok"), 2);
        assert_eq!(metrics.calls("calc", "timeout"), 1);
        assert_eq!(metrics.calls("calc", "out_of_fuel"), 0);
        let text = metrics.render();
        assert!(
            text.contains(r#"toolhost_tool_calls_total{tool="calc",outcome="ok"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolhost_tool_call_fuel_used_sum{tool="calc"} 3000000"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolhost_tool_call_duration_seconds_count{tool="calc"} 3"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolhost_tool_call_retries_total{tool="calc"} 2"#),
            "{text}"
        );
        // Buckets are cumulative, up to `+Inf`, which equals the count.
        for (le, n) in [
            ("100000.0", 0),
            ("1000000.0", 1),
            ("10000000.0", 2),
            ("+Inf", 2),
        ] {
            let line =
                format!(r#"toolhost_tool_call_fuel_used_bucket{{le="{le}",tool="calc"}} {n}"#);
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn names_no_tool_has_share_one_label() {
        let metrics = Metrics::new();
        let long = "x".repeat(1000);
        metrics.record_call(
            None,
            "unknown_tool",
            0,
            Duration::ZERO,
            &CallStats::default(),
        );
        metrics.record_call(
            Some(&long),
            "unknown_tool",
            0,
            Duration::ZERO,
            &CallStats::default(),
        );
        assert_eq!(metrics.calls(UNKNOWN_TOOL, "unknown_tool"), 2);
        assert!(!metrics.render().contains(&long));
    }

    #[test]
    fn gauges_are_read_from_their_probes_at_each_render() {
        let metrics = Metrics::new();
        let n = Arc::new(std::sync::atomic::AtomicU64::new(3));
        let seen = Arc::clone(&n);
        metrics.probe(move |m| m.set_instances(seen.load(std::sync::atomic::Ordering::Relaxed), 1));
        assert!(metrics.render().contains("toolhost_instances_in_use 3"));
        n.store(5, std::sync::atomic::Ordering::Relaxed);
        assert!(metrics.render().contains("toolhost_instances_in_use 5"));
        metrics.set_upstream("time", true, 2);
        metrics.set_upstream("time", false, 3);
        let text = metrics.render();
        assert!(
            text.contains(r#"toolhost_upstream_mcp_up{server="time"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolhost_upstream_mcp_restarts_total{server="time"} 3"#),
            "{text}"
        );
    }
}
