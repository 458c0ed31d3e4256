//! The real peers of the observability tests, on loopback: Debian's
//! Prometheus (scraping `toolhost serve --http`) and nginx (balancing
//! several), both installed by `.ci/install-guest-toolchains.sh telemetry`,
//! and an OTLP/HTTP collector that keeps the spans it is sent.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::{Value, json};

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_until_listening(address: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(address).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on {address} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.1 exchange on a connection of its own: the status and the
/// body (not chunked: the servers asked here answer with a length).
pub fn http(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let (status, _, body) = http_exchange(address, method, path, headers, body);
    (status, body)
}

/// As [`http`], with the response's head (status line and headers) too.
pub fn http_exchange(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let response = String::from_utf8_lossy(&bytes).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head.to_owned(), body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            out.push_str(&after[..size.min(after.len())]);
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// The JSON-RPC answer in a body: JSON, or an event stream's `data:` line.
pub fn json_rpc_answer(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body.trim()) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body:?}"))
}

/// `tools/call` of the stateless 2026-07-28 revision (no session), with
/// `meta` added to the request's `_meta` and `headers` to the request.
/// Returns the HTTP status and the JSON-RPC answer.
pub fn stateless_call(
    address: &str,
    tool: &str,
    arguments: Value,
    meta: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut all_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "telemetry-test", "version": "0"},
    });
    if let (Some(all), Some(extra)) = (all_meta.as_object_mut(), meta.as_object()) {
        all.extend(extra.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": all_meta}})
    .to_string();
    let mut all_headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    all_headers.extend_from_slice(headers);
    let (status, body) = http(address, "POST", "/mcp", &all_headers, &body);
    if status != 200 {
        return (status, Value::String(body));
    }
    (status, json_rpc_answer(&body))
}

/// A Prometheus server scraping `toolhost` targets every second; stopped
/// when dropped.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    _dir: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

/// One scrape job.
#[derive(Debug, Clone)]
pub struct ScrapeJob {
    /// The `job` label.
    pub name: String,
    /// `HOST:PORT` of each target.
    pub targets: Vec<String>,
    /// A bearer token to send, if the targets want one.
    pub bearer: Option<String>,
}

/// Debian's Prometheus binary.
const PROMETHEUS_BIN: &str = "/usr/bin/prometheus";

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Start one scraping `jobs` (1 s interval) with storage in a temp dir.
    pub fn start(jobs: &[ScrapeJob]) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let address = format!("127.0.0.1:{}", free_port());
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for job in jobs {
            config.push_str(&format!("  - job_name: {}\n", job.name));
            if let Some(token) = &job.bearer {
                config.push_str(&format!("    authorization:\n      credentials: {token}\n"));
            }
            let targets: Vec<String> = job.targets.iter().map(|t| format!("'{t}'")).collect();
            config.push_str(&format!(
                "    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ));
        }
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).expect("write the Prometheus config");
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("a log file");
        let child = Command::new(PROMETHEUS_BIN)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {PROMETHEUS_BIN} ({e}): install it with \
                     .ci/install-guest-toolchains.sh telemetry (Debian package prometheus)"
                )
            });
        wait_until_listening(&address, "Prometheus");
        // It listens before its storage is open, answering 503 until then.
        let deadline = Instant::now() + Duration::from_secs(60);
        while http(&address, "GET", "/-/ready", &[], "").0 != 200 {
            assert!(
                Instant::now() < deadline,
                "Prometheus on {address} was not ready within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            _dir: dir,
            address,
        }
    }

    /// An instant query: each series' labels and value.
    pub fn query(&self, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let (status, body) = http(&self.address, "GET", &path, &[], "");
        assert_eq!(status, 200, "{promql}: {body}");
        let answer: Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
        let result = answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        result
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                let value = series["value"][1]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN);
                (labels, value)
            })
            .collect()
    }

    /// The one value of `promql` once `done` holds for it, within 60 s.
    pub fn wait_for(&self, promql: &str, done: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let value = self.query(promql).first().map(|(_, v)| *v);
            if let Some(value) = value
                && done(value)
            {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus never had the expected value of {promql} (last: {value:?})"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How nginx spreads requests over its upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Round robin, no affinity (for `serve --stateless`).
    RoundRobin,
    /// Per MCP session, as docs/deploy.md configures open-source nginx: a
    /// request without `Mcp-Session-Id` (an `initialize`) round robin; one
    /// with it hashed on it, and passed on to the next process when the
    /// first does not know the session (404).
    SessionAffinity,
}

/// nginx in front of `upstreams`, as the current user, with its files in a
/// temp dir; stopped when dropped.
#[derive(Debug)]
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// Start it; returns once it listens.
    pub fn start(upstreams: &[String], balance: Balance) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let d = dir.path().display();
        let address = format!("127.0.0.1:{}", free_port());
        let servers: String = upstreams
            .iter()
            .map(|u| format!("    server {u};\n"))
            .collect();
        let (upstream_blocks, pass) = match balance {
            Balance::RoundRobin => (
                format!("  upstream toolhost {{\n{servers}    keepalive 8;\n  }}\n"),
                "proxy_pass http://toolhost;".to_owned(),
            ),
            Balance::SessionAffinity => (
                format!(
                    "  upstream toolhost_new {{\n{servers}    keepalive 8;\n  }}\n\
                     upstream toolhost_session {{\n    hash $http_mcp_session_id consistent;\n{servers}    keepalive 8;\n  }}\n\
                     map $http_mcp_session_id $toolhost_pool {{\n    \"\" toolhost_new;\n    default toolhost_session;\n  }}\n"
                ),
                "proxy_pass http://$toolhost_pool;\n      proxy_next_upstream error timeout http_404 non_idempotent;".to_owned(),
            ),
        };
        let config = format!(
            "worker_processes 1;\nerror_log {d}/error.log warn;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n\
             client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             {upstream_blocks}\
             server {{\n    listen {address};\n    location / {{\n      {pass}\n\
             proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
             proxy_set_header Host $http_host;\n      proxy_buffering off;\n    }}\n  }}\n}}\n"
        );
        let config_file = dir.path().join("nginx.conf");
        std::fs::write(&config_file, config).expect("write the nginx config");
        let child = Command::new("/usr/sbin/nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&config_file)
            .args(["-e", &format!("{d}/error.log")])
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nginx ({e}): install it with \
                     .ci/install-guest-toolchains.sh telemetry (Debian package nginx-light)"
                )
            });
        let nginx = Self {
            child,
            dir,
            address,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&nginx.address).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen on {} within 30 s: {}",
                nginx.address,
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    /// Its error log, for a failure message.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

