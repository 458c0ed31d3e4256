//! Under load: a call never fails because the host fell behind on its own
//! housekeeping or because every instance slot is momentarily taken; it
//! waits (up to its own deadline) for a slot. Only when the slots stay
//! taken for that long does it fail, with kind `busy` and a message naming
//! the limit to raise.

use std::sync::Arc;

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, ToolErrorKind, ToolRegistry};
use toolhost_tests::plugins::{copy_plugin, copy_plugin_from, hostile_dir, workspace_root};
use toolhost_tests::wait::{CallLog, PATIENCE};

fn host(max_instances: u32, spare_instances: u32) -> PluginHost {
    PluginHost::new(HostConfig {
        max_instances,
        spare_instances,
        ..HostConfig::default().cache_dir(workspace_root().join("target").join("test-cache"))
    })
    .expect("the sandbox starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_callers_on_few_slots_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("text", dir.path());
    // Four slots, two of them wanted by spare instances, 64 callers.
    let report = host(4, 2).load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = Arc::new(report.registry().expect("the loaded tools register"));
    let mut tasks = Vec::new();
    for caller in 0..64 {
        let registry = Arc::clone(&registry);
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for call in 0..5 {
                let text = format!("caller {caller} call {call}");
                let result = registry
                    .call("text_stats", json!({"text": text}), &CallContext::default())
                    .await
                    .output;
                if let Err(e) = result {
                    failures.push(format!("{}: {}", e.kind, e.message));
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for task in tasks {
        failures.extend(task.await.unwrap());
    }
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

async fn call(
    registry: &ToolRegistry,
    tool: &str,
    input: serde_json::Value,
) -> Result<serde_json::Value, toolhost::tools::ToolError> {
    registry
        .call(tool, input, &CallContext::default())
        .await
        .output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slots_taken_past_the_deadline_end_the_call_as_busy_and_the_host_recovers() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    copy_plugin_from(hostile_dir(), "hostile_sleep", dir.path());
    std::fs::write(
        dir.path().join("hostile_sleep.toml"),
        "[limits]\ntimeout_ms = 6000\n",
    )
    .unwrap();
    // Two slots, no spares: two long sleeps take both.
    let report = host(2, 0).load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = Arc::new(report.registry().expect("the loaded tools register"));
    let (sink, mut log) = CallLog::sink();
    let sleeps: Vec<_> = (0..2)
        .map(|_| {
            let registry = Arc::clone(&registry);
            let cx = CallContext::default().with_logs(sink.clone());
            tokio::spawn(async move {
                registry
                    .call("hostile_sleep", json!({"ms": 4000}), &cx)
                    .await
                    .output
            })
        })
        .collect();
    drop(sink);
    // Both in the guest: both slots taken.
    log.wait_for("sleep started", 2, PATIENCE).await;

    // calc's deadline is 1 s: it waits that long for a slot, then gives up.
    let e = call(&registry, "calc_eval", json!({"expression": "1+1"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Busy, "{e:?}");
    assert!(e.message.contains("max_instances"), "{}", e.message);
    assert!(e.kind.is_transient());

    for sleep in sleeps {
        let slept = sleep.await.unwrap().unwrap();
        assert_eq!(
            slept["slept_ms"].as_u64().map(|ms| ms >= 4000),
            Some(true),
            "{slept}"
        );
    }
    let out = call(&registry, "calc_eval", json!({"expression": "1+1"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"value": 2.0}));
}
