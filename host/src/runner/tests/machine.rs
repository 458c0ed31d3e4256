//! The state machine alone: no provider, no tools, no async.

use std::num::NonZeroUsize;

use crate::llm::{AssistantMessage, ToolCall};
use crate::runner::machine::{
    CallOutcome, CallReport, Disposition, LoopState, Next, Verdict, normalize_arguments,
};
use crate::runner::{OnMaxIterations, OverLimitPolicy, RunnerConfig, StopReason};

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: args.to_owned(),
        signature: None,
    }
}

fn response(n: usize) -> AssistantMessage {
    AssistantMessage {
        tool_calls: (0..n).map(|i| call(&format!("c{i}"), "t", "{}")).collect(),
        ..Default::default()
    }
}

fn all_offered(_: &str) -> bool {
    true
}

const REQUEST: Next = Next::Request {
    final_answer: false,
};

#[test]
fn stops_at_max_iterations_under_stop() {
    let config = RunnerConfig {
        max_iterations: 2,
        ..RunnerConfig::default()
    };
    let mut state = LoopState::new();
    for _ in 0..2 {
        assert_eq!(state.next(&config), REQUEST);
        let plan = state.plan(&config, &mut response(1), all_offered);
        assert_eq!(plan.verdict, Verdict::Continue);
    }
    assert_eq!(state.next(&config), Next::Finish(StopReason::MaxIterations));
    assert_eq!(state.iterations(), 2);
    assert_eq!(state.total_calls(), 2);
}

#[test]
fn final_answer_sends_one_toolless_request_and_drops_its_calls() {
    let config = RunnerConfig {
        max_iterations: 1,
        on_max_iterations: OnMaxIterations::FinalAnswer,
        ..RunnerConfig::default()
    };
    let mut state = LoopState::new();
    assert_eq!(state.next(&config), REQUEST);
    state.plan(&config, &mut response(1), all_offered);
    assert_eq!(state.next(&config), Next::Request { final_answer: true });
    let mut last = response(2);
    let plan = state.plan(&config, &mut last, all_offered);
    assert!(last.tool_calls.is_empty());
    assert_eq!(plan.dropped.len(), 2);
    assert_eq!(plan.verdict, Verdict::Stop(StopReason::MaxIterations));
    assert_eq!(state.next(&config), Next::Finish(StopReason::MaxIterations));
    assert_eq!(
        state.iterations(),
        1,
        "the final request is not an iteration"
    );
}

#[test]
fn a_response_without_calls_completes() {
    let config = RunnerConfig::default();
    let mut state = LoopState::new();
    state.next(&config);
    let plan = state.plan(&config, &mut response(0), all_offered);
    assert_eq!(plan.verdict, Verdict::Stop(StopReason::Completed));
    assert_eq!(state.next(&config), Next::Finish(StopReason::Completed));
}

fn capped(policy: OverLimitPolicy) -> RunnerConfig {
    RunnerConfig {
        max_calls_per_response: Some(2),
        over_limit: policy,
        ..RunnerConfig::default()
    }
}

#[test]
fn decline_keeps_extra_calls_and_declines_them() {
    let config = capped(OverLimitPolicy::Decline);
    let mut state = LoopState::new();
    let mut message = response(4);
    let plan = state.plan(&config, &mut message, all_offered);
    assert_eq!(message.tool_calls.len(), 4);
    assert_eq!(
        plan.dispositions[..2],
        [Disposition::Execute, Disposition::Execute]
    );
    for d in &plan.dispositions[2..] {
        let Disposition::Decline(text) = d else {
            panic!("expected a decline, got {d:?}")
        };
        assert!(
            text.contains("limit of 2 tool calls per response"),
            "{text}"
        );
    }
    assert_eq!(state.total_calls(), 2);
}

#[test]
fn drop_removes_extra_calls_from_the_message() {
    let config = capped(OverLimitPolicy::Drop);
    let mut state = LoopState::new();
    let mut message = response(4);
    let plan = state.plan(&config, &mut message, all_offered);
    let kept: Vec<&str> = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
    let dropped: Vec<&str> = plan.dropped.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(kept, ["c0", "c1"]);
    assert_eq!(dropped, ["c2", "c3"]);
    assert_eq!(
        plan.dispositions,
        [Disposition::Execute, Disposition::Execute]
    );
}

#[test]
fn fail_rejects_the_response_without_counting_it() {
    let config = capped(OverLimitPolicy::Fail);
    let mut state = LoopState::new();
    let plan = state.plan(&config, &mut response(3), all_offered);
    assert_eq!(plan.verdict, Verdict::OverLimit { count: 3, limit: 2 });
    assert_eq!((state.iterations(), state.total_calls()), (0, 0));
    assert_eq!(state.next(&config), Next::Finish(StopReason::OverLimit));
    // At the limit is fine.
    let mut state = LoopState::new();
    let plan = state.plan(&config, &mut response(2), all_offered);
    assert_eq!(plan.verdict, Verdict::Continue);
}