/// A span as the collector received it.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// The trace id, as 32 hex digits.
    pub trace_id: String,
    /// The span id, as 16 hex digits.
    pub span_id: String,
    /// The parent's span id, empty for a root.
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// Every attribute, its value as text.
    pub attributes: BTreeMap<String, String>,
    /// `service.name` of the resource that sent it.
    pub service: String,
}

/// An OTLP/HTTP (protobuf) trace receiver on loopback: `POST /v1/traces`.
#[derive(Debug, Clone)]
pub struct Collector {
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    /// `http://127.0.0.1:PORT`, the base URL an exporter is given.
    pub endpoint: String,
}

impl Collector {
    /// Start one; it serves until the test process ends.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve_otlp(stream, &kept));
            }
        });
        Self { spans, endpoint }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().expect("not poisoned").clone()
    }

    /// The spans once `done` holds for them, within 30 s.
    pub fn wait_for(&self, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the collector never received the expected spans; it has: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Answer OTLP requests on one (kept-alive) connection.
fn serve_otlp(stream: TcpStream, kept: &Mutex<Vec<ReceivedSpan>>) {
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if first {
                first = false;
                continue;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if let Ok(request) = ExportTraceServiceRequest::decode(body.as_slice()) {
            kept.lock().expect("not poisoned").extend(received(request));
        }
        // An empty ExportTraceServiceResponse is zero bytes of protobuf.
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

fn received(request: ExportTraceServiceRequest) -> Vec<ReceivedSpan> {
    let mut out = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(|kv| kv.value.as_ref())
            .map(any_value_text)
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                out.push(ReceivedSpan {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| {
                            (
                                kv.key.clone(),
                                kv.value.as_ref().map(any_value_text).unwrap_or_default(),
                            )
                        })
                        .collect(),
                    service: service.clone(),
                });
            }
        }
    }
    out
}

fn any_value_text(value: &opentelemetry_proto::tonic::common::v1::AnyValue) -> String {
    match &value.value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::ArrayValue(array)) => array
            .values
            .iter()
            .map(any_value_text)
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Write `text` as `dir/toolhost.toml` and return its path.
pub fn host_config(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, text).expect("write the host config");
    path
}
