//! Registry dynamics: versions, snapshots, changes while calls run. Over
//! 600 lines as a test file: one test per rule of the registry, each whole.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::tools::{NativeTool, ToolError, ToolErrorKind, ToolOutput};

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
    assert_eq!(
        registry.call("calc", "{}", &cx()).await.output,
        Ok(json!("two"))
    );
    assert_eq!(
        registry.call("calc@1.0.0", "{}", &cx()).await.output,
        Ok(json!("one"))
    );
    assert_eq!(
        registry.call("calc@2.0.0", "{}", &cx()).await.output,
        Ok(json!("two"))
    );
    let missing = registry
        .call("calc@3.0.0", "{}", &cx())
        .await
        .output
        .unwrap_err();
    assert_eq!(missing.kind, ToolErrorKind::UnknownTool);
    let set = registry.snapshot();
    assert_eq!(set.len(), 1);
    assert_eq!(set.specs().count(), 1, "models see one `calc`");
    assert_eq!(set.keys().collect::<Vec<_>>(), ["calc@1.0.0", "calc@2.0.0"]);
    // Unregistering the plain name removes what it resolves to; the older
    // version takes over.
    let removed = registry.unregister("calc").expect("there was one");
    assert_eq!(removed.version(), Some("2.0.0"));
    assert_eq!(
        registry.call("calc", "{}", &cx()).await.output,
        Ok(json!("one"))
    );
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
    assert_eq!(before.call("a", "{}", &cx()).await.output, Ok(json!("a")));
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
    assert_eq!(out.output, Ok(json!("done")));
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
                    assert_eq!(
                        registry.call("stable", "{}", &cx()).await.output,
                        Ok(json!("s"))
                    );
                    match registry.call("flicker", "{}", &cx()).await.output {
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
    let report = registry.call("calc", "{}", &cx()).await;
    assert_eq!(report.options, options);
    assert_eq!(report.attempts, 1);
    let overridden = registry
        .call(
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
    let report = registry.call("flaky", "{}", &cx()).await;
    assert_eq!(report.output, Ok(json!(2)));
    assert_eq!(report.attempts, 3);
    let bad = registry.call("flaky", "not json", &cx()).await;
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
    assert_eq!(
        registry.call("a", "{}", &cx()).await.output,
        Ok(json!("new"))
    );
    assert_eq!(registry.call("b", "{}", &cx()).await.output, Ok(json!("b")));
    assert_eq!(
        registry.call("other", "{}", &cx()).await.output,
        Ok(json!("other"))
    );
    assert_eq!(before.call("a", "{}", &cx()).await.output, Ok(json!("old")));

    // A clash with a tool not being replaced changes nothing.
    let clash = registry.replace(
        &[Arc::clone(&b)],
        vec![(Arc::new(answering("other", "x")), ExecOptions::default())],
    );
    assert!(
        matches!(clash, Err(RegistryError::DuplicateName { .. })),
        "{clash:?}"
    );
    assert_eq!(registry.call("b", "{}", &cx()).await.output, Ok(json!("b")));
    assert_eq!(
        registry.call("other", "{}", &cx()).await.output,
        Ok(json!("other"))
    );
}

/// A tool from a source other than native code, to rank sources.
struct FromSource {
    spec: crate::tools::ToolSpec,
    origin: ToolOrigin,
    answer: &'static str,
}

impl Tool for FromSource {
    fn spec(&self) -> &crate::tools::ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _input: Value,
        _cx: &CallContext,
    ) -> futures::future::BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let answer = self.answer;
        Box::pin(async move { Ok(json!(answer).into()) })
    }

    fn origin(&self) -> ToolOrigin {
        self.origin.clone()
    }
}

fn from(origin: ToolOrigin, name: &str, answer: &'static str) -> Arc<dyn Tool> {
    Arc::new(FromSource {
        spec: crate::tools::ToolSpec {
            name: name.into(),
            description: "Answers.".into(),
            input_schema: json!({"type": "object"}),
        },
        origin,
        answer,
    })
}

fn plugin(file: &str) -> ToolOrigin {
    ToolOrigin::Plugin {
        plugin: file.trim_end_matches(".wasm").into(),
        path: std::path::Path::new("/plugins").join(file),
    }
}

fn mcp(server: &str) -> ToolOrigin {
    ToolOrigin::Mcp {
        server: server.into(),
    }
}

