//! Registry dynamics: versions, snapshots, changes while calls run.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::tools::{NativeTool, ToolErrorKind};

fn answering(name: &str, answer: &'static str) -> NativeTool {
    NativeTool::new(
        name,
        "Answers.",
        json!({"type": "object"}),
        move |_| async move { Ok(json!(answer)) },
    )
}

fn cx() -> CallContext {
    CallContext::default()
}

#[tokio::test]
async fn two_versions_coexist_and_the_plain_name_is_the_last_registered() {
    let registry = ToolRegistry::new();
    registry
        .register(answering("calc", "one").with_version("1.0.0"))
        .unwrap();
    registry
        .register(answering("calc", "two").with_version("2.0.0"))
        .unwrap();
    assert_eq!(registry.call("calc", "{}", &cx()).await, Ok(json!("two")));
    assert_eq!(
        registry.call("calc@1.0.0", "{}", &cx()).await,
        Ok(json!("one"))
    );
    assert_eq!(
        registry.call("calc@2.0.0", "{}", &cx()).await,
        Ok(json!("two"))
    );
    let missing = registry.call("calc@3.0.0", "{}", &cx()).await.unwrap_err();
    assert_eq!(missing.kind, ToolErrorKind::UnknownTool);
    let set = registry.snapshot();
    assert_eq!(set.len(), 1);
    assert_eq!(set.specs().count(), 1, "models see one `calc`");
    assert_eq!(set.keys().collect::<Vec<_>>(), ["calc@1.0.0", "calc@2.0.0"]);
    // Unregistering the plain name removes what it resolves to; the older
    // version takes over.
    let removed = registry.unregister("calc").expect("there was one");
    assert_eq!(removed.version(), Some("2.0.0"));
    assert_eq!(registry.call("calc", "{}", &cx()).await, Ok(json!("one")));
    assert!(registry.unregister("calc@1.0.0").is_some());
    assert!(registry.is_empty());
    assert!(registry.unregister("calc").is_none());
}

#[test]
fn the_same_name_without_distinct_versions_is_a_duplicate_naming_both() {
    let registry = ToolRegistry::new();
    registry
        .register(answering("calc", "one").with_version("1.0.0"))
        .unwrap();
    let same = registry
        .register(answering("calc", "again").with_version("1.0.0"))
        .unwrap_err();
    let text = same.to_string();
    assert!(
        matches!(same, RegistryError::DuplicateName { .. }),
        "{same:?}"
    );
    assert!(
        text.contains("a native tool (version 1.0.0) and by a native tool (version 1.0.0)"),
        "{text}"
    );
    let unversioned = registry.register(answering("calc", "plain")).unwrap_err();
    assert!(
        matches!(unversioned, RegistryError::DuplicateName { .. }),
        "{unversioned:?}"
    );
    let plain = ToolRegistry::new();
    plain.register(answering("echo", "a")).unwrap();
    let versioned = plain
        .register(answering("echo", "b").with_version("2"))
        .unwrap_err();
    assert!(
        versioned
            .to_string()
            .contains("by a native tool and by a native tool (version 2)"),
        "{versioned}"
    );
    let bad = plain
        .register(answering("other", "c").with_version("1 0"))
        .unwrap_err();
    assert!(
        matches!(bad, RegistryError::InvalidVersion { .. }),
        "{bad:?}"
    );
}

#[tokio::test]
async fn a_snapshot_keeps_its_set_while_the_registry_changes() {
    let registry = ToolRegistry::new();
    registry.register(answering("a", "a")).unwrap();
    let before = registry.snapshot();
    registry.register(answering("b", "b")).unwrap();
    registry.unregister("a");
    assert!(before.contains("a") && !before.contains("b"));
    assert_eq!(before.call("a", "{}", &cx()).await, Ok(json!("a")));
    let after = registry.snapshot();
    assert!(!after.contains("a") && after.contains("b"));
}

