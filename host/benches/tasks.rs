//! Tasks benchmark: what running a call as a task costs over a plain call,
//! on the embedded store (an SQLite file in WAL mode, as `serve` keeps it).
//!
//! ```sh
//! cargo test  --workspace --bench tasks -- --bench  # 5,000 rounds, test profile
//! cargo test  --workspace --bench tasks             # smoke run (200 rounds)
//! cargo bench -p toolhost --bench tasks -- --rounds N
//! ```
//!
//! Each round makes one plain registry call of a native tool, then the same
//! call as a task: created in the store (durably, before `start` returns),
//! run by the [`TaskRunner`], its result stored, and the task polled once
//! (`get`, what `tasks/get` reads). Prints the median and p99 of both and of
//! their difference, the task's overhead; exits non-zero when the median
//! overhead is over the 1 ms floor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::NativeTool;
use toolhost::tasks::{
    NewTask, SqliteTaskStore, StoreBudget, TaskOutcome, TaskRunner, TaskStatus, TaskStore,
};
use toolhost::tools::{CallContext, ToolRegistry};

const FLOOR: Duration = Duration::from_millis(1);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(if full { 5_000 } else { 200 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run(rounds));
}

async fn run(rounds: usize) {
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(NativeTool::new(
            "echo",
            "Returns its input.",
            json!({"type": "object"}),
            |input| async move { Ok(input) },
        ))
        .expect("the tool registers");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let budget = StoreBudget::new(4 << 20, u32::MAX);
    let store = Arc::new(
        SqliteTaskStore::open(&dir.path().join("tasks.sqlite3"), budget).expect("the store opens"),
    );
    let runner = TaskRunner::new(Arc::clone(&store) as Arc<dyn TaskStore>);
    let cx = CallContext::default();
    let input = json!({"text": "hello"});
    let (mut plain, mut task) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        let start = Instant::now();
        let report = registry.call("echo", input.clone(), &cx).await;
        plain.push(start.elapsed());
        assert!(report.output.is_ok());

        let start = Instant::now();
        let (registry, input, cx) = (Arc::clone(&registry), input.clone(), cx.clone());
        let created = runner
            .start(
                NewTask::new("bench", "echo", 60_000),
                Duration::from_secs(60),
                |_| async move {
                    let report = registry.call("echo", input, &cx).await;
                    TaskOutcome::Completed(report.output.map(|v| v.to_string()).unwrap_or_default())
                },
            )
            .expect("the task starts");
        let done = runner
            .wait("bench", &created.id)
            .await
            .expect("the task ends");
        let polled = runner.get("bench", &created.id).expect("the task is there");
        task.push(start.elapsed());
        assert_eq!(
            (done.status, polled.status),
            (TaskStatus::Completed, TaskStatus::Completed)
        );
    }
    let overhead: Vec<Duration> = task
        .iter()
        .zip(&plain)
        .map(|(t, p)| t.saturating_sub(*p))
        .collect();
    println!("tasks bench: {rounds} rounds, SQLite file in WAL mode (synchronous = NORMAL)");
    for (name, samples) in [
        ("plain call", &mut plain),
        ("as a task", &mut task),
        ("overhead", &mut overhead.clone()),
    ] {
        samples.sort();
        println!(
            "{name:>10}: median {:>8.1} us, p99 {:>8.1} us",
            micros(samples[samples.len() / 2]),
            micros(samples[samples.len() * 99 / 100])
        );
    }
    let mut overhead = overhead;
    overhead.sort();
    let median = overhead[overhead.len() / 2];
    if median > FLOOR {
        eprintln!("a task's median overhead {median:?} is over the {FLOOR:?} floor");
        std::process::exit(1);
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
