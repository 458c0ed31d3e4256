//! Property tests: random responses, caps and policies never break the
//! invariant or a cap.

use std::num::NonZeroUsize;

use futures::StreamExt;
use proptest::prelude::*;

use super::scripted::{Scripted, block_on, registry, strict_provider_accepts};
use crate::llm::{AssistantMessage, Message, ToolCall, ToolChoice};
use crate::runner::{
    CallStatus, DynamicTools, OnMaxIterations, OverLimitPolicy, RunErrorKind, RunItem,
    RunnerConfig, StopReason, ToolRunner, ToolSelection,
};

fn call_strategy() -> impl Strategy<Value = ToolCall> {
    (
        prop::sample::select(vec!["call_0", "call_1", "a", ""]),
        prop::sample::select(vec!["echo", "fail", "extra", "missing", "tool_search"]),
        prop::sample::select(vec![
            r#"{"x":1}"#,
            r#"{"query":"fail"}"#,
            r#"{ "x" : 1 }"#,
            r#"{"x":"#,
            "",
            r#"{"x":"s"}"#,
            "[1]",
        ]),
    )
        .prop_map(|(id, name, args)| ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args.to_owned(),
            signature: None,
        })
}

/// A model turn, or `Err` for a provider failure (rare).
fn response_strategy() -> impl Strategy<Value = Result<AssistantMessage, String>> {
    prop_oneof![
        12 => (prop::collection::vec(call_strategy(), 0..6), any::<bool>()).prop_map(|(tool_calls, talk)| {
            Ok(AssistantMessage {
                content: if talk { "thinking".into() } else { String::new() },
                tool_calls,
                reasoning: None,
                provider_blocks: Vec::new(),
            })
        }),
        1 => Just(Err("boom".to_owned())),
    ]
}

fn config_strategy() -> impl Strategy<Value = RunnerConfig> {
    (
        0u32..6,
        prop::option::of(0usize..4),
        prop::sample::select(vec![
            OverLimitPolicy::Fail,
            OverLimitPolicy::Drop,
            OverLimitPolicy::Decline,
        ]),
        prop::option::of(0u64..8),
        any::<bool>(),
        1usize..4,
        prop::sample::select(vec![OnMaxIterations::Stop, OnMaxIterations::FinalAnswer]),
        prop::option::of(1usize..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                iters,
                per_response,
                policy,
                total,
                parallel,
                conc,
                on_max,
                repeat,
                dynamic,
                search,
            )| {
                RunnerConfig {
                    max_iterations: iters,
                    max_calls_per_response: per_response,
                    over_limit: policy,
                    max_total_calls: total,
                    parallel,
                    max_concurrency: NonZeroUsize::new(conc).unwrap_or(NonZeroUsize::MIN),
                    on_max_iterations: on_max,
                    max_repeated_failures: repeat.and_then(NonZeroUsize::new),
                    stream: false,
                    tools: ToolSelection::Named(vec!["echo".into(), "fail".into()]),
                    dynamic_tools: dynamic.then(|| DynamicTools::new(["extra"])),
                    // `fail` held back until a search finds it.
                    tool_search: search.then(|| {
                        crate::runner::ToolSearch::deferring([crate::approval::ToolPattern::new(
                            "fail",
                        )
                        .unwrap()])
                    }),
                    tool_options: Default::default(),
                    generation: Default::default(),
                    approval: Default::default(),
                    max_media_bytes: crate::runner::DEFAULT_MAX_MEDIA_BYTES,
                    task_pause: None,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn invariant_and_caps_hold(
        script in prop::collection::vec(response_strategy(), 0..10),
        config in config_strategy(),
    ) {
        let provider = Scripted::new(script);
        let mut run = ToolRunner::new(provider.clone(), registry(), config.clone(), vec![Message::user("go")]);
        let mut executed_total = 0u64;
        let end = block_on(async {
            while let Some(item) = run.next().await {
                match item {
                    Ok(RunItem::Iteration(it)) => {
                        // Every stored call is answered, in call order.
                        let ids: Vec<&str> = it.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
                        let answered: Vec<&str> = it.calls.iter().map(|c| c.result.tool_call_id.as_str()).collect();
                        prop_assert_eq!(&ids, &answered);
                        let executed = it.calls.iter()
                            .filter(|c| matches!(c.status, CallStatus::Succeeded | CallStatus::Failed))
                            .count();
                        if let Some(cap) = config.max_calls_per_response {
                            prop_assert!(executed <= cap);
                            if config.over_limit == OverLimitPolicy::Drop {
                                prop_assert!(it.message.tool_calls.len() <= cap);
                            }
                        }
                        if it.final_answer {
                            prop_assert!(it.message.tool_calls.is_empty());
                        }
                        executed_total += executed as u64;
                        if let Some(max) = config.max_total_calls {
                            prop_assert!(executed_total <= max);
                        }
                        prop_assert!(it.number <= config.max_iterations + 1);
                    }
                    Ok(RunItem::Finished(outcome)) => return Ok(Ok(outcome)),
                    Err(e) => return Ok(Err(e)),
                }
            }
            Err(TestCaseError::fail("the stream ended without a last item"))
        })?;
        let outcome = match &end {
            Ok(outcome) => outcome,
            Err(e) => {
                prop_assert!(matches!(e.kind, RunErrorKind::Provider { .. } | RunErrorKind::OverLimit { .. }), "{:?}", e);
                &*e.outcome
            }
        };
        prop_assert_eq!(strict_provider_accepts(&outcome.messages), Ok(()));
        prop_assert!(outcome.iterations <= config.max_iterations);
        prop_assert_eq!(outcome.tool_calls, executed_total);
        if let Some(max) = config.max_total_calls {
            prop_assert!(outcome.tool_calls <= max);
        }
        let violations = provider.violations.lock().map(|v| v.clone()).unwrap_or_default();
        prop_assert!(violations.is_empty(), "{:?}", violations);
        let seen = provider.seen();
        let allowed = config.max_iterations as usize
            + usize::from(config.on_max_iterations == OnMaxIterations::FinalAnswer);
        prop_assert!(seen.len() <= allowed, "{} requests", seen.len());
        let toolless = seen.iter().filter(|s| s.tool_choice == ToolChoice::None).count();
        prop_assert!(toolless <= 1);
        if outcome.stop_reason == StopReason::Completed {
            prop_assert!(matches!(outcome.messages.last(), Some(Message::Assistant(a)) if a.tool_calls.is_empty()));
        }
    }
}
