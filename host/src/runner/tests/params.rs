//! Generation parameters per run and per request, and a run's answer
//! taken only from what it produced.

use std::sync::{Arc, Mutex};

use super::scripted::{Scripted, block_on, calls, registry, text};
use crate::llm::{AssistantMessage, GenerationParams, Message, ToolChoice};
use crate::runner::{
    OnMaxIterations, OverLimitPolicy, RunErrorKind, RunnerConfig, StopReason, ToolRunner,
};

/// A history whose last assistant message is an old answer.
fn history() -> Vec<Message> {
    vec![
        Message::user("earlier question"),
        Message::Assistant(AssistantMessage {
            content: "the OLD answer".into(),
            ..AssistantMessage::default()
        }),
        Message::user("new question"),
    ]
}

#[test]
fn a_run_failing_before_the_first_reply_has_no_answer_from_its_history() {
    let provider = Scripted::new(vec![Err("provider down".into())]);
    let err = block_on(ToolRunner::new(
        provider.clone(),
        registry(),
        RunnerConfig::default(),
        history(),
    ))
    .expect_err("the provider fails");
    assert!(matches!(err.kind, RunErrorKind::Provider { .. }), "{err}");
    assert_eq!(err.outcome.final_text, "");
    assert_eq!(err.outcome.final_message(), None);
    assert_eq!(err.outcome.history_len, 3);
    assert!(err.outcome.added().is_empty());
    assert_eq!(err.outcome.messages, history());
}

#[test]
fn a_response_refused_over_the_limit_leaves_no_answer_from_the_history() {
    let provider = Scripted::new(vec![Ok({
        let mut m = calls(&[("a", "echo", "{}"), ("b", "echo", "{}")]);
        m.content = "calling two".into();
        m
    })]);
    let config = RunnerConfig {
        max_calls_per_response: Some(1),
        over_limit: OverLimitPolicy::Fail,
        ..RunnerConfig::default()
    };
    let err = block_on(ToolRunner::new(provider, registry(), config, history()))
        .expect_err("over the limit");
    assert_eq!(err.outcome.stop_reason, StopReason::OverLimit);
    assert_eq!(err.outcome.final_text, "");
    assert_eq!(err.outcome.final_message(), None);
}

#[test]
fn a_run_that_replies_answers_with_its_own_text() {
    let provider = Scripted::new(vec![Ok(calls(&[("a", "echo", "{}")])), Ok(text("new"))]);
    let outcome = block_on(ToolRunner::new(
        provider,
        registry(),
        RunnerConfig::default(),
        history(),
    ))
    .expect("run");
    assert_eq!(outcome.final_text, "new");
    assert_eq!(outcome.added().len(), 3);
    // At the cap with Stop, the answer is this run's last message (no
    // text), not the history's.
    let provider = Scripted::new(vec![Ok(calls(&[("a", "echo", "{}")]))]);
    let config = RunnerConfig {
        max_iterations: 1,
        ..RunnerConfig::default()
    };
    let outcome = block_on(ToolRunner::new(provider, registry(), config, history())).expect("run");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    assert_eq!(outcome.final_text, "");
    assert!(outcome.final_message().is_some());
}

#[test]
fn run_params_reach_every_request_and_on_request_changes_one() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", "{}")])),
        Ok(calls(&[("b", "echo", "{}")])),
        Ok(text("done")),
    ]);
    let config = RunnerConfig {
        generation: GenerationParams {
            temperature: Some(0.0),
            max_output_tokens: Some(256),
            ..GenerationParams::default()
        },
        ..RunnerConfig::default()
    };
    let told = Arc::new(Mutex::new(Vec::new()));
    let log = told.clone();
    let outcome = block_on(
        ToolRunner::new(provider.clone(), registry(), config, history()).on_request(
            move |request, params| {
                log.lock().expect("lock").push((
                    request.number,
                    request.final_answer,
                    request.tools.len(),
                ));
                if request.number == 2 {
                    params.tool_choice = ToolChoice::Tool("echo".into());
                    params.temperature = Some(0.7);
                }
            },
        ),
    )
    .expect("run");
    assert_eq!(outcome.final_text, "done");
    let seen = provider.seen();
    let temperatures: Vec<_> = seen.iter().map(|s| s.params.temperature).collect();
    assert_eq!(temperatures, [Some(0.0), Some(0.7), Some(0.0)]);
    let choices: Vec<_> = seen.iter().map(|s| s.tool_choice.clone()).collect();
    assert_eq!(
        choices,
        [
            ToolChoice::Auto,
            ToolChoice::Tool("echo".into()),
            ToolChoice::Auto
        ]
    );
    assert!(seen.iter().all(|s| s.params.max_output_tokens == Some(256)));
    let told = told.lock().expect("lock").clone();
    assert_eq!(told.len(), 3);
    assert!(told.iter().all(|(_, last, tools)| !last && *tools > 0));
}

#[test]
fn the_final_answer_request_forbids_tools_whatever_the_user_chose() {
    let provider = Scripted::new(vec![Ok(calls(&[("a", "echo", "{}")])), Ok(text("summary"))]);
    let config = RunnerConfig {
        max_iterations: 1,
        on_max_iterations: OnMaxIterations::FinalAnswer,
        generation: GenerationParams {
            tool_choice: ToolChoice::Required,
            parallel_tool_calls: Some(false),
            ..GenerationParams::default()
        },
        ..RunnerConfig::default()
    };
    let outcome = block_on(
        ToolRunner::new(provider.clone(), registry(), config, history())
            // A callback cannot undo it either.
            .on_request(|_, params| params.tool_choice = ToolChoice::Tool("echo".into())),
    )
    .expect("run");
    assert_eq!(outcome.final_text, "summary");
    let seen = provider.seen();
    assert_eq!(seen[0].tool_choice, ToolChoice::Tool("echo".into()));
    assert_eq!(seen[0].params.parallel_tool_calls, Some(false));
    assert_eq!(seen[1].tool_choice, ToolChoice::None);
    assert_eq!(seen[1].params.parallel_tool_calls, None);
}
