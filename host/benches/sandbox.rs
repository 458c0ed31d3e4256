//! Sandbox benchmark: what a tool call costs through the public API, with all
//! limits on, next to a native Rust function doing the same work (the floor).
//!
//! ```sh
//! cargo bench -p toolhost --bench sandbox        # full run, prints a table
//! cargo test  --workspace --bench sandbox        # smoke run (few iterations)
//! # only the per-language rows (fresh Python, JS, C, Go calls, spaced and
//! # back to back, copy-on-write and copied memory), after the native floor:
//! cargo test --workspace --bench sandbox -- --bench --languages
//! # only the contract rows: the same trivial tool as a 0.1 and a 0.2
//! # component, wall and CPU time per call, and the 0.2 / 0.1 ratios:
//! cargo test --workspace --bench sandbox -- --bench --contract
//! # one workload in a loop for 10 s, to run under a profiler:
//! cargo bench -p toolhost --bench sandbox -- --profile stateless|stateful|warm|py_units|...
//! # the same with calls N µs apart (spares made between calls):
//! cargo bench -p toolhost --bench sandbox -- --profile py_units --gap-us 5000
//! # the same with memory images copied into each instance:
//! cargo bench -p toolhost --bench sandbox -- --profile py_units --memory-init copy
//!
//! # scaling: N callers on N worker threads for S seconds each, stateless
//! # (text_stats, a fresh instance per call) and stateful (scratchpad, one
//! # session per caller); calls/s, the ratio to 1 caller, errors by kind:
//! cargo bench -p toolhost --bench sandbox -- --callers 1,2,4,8,16 --seconds 3 [--spares 0]
//! ```
//!
//! On another machine (a many-core one), build here and carry the bench
//! binary with the plugins: `cargo bench -p toolhost --bench sandbox
//! --no-run` prints the binary's path; run it there as `BINARY --bench
//! --callers 1,2,4,8,16 --seconds 3 --plugins DIR` with `DIR` a copy of
//! `target/plugins`.
//!
//! Needs the bundled plugins: it runs `plugins/build.sh rust` if they are
//! missing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::sandbox::MemoryInit;
use toolhost::tools::{CallContext, NativeTool, SessionId, ToolError, ToolRegistry};

struct Scale {
    calls: usize,
    loads: usize,
}

mod common;
mod contract;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let profile = args
        .iter()
        .position(|a| a == "--profile")
        .map(|i| args.get(i + 1).cloned().unwrap_or_default());
    let gap = args
        .iter()
        .position(|a| a == "--gap-us")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_micros);
    let scale = if full {
        Scale {
            calls: 20_000,
            loads: 50,
        }
    } else {
        Scale {
            calls: 50,
            loads: 2,
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let plugins = flag("--plugins").map_or_else(|| root.join("target/plugins"), PathBuf::from);
    if let Some(callers) = flag("--callers") {
        let callers: Vec<usize> = callers
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("--callers takes numbers like 1,2,4")
            })
            .collect();
        let seconds: f64 = flag("--seconds").map_or(3.0, |s| s.parse().expect("--seconds N"));
        let spares: u32 = flag("--spares").map_or(2, |s| s.parse().expect("--spares N"));
        scaling(&plugins, &callers, Duration::from_secs_f64(seconds), spares);
        return;
    }
    let fixtures = plugins.with_file_name("plugins-fixtures");
    common::ensure_rust_plugins(
        &root,
        &[
            &plugins.join("text.wasm"),
            &fixtures.join("bench_v01.wasm"),
            &fixtures.join("bench_v02.wasm"),
        ],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match profile {
        Some(kind) => {
            let memory_init = match flag("--memory-init").as_deref() {
                None | Some("cow") => MemoryInit::Cow,
                Some("copy") => MemoryInit::Copy,
                Some(other) => panic!("--memory-init takes cow or copy, not `{other}`"),
            };
            rt.block_on(profile_loop(&kind, gap, memory_init, &plugins));
        }
        None if args.iter().any(|a| a == "--languages") => {
            rt.block_on(languages_only(&scale, &plugins));
        }
        None if args.iter().any(|a| a == "--contract") => {
            rt.block_on(contract::rows(&fixtures, scale.calls));
        }
        None => rt.block_on(run(&scale, &plugins)),
    }
}

