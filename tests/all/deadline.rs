//! The wall-clock deadline holds under any interleaving.
//!
//! Many callers on two executor threads run a CPU-bound guest with a 10 ms
//! deadline, with quick calls queued behind each, so guests keep yielding
//! and waiting for a thread around their deadlines. A deadline that is
//! missed shows as a call that runs on until its fuel is gone: seconds
//! later, and as `out_of_fuel` instead of `timeout`.
//!
//! Regression: a guest whose epoch check fell just before its deadline
//! asked to yield; the watchdog's one bump at the deadline came while the
//! task waited for a thread, wasmtime counted it when setting the guest's
//! next epoch deadline, and when no other call was running no bump ever
//! came again (5 of 600 calls through `serve` ran 10-15 s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin, copy_plugin_from, hostile_dir, workspace_root};

/// A host with the shared test cache.
fn host() -> PluginHost {
    PluginHost::new(HostConfig {
        cache_dir: Some(workspace_root().join("target").join("test-cache")),
        ..HostConfig::default()
    })
    .expect("the sandbox starts")
}

/// The spin fixture's deadline in these tests.
const DEADLINE: Duration = Duration::from_millis(10);

/// Far more than any call may take: a call that ends later missed its
/// deadline (its fuel lasts many seconds). Not a timing assertion: a kept
/// deadline ends a call within milliseconds of it.
const MISSED: Duration = Duration::from_secs(2);

/// `hostile_spin` with a 10 ms deadline and fuel for many seconds of CPU,
/// and `calc` for the quick calls.
async fn spin_and_calc() -> (tempfile::TempDir, Arc<ToolRegistry>) {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(hostile_dir(), "hostile_spin", dir.path());
    std::fs::write(
        dir.path().join("hostile_spin.toml"),
        format!(
            "[limits]\ntimeout_ms = {}\nfuel = 100000000000\n",
            DEADLINE.as_millis()
        ),
    )
    .unwrap();
    copy_plugin("calc", dir.path());
    let report = host().load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, Arc::new(report.registry().unwrap()))
}

/// One spin call: it must end as `timeout`, well before `MISSED`.
async fn spin_once(registry: &ToolRegistry) -> Result<(), String> {
    let started = Instant::now();
    let result = registry
        .call("hostile_spin", "{}", &CallContext::default())
        .await;
    let elapsed = started.elapsed();
    match result.output {
        Err(e) if e.kind == ToolErrorKind::Timeout && elapsed < MISSED => Ok(()),
        Err(e) => Err(format!(
            "a call with a {DEADLINE:?} deadline ended after {elapsed:?} as {:?}: {}",
            e.kind, e.message
        )),
        Ok(out) => Err(format!("the spin call returned {out}")),
    }
}

async fn quick(registry: &ToolRegistry, i: usize) {
    let out = registry
        .call(
            "calc_eval",
            json!({"expression": format!("{i} + 1")}),
            &CallContext::default(),
        )
        .await
        .output
        .expect("a quick call succeeds beside the spinning ones");
    assert_eq!(out["value"], json!((i + 1) as f64));
}