/// Who owns `name` after `steps` (each a tool registered, by index, or
/// removed, by index), started from an empty registry.
async fn owner_after(tools: &[Arc<dyn Tool>], steps: &[(bool, usize)]) -> Option<Value> {
    let registry = ToolRegistry::new();
    for &(add, i) in steps {
        if add {
            // A weaker source's registration is refused: that is the point.
            let _ = registry.replace(&[], vec![(Arc::clone(&tools[i]), ExecOptions::default())]);
        } else {
            registry
                .replace(&[Arc::clone(&tools[i])], Vec::new())
                .unwrap();
        }
    }
    registry.call("x", "{}", &cx()).await.output.ok()
}

#[tokio::test]
async fn a_plugin_put_back_takes_its_name_back_from_an_mcp_server_that_listed_it_meanwhile() {
    // The bug: plugin removed, MCP server re-lists `x`, plugin restored and
    // refused; calls (and their arguments) went to the MCP server.
    let plugin_x = from(plugin("p.wasm"), "x", "plugin");
    let mcp_x = from(mcp("m"), "x", "mcp");
    let registry = ToolRegistry::new();
    registry
        .register_with(Arc::clone(&plugin_x), ExecOptions::default())
        .unwrap();
    let refused = registry.register_with(Arc::clone(&mcp_x), ExecOptions::default());
    assert!(
        matches!(refused, Err(RegistryError::DuplicateName { .. })),
        "{refused:?}"
    );
    registry
        .replace(&[Arc::clone(&plugin_x)], Vec::new())
        .unwrap();
    registry
        .register_with(Arc::clone(&mcp_x), ExecOptions::default())
        .expect("a free name goes to the MCP server");
    assert_eq!(
        registry.call("x", "{}", &cx()).await.output,
        Ok(json!("mcp"))
    );
    let displaced = registry
        .replace(&[], vec![(Arc::clone(&plugin_x), ExecOptions::default())])
        .expect("the plugin comes back");
    assert_eq!(
        registry.call("x", "{}", &cx()).await.output,
        Ok(json!("plugin"))
    );
    let [
        RegistryError::Displaced {
            name, displaced, ..
        },
    ] = displaced.as_slice()
    else {
        panic!("{displaced:?}");
    };
    assert_eq!(name, "x");
    assert!(displaced.contains("MCP server `m`"), "{displaced}");
    // The MCP server's next listing is refused again.
    let again = registry.register_with(mcp_x, ExecOptions::default());
    assert!(matches!(again, Err(RegistryError::DuplicateName { .. })));
}

#[tokio::test]
async fn the_owner_of_a_name_does_not_depend_on_the_order_sources_arrive_in() {
    let tools = [
        from(ToolOrigin::Native, "x", "native"),
        from(plugin("a.wasm"), "x", "plugin a"),
        from(plugin("b.wasm"), "x", "plugin b"),
        from(
            ToolOrigin::Rest {
                url: "https://example.com".into(),
                file: None,
            },
            "x",
            "rest",
        ),
        from(mcp("m1"), "x", "mcp m1"),
        from(mcp("m2"), "x", "mcp m2"),
    ];
    let answers = ["native", "plugin a", "plugin b", "rest", "mcp m1", "mcp m2"];
    // Every source added, in each rotation of the order and backwards:
    // the strongest present always owns the name.
    for start in 0..tools.len() {
        for reverse in [false, true] {
            let mut order: Vec<usize> = (0..tools.len())
                .map(|i| (i + start) % tools.len())
                .collect();
            if reverse {
                order.reverse();
            }
            let mut steps: Vec<(bool, usize)> = order.iter().map(|&i| (true, i)).collect();
            assert_eq!(
                owner_after(&tools, &steps).await,
                Some(json!("native")),
                "{steps:?}"
            );
            // Removing the owners one by one: the strongest of the rest
            // owns it once it has registered again.
            for gone in 0..tools.len() - 1 {
                steps.push((false, gone));
                for again in gone + 1..tools.len() {
                    steps.push((true, again));
                }
                let owner = owner_after(&tools, &steps).await;
                assert_eq!(owner, Some(json!(answers[gone + 1])), "{steps:?}");
            }
        }
    }
}

#[test]
fn two_tools_of_one_rank_are_a_duplicate_whatever_the_order() {
    let rest = |answer| {
        from(
            ToolOrigin::Rest {
                url: format!("https://{answer}.example.com"),
                file: None,
            },
            "x",
            answer,
        )
    };
    let registry = ToolRegistry::new();
    registry
        .register_with(rest("one"), ExecOptions::default())
        .unwrap();
    let second = registry.register_with(rest("two"), ExecOptions::default());
    assert!(
        matches!(second, Err(RegistryError::DuplicateName { .. })),
        "{second:?}"
    );
    let versions = registry.snapshot().keys().count();
    assert_eq!(versions, 1);
}