#[tokio::test]
async fn a_call_in_flight_finishes_on_its_tool_after_it_is_unregistered() {
    let registry = Arc::new(ToolRegistry::new());
    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = Arc::clone(&gate);
    registry
        .register(NativeTool::new(
            "wait",
            "Waits for the gate.",
            json!({"type": "object"}),
            move |_| {
                let gate = Arc::clone(&opened);
                async move {
                    gate.notified().await;
                    Ok(json!("done"))
                }
            },
        ))
        .unwrap();
    let call = tokio::spawn({
        let registry = Arc::clone(&registry);
        async move { registry.call("wait", "{}", &CallContext::default()).await }
    });
    // Let the call start, then take the tool away under it.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(registry.unregister("wait").is_some());
    assert!(!registry.contains("wait"));
    gate.notify_one();
    let out = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends")
        .expect("no panic");
    assert_eq!(out, Ok(json!("done")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_and_unregistering_while_calls_run_never_breaks_a_call() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(answering("stable", "s")).unwrap();
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let (mut ok, mut unknown) = (0, 0);
                for _ in 0..300 {
                    assert_eq!(registry.call("stable", "{}", &cx()).await, Ok(json!("s")));
                    match registry.call("flicker", "{}", &cx()).await {
                        Ok(v) => {
                            assert_eq!(v, json!("f"));
                            ok += 1;
                        }
                        Err(e) => {
                            assert_eq!(e.kind, ToolErrorKind::UnknownTool);
                            unknown += 1;
                        }
                    }
                    tokio::task::yield_now().await;
                }
                (ok, unknown)
            })
        })
        .collect();
    let churn = {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            for _ in 0..300 {
                registry.register(answering("flicker", "f")).unwrap();
                tokio::task::yield_now().await;
                assert!(registry.unregister("flicker").is_some());
                tokio::task::yield_now().await;
            }
        })
    };
    churn.await.unwrap();
    for caller in callers {
        let (ok, unknown) = caller.await.unwrap();
        assert_eq!(ok + unknown, 300);
    }
    assert_eq!(registry.snapshot().keys().collect::<Vec<_>>(), ["stable"]);
}

#[tokio::test]
async fn set_options_changes_the_options_a_call_reports() {
    let registry = ToolRegistry::new();
    registry
        .register(answering("calc", "one").with_version("1.0.0"))
        .unwrap();
    let options = ExecOptions {
        retries: 2,
        ..ExecOptions::default()
    };
    assert!(registry.set_options("calc@1.0.0", options.clone()));
    assert!(!registry.set_options("nope", options.clone()));
    let report = registry.call_detailed("calc", "{}", &cx()).await;
    assert_eq!(report.options, options);
    assert_eq!(report.attempts, 1);
    let overridden = registry
        .call_detailed(
            "calc",
            "{}",
            &cx().with_overrides(crate::tools::ExecOverrides {
                retries: Some(5),
                ..Default::default()
            }),
        )
        .await;
    assert_eq!(overridden.options.retries, 5, "the call's override wins");
}

#[tokio::test]
async fn retries_are_counted_in_attempts() {
    let registry = ToolRegistry::new();
    let tries = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = Arc::clone(&tries);
    registry
        .register_with(
            Arc::new(NativeTool::new(
                "flaky",
                "Busy twice, then answers.",
                json!({"type": "object"}),
                move |_| {
                    let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async move {
                        if n < 2 {
                            Err(ToolError::new(ToolErrorKind::Busy, "try again"))
                        } else {
                            Ok(json!(n))
                        }
                    }
                },
            )),
            ExecOptions {
                retries: 3,
                retry_delay: Duration::from_millis(1),
                ..ExecOptions::default()
            },
        )
        .unwrap();
    let report = registry.call_detailed("flaky", "{}", &cx()).await;
    assert_eq!(report.output, Ok(json!(2)));
    assert_eq!(report.attempts, 3);
    let bad = registry.call_detailed("flaky", "not json", &cx()).await;
    assert_eq!(bad.attempts, 0);
    assert_eq!(bad.output.unwrap_err().kind, ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn replace_swaps_exactly_the_given_tools_or_nothing() {
    let registry = ToolRegistry::new();
    let old: Arc<dyn Tool> = Arc::new(answering("a", "old"));
    registry
        .register_with(Arc::clone(&old), ExecOptions::default())
        .unwrap();
    registry.register(answering("other", "other")).unwrap();
    let new: Arc<dyn Tool> = Arc::new(answering("a", "new"));
    let b: Arc<dyn Tool> = Arc::new(answering("b", "b"));
    let before = registry.snapshot();
    registry
        .replace(
            &[Arc::clone(&old)],
            vec![
                (Arc::clone(&new), ExecOptions::default()),
                (Arc::clone(&b), ExecOptions::default()),
            ],
        )
        .unwrap();
    assert_eq!(registry.call("a", "{}", &cx()).await, Ok(json!("new")));
    assert_eq!(registry.call("b", "{}", &cx()).await, Ok(json!("b")));
    assert_eq!(
        registry.call("other", "{}", &cx()).await,
        Ok(json!("other"))
    );
    assert_eq!(before.call("a", "{}", &cx()).await, Ok(json!("old")));

    // A clash with a tool not being replaced changes nothing.
    let clash = registry.replace(
        &[Arc::clone(&b)],
        vec![(Arc::new(answering("other", "x")), ExecOptions::default())],
    );
    assert!(
        matches!(clash, Err(RegistryError::DuplicateName { .. })),
        "{clash:?}"
    );
    assert_eq!(registry.call("b", "{}", &cx()).await, Ok(json!("b")));
    assert_eq!(
        registry.call("other", "{}", &cx()).await,
        Ok(json!("other"))
    );
}