/// `callers` tasks, each doing `rounds` of: a spin call, then `queued`
/// quick calls; with a pause of a few hundred microseconds before some
/// rounds so deadlines fall at every phase of the watchdog's tick.
async fn hammer(registry: &Arc<ToolRegistry>, callers: usize, rounds: usize, queued: usize) {
    let mut tasks = Vec::new();
    for caller in 0..callers {
        let registry = Arc::clone(registry);
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for round in 0..rounds {
                let pause = ((caller * 7 + round * 13) % 11) as u64 * 150;
                if pause > 0 {
                    tokio::time::sleep(Duration::from_micros(pause)).await;
                }
                if let Err(e) = spin_once(&registry).await {
                    failures.push(e);
                }
                for i in 0..queued {
                    quick(&registry, i).await;
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.unwrap());
    }
    assert!(
        failures.is_empty(),
        "{} deadlines missed, e.g. {}",
        failures.len(),
        failures[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_bound_calls_end_at_their_deadline_with_many_concurrent_callers() {
    let (_dir, registry) = spin_and_calc().await;
    hammer(&registry, 8, 30, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_left_alone_after_its_neighbours_finish_still_ends_at_its_deadline() {
    // The miss needed the overdue call to be the last one running: with
    // others running, their ticks caught it 10 ms later. Staggered callers
    // with different numbers of rounds leave each one alone in turn.
    let (_dir, registry) = spin_and_calc().await;
    let mut tasks = Vec::new();
    for caller in 0..4usize {
        let registry = Arc::clone(&registry);
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for round in 0..(10 + caller * 15) {
                if let Err(e) = spin_once(&registry).await {
                    failures.push(e);
                }
                if round % 3 == caller % 3 {
                    quick(&registry, round).await;
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.unwrap());
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn one_thread_many_callers_every_deadline_holds() {
    // One executor thread: every yield waits behind the other guests, the
    // widest window for a bump to land while a guest is off its thread.
    let (_dir, registry) = spin_and_calc().await;
    hammer(&registry, 6, 20, 2).await;
}

/// `hostile_spin` (10 ms) and `hostile_sleep` (8 ms), fuel for about a
/// second of spinning (a missed deadline ends as `out_of_fuel` instead of
/// running for a minute), `calc` for quick calls, and no spare instances:
/// a spare being made arms a deadline of its own, whose ticks would catch
/// a guest 10 ms late and hide the miss.
async fn spin_sleep_calc() -> (tempfile::TempDir, Arc<ToolRegistry>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, ms) in [("hostile_spin", 10), ("hostile_sleep", 8)] {
        copy_plugin_from(hostile_dir(), name, dir.path());
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            format!("[limits]\ntimeout_ms = {ms}\nfuel = 10000000000\n"),
        )
        .unwrap();
    }
    copy_plugin("calc", dir.path());
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(workspace_root().join("target").join("test-cache")),
        spare_instances: 0,
        ..HostConfig::default()
    })
    .expect("the sandbox starts");
    let report = host.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, Arc::new(report.registry().unwrap()))
}

/// The interleaving of the bug, step by step: at 8 ms the deadline of
/// `hostile_sleep` bumps the epoch; the spinning guest checks its clock
/// (2 ms to go) and yields; the task's next future then keeps the thread
/// busy until 14 ms (as other guests, or a native tool computing, would),
/// so the spinning guest is off its thread when its own deadline passes at
/// 10 ms. Unless another call is armed after that, no bump comes again.
async fn off_thread_at_the_deadline(registry: &ToolRegistry) -> Result<(), String> {
    let cx = CallContext::default();
    let started = Instant::now();
    let mut busy_done = false;
    // Ready on every poll (never parked on a timer, which the scheduler
    // would not look at while the guest keeps yielding): from 7 ms on, the
    // next poll blocks the thread for 7 ms.
    let busy = std::future::poll_fn(|task| {
        if busy_done {
            return std::task::Poll::Ready(());
        }
        if started.elapsed() >= Duration::from_millis(7) {
            std::thread::sleep(Duration::from_millis(7));
            busy_done = true;
            return std::task::Poll::Ready(());
        }
        task.waker().wake_by_ref();
        std::task::Poll::Pending
    });
    // Polled in this order: the sleeping call is armed first, so its
    // deadline comes while the spinning guest runs.
    let (_, spun, ()) = tokio::join!(
        registry.call("hostile_sleep", "{}", &cx),
        spin_once(registry),
        busy
    );
    spun
}

#[tokio::test(flavor = "current_thread")]
async fn a_guest_off_its_thread_when_its_deadline_passes_still_stops() {
    let (_dir, registry) = spin_sleep_calc().await;
    for round in 0..5 {
        if let Err(e) = off_thread_at_the_deadline(&registry).await {
            panic!("round {round}: {e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_hold_with_callers_finishing_at_different_times_and_the_thread_taken() {
    // Several callers, each round the interleaving above and then quick
    // calls queued behind it; they stop one after another, so the last
    // ones run with nothing else armed, where a lost bump is never made up.
    let (_dir, registry) = spin_sleep_calc().await;
    let mut tasks = Vec::new();
    for caller in 0..4usize {
        let registry = Arc::clone(&registry);
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for round in 0..(3 + caller * 3) {
                if let Err(e) = off_thread_at_the_deadline(&registry).await {
                    failures.push(format!("caller {caller}, round {round}: {e}"));
                }
                quick(&registry, round).await;
                quick(&registry, round + 1).await;
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.unwrap());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
