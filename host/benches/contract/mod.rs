//! What a call costs under each contract series: the same trivial tool
//! built once as a `toolhost:plugin@0.1.0` component
//! (`plugins/fixtures/bench-v01`) and once as a `@0.2.0` one that uses none
//! of 0.2's new features (`plugins/fixtures/bench-v02`), both without the
//! SDK, called in one run.
//!
//! Wall time on a shared machine moves with whatever else runs, so each
//! row also gives the process's CPU time per call (every thread: the call
//! and the spare instances made for the next ones), and the calls of the
//! two series are interleaved in blocks so that a slow spell hits both.
//! The spread of the per-block ratios says how noisy the run was.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, SessionId, ToolRegistry};

/// The two series' plugins and their tools.
const SERIES: [(&str, &str, &str); 2] = [
    ("0.1", "bench_v01", "bench_v01_words"),
    ("0.2", "bench_v02", "bench_v02_words"),
];

/// How many blocks each measure is cut into (each series runs once per
/// block, in alternating order).
const BLOCKS: usize = 10;

/// CPU time this process has used so far, every thread.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant
    // every Linux and macOS libc has.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One series' figures for one measure.
#[derive(Default)]
struct Tally {
    wall: Vec<Duration>,
    cpu: Duration,
    calls: u32,
    /// CPU per call of each block.
    blocks: Vec<Duration>,
}

impl Tally {
    fn cpu_per_call(&self) -> Duration {
        self.cpu / self.calls.max(1)
    }

    fn p50(&self) -> Duration {
        let mut wall = self.wall.clone();
        wall.sort();
        wall[wall.len() / 2]
    }
}

/// Time `per_block` calls of `tool` with `cx`, back to back.
async fn block(
    registry: &ToolRegistry,
    tool: &str,
    cx: &CallContext,
    per_block: usize,
    tally: &mut Tally,
) {
    let input = json!({"text": "the quick brown fox"});
    let cpu = process_cpu();
    for _ in 0..per_block {
        let start = Instant::now();
        registry
            .call(tool, input.clone(), cx)
            .await
            .output
            .expect("the call succeeds");
        tally.wall.push(start.elapsed());
    }
    let used = process_cpu() - cpu;
    tally.cpu += used;
    tally.calls += per_block as u32;
    tally.blocks.push(used / per_block as u32);
}

/// The 0.1 and 0.2 rows, fresh instance and reused instance, with the
/// ratio of each 0.2 figure to its 0.1 twin. Skipped (with a note) when
/// the fixtures are not built.
pub async fn rows(fixtures: &Path, calls: usize) {
    let wasm = |plugin: &str| fixtures.join(format!("{plugin}.wasm"));
    if SERIES.iter().any(|(_, plugin, _)| !wasm(plugin).is_file()) {
        println!(
            "(skipped the contract rows: bench_v01/bench_v02 not built; plugins/build.sh rust)"
        );
        return;
    }
    let host = PluginHost::new(HostConfig::default()).unwrap();
    let registry = ToolRegistry::new();
    for (series, plugin, _) in SERIES {
        let loaded = host.load_file(&wasm(plugin)).await.unwrap();
        let exports = &loaded.interface().exports;
        assert!(
            exports
                .iter()
                .any(|e| e.ends_with(&format!("tool@{series}.0"))),
            "{plugin} speaks {series}: {exports:?}"
        );
        for tool in loaded.tools() {
            registry.register(tool).unwrap();
        }
    }
    let per_block = (calls / BLOCKS).max(5);
    println!();
    println!(
        "{:<34} {:>10} {:>10} {:>12}  CPU ratio per block: min..max",
        "contract series (same tool)", "p50 wall", "CPU/call", "0.2 / 0.1",
    );
    for (measure, cx) in [
        ("fresh instance", CallContext::default()),
        (
            "reused instance (session)",
            CallContext::in_session(SessionId::new("bench")),
        ),
    ] {
        let mut tallies = [Tally::default(), Tally::default()];
        // Warm-up: page in code, fill the spare pools.
        for (_, _, tool) in SERIES {
            block(&registry, tool, &cx, per_block, &mut Tally::default()).await;
        }
        for b in 0..BLOCKS {
            // 0.1 first in even blocks, 0.2 first in odd ones.
            let order = if b % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                block(&registry, SERIES[i].2, &cx, per_block, &mut tallies[i]).await;
            }
        }
        let ratios: Vec<f64> = tallies[1]
            .blocks
            .iter()
            .zip(&tallies[0].blocks)
            .map(|(v2, v1)| v2.as_secs_f64() / v1.as_secs_f64())
            .collect();
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let max = ratios.iter().copied().fold(0.0, f64::max);
        for (i, (series, _, _)) in SERIES.iter().enumerate() {
            let ratio = if i == 1 {
                format!(
                    "{:.3} CPU",
                    tallies[1].cpu_per_call().as_secs_f64()
                        / tallies[0].cpu_per_call().as_secs_f64()
                )
            } else {
                String::new()
            };
            println!(
                "{:<34} {:>10} {:>10} {:>12}  {}",
                format!("{series}: {measure}"),
                fmt(tallies[i].p50()),
                fmt(tallies[i].cpu_per_call()),
                ratio,
                if i == 1 {
                    format!("{min:.3}..{max:.3}")
                } else {
                    String::new()
                }
            );
        }
        println!(
            "{:<34} {:>10} {:>10} {:>12}",
            format!("  0.2 / 0.1 wall p50, {measure}"),
            "",
            "",
            format!(
                "{:.3} wall",
                tallies[1].p50().as_secs_f64() / tallies[0].p50().as_secs_f64()
            )
        );
    }
}

fn fmt(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
