//! Deadline benchmark: how late CPU-bound guests stop under load, and
//! whether any deadline is missed.
//!
//! ```sh
//! cargo bench -p toolhost --bench deadline               # 10,000 deadline hits
//! cargo test  --workspace --bench deadline               # smoke run (200 hits)
//! cargo bench -p toolhost --bench deadline -- --hits N --callers C --threads T
//! ```
//!
//! `C` callers on a `T`-thread runtime each loop: a call to `hostile_spin`
//! (a CPU loop with a 10 ms deadline and fuel for many seconds), then two
//! quick `calc_eval` calls queued behind it, with a short pause of a varying
//! length before some rounds so deadlines fall at every phase of the
//! watchdog's tick. Guests outnumber threads, so they keep yielding and
//! waiting for a thread around their deadlines: the interleavings where a
//! deadline could be lost. A call that ends in any way but `timeout`, or
//! later than 1 s past its deadline, is a miss. Prints the distribution of
//! the time past the deadline and the number of misses; exits non-zero on
//! any miss.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};

mod common;

const DEADLINE: Duration = Duration::from_millis(10);
const MISSED: Duration = Duration::from_secs(1);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let flag = |name: &str| -> Option<usize> {
        args.iter().position(|a| a == name).map(|i| {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .expect("a number after the flag")
        })
    };
    let hits = flag("--hits").unwrap_or(if full { 10_000 } else { 200 });
    let callers = flag("--callers").unwrap_or(8);
    let threads = flag("--threads").unwrap_or(2);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned();
    let plugins = root.join("target/plugins");
    let hostile = root.join("target/plugins-hostile");
    common::ensure_rust_plugins(
        &root,
        &[
            &plugins.join("calc.wasm"),
            &hostile.join("hostile_spin.wasm"),
        ],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap();
    let misses = rt.block_on(run(&plugins, &hostile, hits, callers, threads));
    if misses > 0 {
        std::process::exit(1);
    }
}

async fn run(plugins: &Path, hostile: &Path, hits: usize, callers: usize, threads: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        hostile.join("hostile_spin.wasm"),
        dir.path().join("hostile_spin.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("hostile_spin.toml"),
        format!(
            "[limits]\ntimeout_ms = {}\nfuel = 100000000000\n",
            DEADLINE.as_millis()
        ),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new();
    common::register_plugins(&host, dir.path(), &["hostile_spin"], &registry).await;
    common::register_plugins(&host, plugins, &["calc"], &registry).await;
    let registry = Arc::new(registry);

    let left = Arc::new(AtomicUsize::new(hits));
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let registry = Arc::clone(&registry);
            let left = Arc::clone(&left);
            tokio::spawn(async move {
                let mut late = Vec::new();
                let mut misses = Vec::new();
                let mut round = 0usize;
                while left
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    round += 1;
                    let pause = ((caller * 7 + round * 13) % 11) as u64 * 150;
                    if pause > 0 {
                        tokio::time::sleep(Duration::from_micros(pause)).await;
                    }
                    let start = Instant::now();
                    let result = registry
                        .call("hostile_spin", "{}", &CallContext::default())
                        .await;
                    let elapsed = start.elapsed();
                    match result.output {
                        Err(e)
                            if e.kind == ToolErrorKind::Timeout && elapsed < DEADLINE + MISSED =>
                        {
                            late.push(elapsed.saturating_sub(DEADLINE));
                        }
                        Err(e) => misses.push(format!("{:?} after {elapsed:?}", e.kind)),
                        Ok(out) => misses.push(format!("returned {out}")),
                    }
                    for i in 0..2 {
                        registry
                            .call(
                                "calc_eval",
                                json!({"expression": format!("{i} + 1")}),
                                &CallContext::default(),
                            )
                            .await
                            .output
                            .expect("a quick call succeeds");
                    }
                }
                (late, misses)
            })
        })
        .collect();
    let mut late = Vec::with_capacity(hits);
    let mut misses = Vec::new();
    for t in tasks {
        let (l, m) = t.await.unwrap();
        late.extend(l);
        misses.extend(m);
    }
    let wall = started.elapsed();
    late.sort();
    let pct = |p: f64| -> Duration {
        if late.is_empty() {
            return Duration::ZERO;
        }
        late[((late.len() as f64 - 1.0) * p).round() as usize]
    };
    println!();
    println!(
        "deadline under load: {hits} calls of a CPU-bound guest with a {} ms deadline, \
         {callers} callers on {threads} threads, 2 quick calls queued behind each ({:.1} s)",
        DEADLINE.as_millis(),
        wall.as_secs_f64()
    );
    println!("{:<28} {:>10}", "time past the deadline", "");
    for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        println!("{:<28} {:>10}", format!("  {name}"), fmt(pct(p)));
    }
    println!(
        "{:<28} {:>10}",
        "  max",
        fmt(late.last().copied().unwrap_or_default())
    );
    println!(
        "{:<28} {:>10}",
        "missed (not `timeout` in 1 s)",
        misses.len()
    );
    for m in misses.iter().take(5) {
        println!("  {m}");
    }
    misses.len()
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}