/// Run one workload for 10 s so a profiler sees nothing else.
async fn profile_loop(kind: &str, gap: Duration, memory_init: MemoryInit, plugins: &Path) {
    // Kept between runs: big guests take seconds to compile.
    let cache = plugins.parent().unwrap().join("bench-cache");
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(cache),
        memory_init,
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new();
    let mut names = vec!["text", "scratchpad"];
    let language = languages().into_iter().find(|l| l.1 == kind);
    if let Some((_, plugin, _, _)) = &language {
        names.push(plugin);
    }
    common::register_plugins(&host, plugins, &names, &registry).await;
    let (tool, input, cx) = match kind {
        _ if language.is_some() => {
            let (_, _, tool, input) = language.unwrap();
            (tool, input, CallContext::default())
        }
        "stateless" => (
            "text_stats",
            json!({"text": "the quick brown fox"}),
            CallContext::default(),
        ),
        "stateful" => (
            "scratchpad_get",
            json!({"key": "k"}),
            CallContext::in_session(SessionId::new("bench")),
        ),
        "warm" => {
            let calc = plugins.join("calc.wasm");
            host.load_file(&calc).await.unwrap();
            let end = Instant::now() + Duration::from_secs(10);
            let mut n = 0u64;
            while Instant::now() < end {
                host.load_file(&calc).await.unwrap();
                n += 1;
            }
            println!("{n} warm loads");
            return;
        }
        other => panic!(
            "--profile takes stateless, stateful, warm or a language plugin (py_units, js_json, c_hash, go_regex), not `{other}`"
        ),
    };
    let end = Instant::now() + Duration::from_secs(10);
    let mut n = 0u64;
    let mut samples = Vec::new();
    while Instant::now() < end {
        samples.extend(time_calls_paced(&registry, tool, &input, &cx, 100, gap).await);
        n += 100;
    }
    samples.sort();
    println!(
        "{n} {kind} calls, p50 {}, p90 {}",
        fmt(percentile(&samples, 0.5)),
        fmt(percentile(&samples, 0.9))
    );
}

/// The same work as the `text_stats` plugin tool, natively.
fn native_stats(input: Value) -> Result<Value, ToolError> {
    let text = input["text"].as_str().unwrap_or_default();
    Ok(json!({
        "chars": text.chars().count(),
        "bytes": text.len(),
        "words": text.split_whitespace().count(),
        "lines": text.lines().count(),
    }))
}

/// Time between two calls in the per-language rows: enough for the spare
/// instances of the slowest guest (Python: ~2 ms to instantiate, ~5 ms when
/// its 10 MB of memory is copied) to be made between calls, as between the
/// turns of an agent loop (which are model round trips, hundreds of
/// milliseconds apart).
const LANGUAGE_GAP: Duration = Duration::from_millis(20);