#[test]
fn calls_to_tools_not_offered_are_unavailable_and_not_counted() {
    let config = RunnerConfig::default();
    let mut state = LoopState::new();
    let mut message = AssistantMessage {
        tool_calls: vec![call("a", "here", "{}"), call("b", "gone", "{}")],
        ..Default::default()
    };
    let plan = state.plan(&config, &mut message, |name| name == "here");
    assert_eq!(plan.dispositions[0], Disposition::Execute);
    let Disposition::Unavailable(text) = &plan.dispositions[1] else {
        panic!("{:?}", plan.dispositions)
    };
    assert!(
        text.contains("tool `gone` is not available in this step"),
        "{text}"
    );
    assert_eq!(state.total_calls(), 1);
}

#[test]
fn total_call_budget_declines_then_stops() {
    for policy in [OverLimitPolicy::Decline, OverLimitPolicy::Drop] {
        let config = RunnerConfig {
            max_total_calls: Some(3),
            over_limit: policy,
            ..RunnerConfig::default()
        };
        let mut state = LoopState::new();
        assert_eq!(state.next(&config), REQUEST);
        state.plan(&config, &mut response(2), all_offered);
        assert_eq!(state.next(&config), REQUEST);
        let mut message = response(3);
        let plan = state.plan(&config, &mut message, all_offered);
        assert_eq!(state.total_calls(), 3);
        match policy {
            OverLimitPolicy::Drop => {
                assert_eq!(message.tool_calls.len(), 1);
                assert_eq!(plan.dropped.len(), 2);
            }
            _ => {
                assert_eq!(message.tool_calls.len(), 3);
                assert!(
                    matches!(&plan.dispositions[2], Disposition::Decline(t) if t.contains("limit of 3 tool calls per run")),
                    "{:?}",
                    plan.dispositions
                );
            }
        }
        assert_eq!(state.next(&config), Next::Finish(StopReason::MaxTotalCalls));
    }
}

#[test]
fn duplicate_ids_in_one_response_are_renamed() {
    let config = RunnerConfig::default();
    let mut state = LoopState::new();
    let mut message = AssistantMessage {
        tool_calls: vec![call("call_0", "t", "{}"), call("call_0", "t", "{}")],
        ..Default::default()
    };
    state.plan(&config, &mut message, all_offered);
    assert_eq!(message.tool_calls[0].id, "call_0");
    assert_eq!(message.tool_calls[1].id, "call_0_2");
}

fn failing<'a>(c: &'a ToolCall, error: &'a str) -> CallReport<'a> {
    CallReport {
        call: c,
        outcome: CallOutcome::Failed(error),
    }
}

#[test]
fn the_same_failing_call_three_times_in_a_row_stops() {
    let config = RunnerConfig::default();
    assert_eq!(config.max_repeated_failures, NonZeroUsize::new(3));
    let mut state = LoopState::new();
    let a = call("x", "t", r#"{"a": 1, "b": [1, 2]}"#);
    let same = call("y", "t", r#"{"b":[1,2],"a":1}"#);
    assert_eq!(state.record(&config, [failing(&a, "boom")]), None);
    assert_eq!(state.record(&config, [failing(&same, "boom")]), None);
    assert_eq!(
        state.record(&config, [failing(&a, "boom")]),
        Some(StopReason::RepeatedFailure)
    );
    assert_eq!(
        state.next(&config),
        Next::Finish(StopReason::RepeatedFailure)
    );
}

#[test]
fn a_success_or_a_different_failure_breaks_the_streak() {
    let config = RunnerConfig::default();
    let mut state = LoopState::new();
    let a = call("x", "t", "{}");
    let b = call("x", "t", r#"{"a":2}"#);
    let ok = CallReport {
        call: &a,
        outcome: CallOutcome::Succeeded,
    };
    let declined = CallReport {
        call: &b,
        outcome: CallOutcome::Declined,
    };
    for reports in [
        vec![
            failing(&a, "e"),
            failing(&a, "e"),
            ok,
            failing(&a, "e"),
            failing(&a, "e"),
        ],
        vec![failing(&b, "e"), failing(&a, "e"), failing(&a, "other")],
    ] {
        assert_eq!(state.record(&config, reports), None);
    }
    // Declined calls do not break a streak: a, a, declined, a.
    let mut state = LoopState::new();
    assert_eq!(
        state.record(
            &config,
            [
                failing(&a, "e"),
                failing(&a, "e"),
                declined,
                failing(&a, "e")
            ]
        ),
        Some(StopReason::RepeatedFailure)
    );
    // None never stops.
    let config = RunnerConfig {
        max_repeated_failures: None,
        ..RunnerConfig::default()
    };
    let mut state = LoopState::new();
    assert_eq!(state.record(&config, vec![failing(&a, "e"); 10]), None);
}

#[test]
fn arguments_are_normalized_up_to_json_formatting() {
    assert_eq!(
        normalize_arguments(r#" { "b" : {"d":1,"c":[true,null]}, "a":"x" } "#),
        r#"{"a":"x","b":{"c":[true,null],"d":1}}"#
    );
    assert_eq!(normalize_arguments(" {oops "), "{oops");
}