#[test]
fn the_change_feed_moves_on_every_change_to_the_tools_and_only_then() {
    let registry = ToolRegistry::new();
    let changes = registry.changes();
    let moved = |before: u64| registry.generation() > before;
    let g = registry.generation();
    registry.register(answering("a", "1")).unwrap();
    assert!(moved(g), "register");
    assert!(changes.has_changed().unwrap(), "a receiver hears of it");
    let g = registry.generation();
    registry.register(answering("a", "2")).unwrap_err();
    assert!(!moved(g), "a refused register changes nothing");
    assert!(registry.set_options("a", ExecOptions::default()));
    assert!(registry.unregister("no_such_tool").is_none());
    assert!(!moved(g), "options and a missing name are no change");
    let old = registry.get("a").unwrap();
    registry
        .replace(
            &[old],
            vec![(Arc::new(answering("b", "3")), ExecOptions::default())],
        )
        .unwrap();
    assert!(moved(g), "replace");
    let g = registry.generation();
    registry.unregister("b").unwrap();
    assert!(moved(g), "unregister");
}

#[tokio::test]
async fn a_burst_of_changes_wakes_a_reader_that_then_sees_them_all() {
    let registry = Arc::new(ToolRegistry::new());
    let mut changes = registry.changes();
    for name in ["a", "b", "c"] {
        registry.register(answering(name, "1")).unwrap();
    }
    changes.changed().await.unwrap();
    assert_eq!(*changes.borrow_and_update(), 3);
    assert_eq!(registry.len(), 3);
    assert!(!changes.has_changed().unwrap(), "nothing left to hear");
}

/// One call method for both inputs: JSON text and a parsed value meet the
/// same schema and the same budget, and answer the same report.
#[tokio::test]
async fn text_and_a_value_are_one_call_checked_alike() {
    let registry = ToolRegistry::with_budgets(
        crate::tools::SchemaBudget::default(),
        crate::tools::InputBudget {
            max_bytes: 64,
            max_nodes: 10,
            ..crate::tools::InputBudget::default()
        },
    );
    registry
        .register(NativeTool::new(
            "add",
            "Adds.",
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}}),
            |input| async move { Ok(json!(input["a"].as_f64().unwrap_or_default() + 1.0)) },
        ))
        .unwrap();
    let text = registry.call("add", r#"{"a": 1}"#, &cx()).await;
    let value = registry.call("add", json!({"a": 1}), &cx()).await;
    assert_eq!(text, value);
    assert_eq!(text.output, Ok(json!(2.0)));
    for wrong in [
        registry.call("add", r#"{"b": 1}"#, &cx()).await,
        registry.call("add", json!({"b": 1}), &cx()).await,
    ] {
        assert_eq!(wrong.attempts, 0);
        assert_eq!(wrong.output.unwrap_err().kind, ToolErrorKind::InvalidInput);
    }
    // Text over the budget's bytes is refused before it is parsed; text
    // and a value alike over its count of values.
    let long = json!({"a": 1, "pad": "x".repeat(100)}).to_string();
    let e = registry.call("add", &long, &cx()).await.output.unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
    assert!(e.message.contains("64 bytes"), "{e}");
    let many = json!({"a": 1, "pad": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]});
    for over in [
        registry.call("add", &many.to_string(), &cx()).await,
        registry.call("add", many, &cx()).await,
    ] {
        let e = over.output.unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e}");
        assert!(e.message.contains("10 JSON values"), "{e}");
    }
}

/// A native tool answers content parts as a plugin does: the report
/// carries them, and `output` is what a JSON-only reader is told.
#[tokio::test]
async fn a_native_tool_answers_an_image_as_a_content_part() {
    let registry = ToolRegistry::new();
    registry
        .register(NativeTool::new(
            "dot",
            "Draws a dot.",
            json!({"type": "object"}),
            |_| async move {
                Ok(ToolOutput {
                    structured: None,
                    content: vec![crate::tools::Content::Image {
                        media_type: "image/png".into(),
                        data: b"PNG".to_vec(),
                    }],
                })
            },
        ))
        .unwrap();
    let report = registry.call("dot", "{}", &cx()).await;
    assert!(!report.structured);
    assert_eq!(
        report.content,
        [crate::tools::Content::Image {
            media_type: "image/png".into(),
            data: b"PNG".to_vec(),
        }]
    );
    assert_eq!(report.output.unwrap()["content"][0]["type"], "image");
}