/// A tool per guest language: (row label, plugin, tool, input).
fn languages() -> [(&'static str, &'static str, &'static str, Value); 4] {
    [
        (
            "  python: py_convert_units",
            "py_units",
            "py_convert_units",
            json!({"value": 10, "from_unit": "km", "to_unit": "mi"}),
        ),
        (
            "  js (QuickJS): js_json_get",
            "js_json",
            "js_json_get",
            json!({"document": "{\"a\":[1,2]}", "path": "a[1]"}),
        ),
        ("  c: c_hash", "c_hash", "c_hash", json!({"text": "hello"})),
        (
            "  go: go_regex_find",
            "go_regex",
            "go_regex_find",
            json!({"pattern": "l+", "text": "hello"}),
        ),
    ]
}

struct Row {
    name: String,
    p50: Duration,
    p99: Duration,
    note: String,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn summarize(name: impl Into<String>, mut samples: Vec<Duration>, note: String) -> Row {
    samples.sort();
    Row {
        name: name.into(),
        p50: percentile(&samples, 0.5),
        p99: percentile(&samples, 0.99),
        note,
    }
}

async fn time_calls(
    registry: &ToolRegistry,
    tool: &str,
    input: &Value,
    cx: &CallContext,
    n: usize,
) -> Vec<Duration> {
    time_calls_paced(registry, tool, input, cx, n, Duration::ZERO).await
}

/// As [`time_calls`], with at least `gap` between the starts of two calls
/// (as in an agent loop, where calls come between model turns).
async fn time_calls_paced(
    registry: &ToolRegistry,
    tool: &str,
    input: &Value,
    cx: &CallContext,
    n: usize,
    gap: Duration,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    let mut next = Instant::now();
    for _ in 0..n {
        if !gap.is_zero() {
            // Spin rather than sleep: a timer's wake-up jitter would be
            // charged to nothing, but a sleeping thread's cold caches would
            // be charged to the call.
            while Instant::now() < next {
                std::hint::spin_loop();
            }
            next = Instant::now() + gap;
        }
        let start = Instant::now();
        registry
            .call(tool, input.clone(), cx)
            .await
            .output
            .expect("the call succeeds");
        samples.push(start.elapsed());
    }
    samples
}

/// `text_stats` calls on fresh instances, 100 µs apart (the stateless rows).
async fn stateless_paced(registry: &ToolRegistry, input: &Value, n: usize) -> Vec<Duration> {
    let gap = Duration::from_micros(100);
    let fresh = CallContext::default();
    time_calls_paced(registry, "text_stats", input, &fresh, n, gap).await
}

/// Calls per second with `callers` tasks each making `per_caller` calls.
async fn throughput(registry: Arc<ToolRegistry>, callers: usize, per_caller: usize) -> f64 {
    let input = json!({"text": "the quick brown fox"});
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let registry = Arc::clone(&registry);
            let input = input.clone();
            tokio::spawn(async move {
                for _ in 0..per_caller {
                    registry
                        .call("text_stats", input.clone(), &CallContext::default())
                        .await
                        .output
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (callers * per_caller) as f64 / start.elapsed().as_secs_f64()
}

async fn run(scale: &Scale, plugins: &Path) {
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new();
    common::register_plugins(&host, plugins, &["text", "scratchpad"], &registry).await;
    let text_spec = registry.get("text_stats").unwrap().spec().clone();
    registry
        .register(NativeTool::new(
            "native_stats",
            text_spec.description,
            text_spec.input_schema,
            |i| async move { native_stats(i) },
        ))
        .unwrap();
    let registry = Arc::new(registry);
    let input = json!({"text": "the quick brown fox"});
    let fresh = CallContext::default();
    let session = CallContext::in_session(SessionId::new("bench"));
    let n = scale.calls;

    // Warm-up: page in code, fill the instance pool.
    time_calls(&registry, "text_stats", &input, &fresh, n / 10 + 1).await;
    time_calls(
        &registry,
        "scratchpad_get",
        &json!({"key": "k"}),
        &session,
        n / 10 + 1,
    )
    .await;

    let mut rows = Vec::new();
    rows.push(summarize(
        "native fn, same work (floor)",
        time_calls(&registry, "native_stats", &input, &fresh, n).await,
        String::new(),
    ));
    rows.push(summarize(
        "stateless call (fresh instance)",
        stateless_paced(&registry, &input, n).await,
        "calls 100 µs apart".into(),
    ));
    rows.push(summarize(
        "stateless call, back to back",
        time_calls(&registry, "text_stats", &input, &fresh, n).await,
        "saturated: spares cannot keep up".into(),
    ));
    rows.push(summarize(
        "stateful call (reused instance)",
        time_calls(
            &registry,
            "scratchpad_get",
            &json!({"key": "k"}),
            &session,
            n,
        )
        .await,
        String::new(),
    ));

    let one = throughput(Arc::clone(&registry), 1, n).await;
    let two = throughput(Arc::clone(&registry), 2, n).await;
    // The same without spare instances: every call instantiates inline, so
    // this shows how the instantiate/drop path itself scales across cores.
    let plain_host = PluginHost::new(HostConfig {
        cache_dir: Some(cache.path().to_owned()),
        spare_instances: 0,
        ..HostConfig::default()
    })
    .unwrap();
    let plain = ToolRegistry::new();
    for tool in plain_host
        .load_file(&plugins.join("text.wasm"))
        .await
        .unwrap()
        .tools()
    {
        plain.register(tool).unwrap();
    }
    let plain = Arc::new(plain);
    let plain_one = throughput(Arc::clone(&plain), 1, n).await;
    let plain_two = throughput(Arc::clone(&plain), 2, n).await;

    // Load: cold compiles (no cache), warm deserializes from the cache.
    let calc = plugins.join("calc.wasm");
    let mut cold = Vec::new();
    for _ in 0..scale.loads.min(10) {
        let nocache = PluginHost::new(HostConfig::default()).unwrap();
        let start = Instant::now();
        nocache.load_file(&calc).await.unwrap();
        cold.push(start.elapsed());
    }
    host.load_file(&calc).await.unwrap();
    let mut warm = Vec::new();
    // Kept until the end, as in a process that loads its plugin directory:
    // otherwise each load would also pay for tearing down the one before
    // (the pool drops an old image when a slot is reused).
    let mut loaded = Vec::with_capacity(scale.loads);
    for _ in 0..scale.loads {
        let start = Instant::now();
        let p = host.load_file(&calc).await.unwrap();
        warm.push(start.elapsed());
        assert_eq!(p.cache_status(), toolhost::sandbox::CacheStatus::Hit);
        assert!(p.tools_from_cache());
        loaded.push(p);
    }
    // A plugin directory, as `toolhost` loads it at start: the plugins load
    // side by side.
    let set = ["calc", "text", "scratchpad"];
    let set_dir = tempfile::tempdir().unwrap();
    for name in set {
        for ext in ["wasm", "toml"] {
            let from = plugins.join(format!("{name}.{ext}"));
            if from.is_file() {
                std::fs::copy(&from, set_dir.path().join(format!("{name}.{ext}"))).unwrap();
            }
        }
    }
    host.load_dir(set_dir.path()).await.unwrap();
    let mut per_plugin = Vec::new();
    let mut loaded_dirs = Vec::with_capacity(scale.loads);
    for _ in 0..scale.loads {
        let start = Instant::now();
        let report = host.load_dir(set_dir.path()).await.unwrap();
        per_plugin.push(start.elapsed() / set.len() as u32);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(report.plugins.len(), set.len());
        loaded_dirs.push(report);
    }
    drop(loaded);
    drop(loaded_dirs);
    rows.push(summarize(
        "plugin load, cold (compile)",
        cold,
        "calc.wasm".into(),
    ));
    rows.push(summarize(
        "plugin load, warm (cache)",
        warm,
        "calc.wasm".into(),
    ));
    rows.push(summarize(
        "plugin dir load, warm, per plugin",
        per_plugin,
        format!("{}: whole directory / {}", set.join(", "), set.len()),
    ));

    // Deadlines: `cargo bench --bench deadline` (10,000 hits under load,
    // the distribution of the time past the deadline, and misses).

    rows.extend(language_rows(plugins, n).await);
    rows.extend(http_rows(plugins, cache.path(), n).await);

    print_rows(&rows);
    contract::rows(&plugins.with_file_name("plugins-fixtures"), n).await;
    println!(
        "{:<40} {:>12.0} calls/s",
        "throughput, 1 caller (stateless)", one
    );
    println!(
        "{:<40} {:>12.0} calls/s {:>10.2}x one caller",
        "throughput, 2 callers (stateless)",
        two,
        two / one
    );
    println!(
        "{:<40} {:>12.0} calls/s",
        "  spares off, 1 caller", plain_one
    );
    println!(
        "{:<40} {:>12.0} calls/s {:>10.2}x one caller",
        "  spares off, 2 callers",
        plain_two,
        plain_two / plain_one
    );
    if std::env::var_os("TOOLHOST_BENCH_KEEP").is_some() {
        let kept: PathBuf = cache.keep();
        println!("cache kept in {}", kept.display());
    }
}

/// The native floor and the per-language rows, nothing else.
async fn languages_only(scale: &Scale, plugins: &Path) {
    // The floor validates against the text plugin's schema, as in the full
    // run.
    let host = PluginHost::new(HostConfig::default()).unwrap();
    let text = ToolRegistry::new();
    common::register_plugins(&host, plugins, &["text"], &text).await;
    let text_spec = text.get("text_stats").unwrap().spec().clone();
    let registry = ToolRegistry::new();
    registry
        .register(NativeTool::new(
            "native_stats",
            text_spec.description,
            text_spec.input_schema,
            |i| async move { native_stats(i) },
        ))
        .unwrap();
    let input = json!({"text": "the quick brown fox"});
    let fresh = CallContext::default();
    let n = scale.calls;
    let mut rows = vec![summarize(
        "native fn, same work (floor)",
        time_calls(&registry, "native_stats", &input, &fresh, n).await,
        String::new(),
    )];
    rows.extend(language_rows(plugins, n).await);
    print_rows(&rows);
}

/// A fresh instance per call for a tool in each guest language (when its
/// plugin was built: plugins/build.sh with that language's toolchain), with
/// memory images mapped copy-on-write (the default) and copied into each
/// instance when it is made; each spaced as between model turns and back to
/// back. Led by the native floor and the text plugin's stateless call.
async fn language_rows(plugins: &Path, n: usize) -> Vec<Row> {
    let input = json!({"text": "the quick brown fox"});
    let fresh = CallContext::default();
    let lang_cache = plugins.parent().unwrap().join("bench-cache");
    let mut rows = Vec::new();
    for memory_init in [MemoryInit::Cow, MemoryInit::Copy] {
        let lang_host = PluginHost::new(HostConfig {
            cache_dir: Some(lang_cache.clone()),
            memory_init,
            ..HostConfig::default()
        })
        .unwrap();
        let mode = match memory_init {
            MemoryInit::Cow => "",
            MemoryInit::Copy => " [copy]",
        };
        if memory_init == MemoryInit::Copy {
            // The text plugin's stateless call, for comparison with the
            // stateless rows (which use copy-on-write).
            let registry = ToolRegistry::new();
            common::register_plugins(&lang_host, plugins, &["text"], &registry).await;
            time_calls(&registry, "text_stats", &input, &fresh, n / 10 + 1).await;
            rows.push(summarize(
                "stateless call [copy]",
                stateless_paced(&registry, &input, n).await,
                "memory_init = copy; calls 100 µs apart".into(),
            ));
        }
        for (label, plugin, tool, input) in languages() {
            let wasm = plugins.join(format!("{plugin}.wasm"));
            if !wasm.is_file() {
                println!("(skipped {plugin}: not built)");
                continue;
            }
            let plugin = lang_host.load_file(&wasm).await.unwrap();
            let registry = ToolRegistry::new();
            for t in plugin.tools() {
                registry.register(t).unwrap();
            }
            let runs = (n / 200).max(3);
            time_calls(&registry, tool, &input, &fresh, 3).await;
            // The warm-up used up the spares; let them be made again, as
            // between two model turns, before the paced calls are timed.
            tokio::time::sleep(LANGUAGE_GAP * 5).await;
            let faults = ThreadFaults::start();
            let spaced =
                time_calls_paced(&registry, tool, &input, &fresh, runs, LANGUAGE_GAP).await;
            let per_call = faults.per_call(runs);
            rows.push(summarize(
                format!("{label}{mode}"),
                spaced,
                format!(
                    "fresh instance, calls {} ms apart; {per_call:.0} page faults a call",
                    LANGUAGE_GAP.as_millis()
                ),
            ));
            let faults = ThreadFaults::start();
            let back_to_back = time_calls(&registry, tool, &input, &fresh, runs).await;
            let per_call = faults.per_call(runs);
            // Back to back, calls on spares and on inline instances can
            // alternate, and the p50 is then either: the mean says what a
            // call costs on average.
            let mean = back_to_back.iter().sum::<Duration>() / back_to_back.len().max(1) as u32;
            rows.push(summarize(
                format!("{label}{mode}, back to back"),
                back_to_back,
                format!(
                    "saturated: instantiation is the limit; mean {}; {per_call:.0} page faults a call",
                    fmt(mean)
                ),
            ));
        }
    }
    rows
}

/// Page faults taken by the calling thread (the one `block_on` runs the
/// calls on; spare instances are made on the runtime's workers), a load-
/// independent measure of what a call pays to touch its memory.
struct ThreadFaults(i64);

impl ThreadFaults {
    fn now() -> i64 {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getrusage fills the struct it is given.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0 {
                return usage.ru_minflt + usage.ru_majflt;
            }
        }
        0
    }

    fn start() -> Self {
        Self(Self::now())
    }

    fn per_call(&self, calls: usize) -> f64 {
        (Self::now() - self.0) as f64 / calls.max(1) as f64
    }
}

/// The table, each row's p50 also as a multiple of the first row's.
fn print_rows(rows: &[Row]) {
    let floor = rows[0].p50.as_secs_f64();
    println!();
    println!(
        "{:<40} {:>12} {:>12} {:>10}  note",
        "measure", "p50", "p99", "x floor"
    );
    for row in rows {
        println!(
            "{:<40} {:>12} {:>12} {:>10.1}  {}",
            row.name,
            fmt(row.p50),
            fmt(row.p99),
            row.p50.as_secs_f64() / floor,
            row.note
        );
    }
}

/// One HTTP GET to a loopback server, from a guest (`fetch_json`: a fresh
/// instance, the host's checks, a new connection, JSON parsed in the guest)
/// and from the host itself (reqwest, with a new connection each time and
/// pooled).
async fn http_rows(plugins: &Path, cache: &Path, n: usize) -> Vec<Row> {
    let wasm = plugins.join("fetch.wasm");
    if !wasm.is_file() {
        println!("(skipped fetch: not built)");
        return Vec::new();
    }
    let addr = loopback_json_server().await;
    let origin = format!("http://{addr}");
    let url = format!("{origin}/n");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&wasm, dir.path().join("fetch.wasm")).unwrap();
    let manifest = format!("[permissions]\nhttp = [\"{origin}\"]\n");
    std::fs::write(dir.path().join("fetch.toml"), manifest).unwrap();
    let host = PluginHost::new(
        HostConfig {
            cache_dir: Some(cache.to_owned()),
            ..HostConfig::default()
        }
        .allow_http(origin.parse().unwrap())
        .allow_http_private(),
    )
    .unwrap();
    let registry = ToolRegistry::new();
    common::register_plugins(&host, dir.path(), &["fetch"], &registry).await;
    let input = json!({"url": url, "pointer": "/n"});
    let fresh = CallContext::default();
    let runs = (n / 10).max(5);
    time_calls(&registry, "fetch_json", &input, &fresh, runs / 10 + 1).await;
    // Back to back, like the host rows below.
    let guest = time_calls(&registry, "fetch_json", &input, &fresh, runs).await;

    let get = async |client: &reqwest::Client| {
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            let body = client
                .get(&url)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let value: Value = serde_json::from_slice(&body).unwrap();
            std::hint::black_box(value);
            samples.push(start.elapsed());
        }
        samples
    };
    // reqwest is built without a crypto provider of its own (the library
    // hands its clients a ready TLS config); these host-side clients, plain
    // HTTP on loopback, still need one to be built: the process default.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let unpooled = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let pooled = reqwest::Client::new();
    get(&pooled).await;
    vec![
        summarize(
            "http GET, guest (fetch_json)",
            guest,
            "loopback; fresh instance, host checks, new connection".into(),
        ),
        summarize(
            "http GET, host (reqwest, new conn.)",
            get(&unpooled).await,
            "loopback; the same request from the host".into(),
        ),
        summarize(
            "http GET, host (reqwest, pooled)",
            get(&pooled).await,
            "loopback; keep-alive connection".into(),
        ),
    ]
}

/// A loopback HTTP/1.1 server answering every request with a small JSON
/// document (keep-alive), for the HTTP rows; it runs until the process ends.
async fn loopback_json_server() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let body = r#"{"n":42,"items":["a","b","c"]}"#;
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        while let Ok((mut stream, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => buffer.extend_from_slice(&chunk[..read]),
                    }
                    // Requests are GETs without a body: each ends at a
                    // blank line.
                    while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        buffer.drain(..end + 4);
                        if stream.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// Calls per second with `callers` callers on as many worker threads, for
/// a stateless and a stateful tool, with errors counted by kind.
fn scaling(plugins: &Path, callers: &[usize], duration: Duration, spares: u32) {
    println!(
        "scaling: {} s per row, spare_instances = {spares}, {} cores",
        duration.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| workload | callers | calls/s | × 1 caller | errors |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for (workload, tool, stateful) in [
        ("stateless text_stats", "text_stats", false),
        ("stateful scratchpad_get", "scratchpad_get", true),
    ] {
        let mut base = None;
        for &n in callers {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n.max(1))
                .enable_all()
                .build()
                .unwrap();
            let (rate, errors) =
                rt.block_on(scaling_row(plugins, tool, stateful, n, duration, spares));
            let base = *base.get_or_insert(rate);
            let errors = if errors.is_empty() {
                "0".to_owned()
            } else {
                errors
                    .iter()
                    .map(|(kind, count)| format!("{count} {kind}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "| {workload} | {n} | {rate:.0} | {:.1} | {errors} |",
                rate / base
            );
        }
    }
}

async fn scaling_row(
    plugins: &Path,
    tool: &'static str,
    stateful: bool,
    callers: usize,
    duration: Duration,
    spares: u32,
) -> (f64, Vec<(String, u64)>) {
    let cache = plugins.parent().unwrap_or(plugins).join("bench-cache");
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(cache),
        spare_instances: spares,
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new();
    common::register_plugins(&host, plugins, &["text", "scratchpad"], &registry).await;
    let registry = Arc::new(registry);
    let end = Instant::now() + duration;
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let cx = if stateful {
                    CallContext::in_session(SessionId::new(format!("caller-{caller}")))
                } else {
                    CallContext::default()
                };
                let input = if stateful {
                    json!({"key": "k"})
                } else {
                    json!({"text": "the quick brown fox"})
                };
                let mut calls = 0u64;
                let mut errors: std::collections::BTreeMap<String, u64> = Default::default();
                while Instant::now() < end {
                    if let Err(e) = registry.call(tool, input.clone(), &cx).await.output {
                        *errors.entry(e.kind.to_string()).or_default() += 1;
                    }
                    calls += 1;
                }
                (calls, errors)
            })
        })
        .collect();
    let started = Instant::now();
    let mut calls = 0;
    let mut errors: std::collections::BTreeMap<String, u64> = Default::default();
    for task in tasks {
        let (n, e) = task.await.unwrap();
        calls += n;
        for (kind, count) in e {
            *errors.entry(kind).or_default() += count;
        }
    }
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    (rate, errors.into_iter().collect())
}
