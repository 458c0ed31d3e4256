//! The driver with a scripted provider and native tools.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::scripted::{Scripted, block_on, calls, registry, text};
use crate::approval::Decision;
use crate::llm::{Message, ToolChoice};
use crate::runner::{
    CallStatus, DynamicTools, OnMaxIterations, OverLimitPolicy, RunErrorKind, RunItem,
    RunnerConfig, StopReason, ToolRunner, ToolSelection,
};
use crate::tools::{CallContext, SessionId, Tool, ToolError, ToolOutput, ToolRegistry, ToolSpec};

fn runner(provider: &Arc<Scripted>, config: RunnerConfig) -> ToolRunner {
    ToolRunner::new(
        provider.clone(),
        registry(),
        config,
        vec![Message::system("be brief"), Message::user("go")],
    )
}

fn results(messages: &[Message]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some((r.tool_call_id.clone(), r.is_error)),
            _ => None,
        })
        .collect()
}

#[test]
fn runs_calls_then_completes() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", r#"{"x":1}"#), ("b", "fail", "{}")])),
        Ok(text("done")),
    ]);
    let outcome = block_on(runner(&provider, RunnerConfig::default())).expect("run");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    assert_eq!(outcome.final_text, "done");
    assert_eq!((outcome.iterations, outcome.tool_calls), (2, 2));
    assert_eq!(outcome.usage.input_tokens, 20);
    assert_eq!(
        results(&outcome.messages),
        [("a".into(), false), ("b".into(), true)]
    );
    let Message::Tool(failed) = &outcome.messages[4] else {
        panic!("{:?}", outcome.messages)
    };
    assert_eq!(failed.content, "tool_failed: it broke");
    assert!(provider.violations.lock().expect("lock").is_empty());
}

#[test]
fn bad_arguments_and_unknown_tools_become_error_results() {
    let provider = Scripted::new(vec![
        Ok(calls(&[
            ("a", "echo", r#"{"x":"#),
            ("b", "echo", r#"{"x":"not a number"}"#),
            ("c", "nope", "{}"),
        ])),
        Ok(text("ok")),
    ]);
    let outcome = block_on(runner(&provider, RunnerConfig::default())).expect("run");
    let contents: Vec<String> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) if r.is_error => Some(r.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert!(
        contents[0].starts_with("invalid_input: the input is not valid JSON"),
        "{}",
        contents[0]
    );
    assert!(
        contents[1].starts_with("invalid_input: the input does not match"),
        "{}",
        contents[1]
    );
    assert!(
        contents[2].contains("tool `nope` is not available"),
        "{}",
        contents[2]
    );
    assert_eq!(outcome.tool_calls, 2, "the unknown tool is not executed");
}

#[test]
fn parallel_calls_respect_the_bound_and_keep_call_order() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let (flight, top) = (in_flight.clone(), peak.clone());
    registry
        .register(crate::tools::NativeTool::new(
            "wait",
            "Waits.",
            json!({"type": "object"}),
            move |input: Value| {
                let (flight, top) = (flight.clone(), top.clone());
                async move {
                    let now = flight.fetch_add(1, Ordering::SeqCst) + 1;
                    top.fetch_max(now, Ordering::SeqCst);
                    let ms = input["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    flight.fetch_sub(1, Ordering::SeqCst);
                    Ok(input)
                }
            },
        ))
        .expect("register");
    let registry = Arc::new(registry);
    let batch: Vec<(String, String)> = (0..6)
        .map(|i| (format!("c{i}"), format!(r#"{{"ms":{}}}"#, 60 - i * 10)))
        .collect();
    let list: Vec<(&str, &str, &str)> = batch
        .iter()
        .map(|(id, a)| (id.as_str(), "wait", a.as_str()))
        .collect();
    for (parallel, bound) in [(true, 3), (false, 8)] {
        peak.store(0, Ordering::SeqCst);
        let provider = Scripted::new(vec![Ok(calls(&list)), Ok(text("done"))]);
        let config = RunnerConfig {
            parallel,
            max_concurrency: std::num::NonZeroUsize::new(bound).expect("nonzero"),
            ..RunnerConfig::default()
        };
        let outcome = block_on(ToolRunner::new(
            provider,
            registry.clone(),
            config,
            vec![Message::user("go")],
        ))
        .expect("run");
        let ids: Vec<String> = results(&outcome.messages)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5"]);
        let expected_peak = if parallel { bound } else { 1 };
        assert_eq!(
            peak.load(Ordering::SeqCst),
            expected_peak,
            "parallel={parallel}"
        );
    }
}

#[test]
fn over_limit_fail_returns_an_error_with_a_valid_conversation() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", "{}")])),
        Ok(calls(&[
            ("a", "echo", "{}"),
            ("b", "echo", "{}"),
            ("c", "echo", "{}"),
        ])),
    ]);
    let config = RunnerConfig {
        max_calls_per_response: Some(2),
        over_limit: OverLimitPolicy::Fail,
        ..RunnerConfig::default()
    };
    let err = block_on(runner(&provider, config)).expect_err("must fail");
    assert!(
        err.to_string()
            .contains("3 tool calls in one response, over the limit of 2"),
        "{err}"
    );
    let RunErrorKind::OverLimit {
        count,
        limit,
        response,
    } = &err.kind
    else {
        panic!("{err:?}")
    };
    assert_eq!((*count, *limit, response.tool_calls.len()), (3, 2, 3));
    assert_eq!(err.outcome.stop_reason, StopReason::OverLimit);
    assert_eq!(
        err.messages().len(),
        4,
        "system, user, first call and its result"
    );
    assert_eq!(crate::llm::check_messages(err.messages()), Ok(()));
}

#[test]
fn a_provider_error_ends_the_run_with_the_conversation_so_far() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", "{}")])),
        Err("overloaded".into()),
    ]);
    let err = block_on(runner(&provider, RunnerConfig::default())).expect_err("must fail");
    let RunErrorKind::Provider { iteration, source } = &err.kind else {
        panic!("{err:?}")
    };
    assert_eq!(*iteration, 2);
    assert!(source.to_string().contains("overloaded"));
    assert_eq!(err.outcome.stop_reason, StopReason::Error);
    assert_eq!(results(err.messages()), [("a".into(), false)]);
    assert_eq!(err.outcome.iterations, 1);
}

#[test]
fn final_answer_disables_tools_for_one_last_request() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", "{}")])),
        Ok(calls(&[("a", "echo", "{}")])),
        Ok({
            let mut m = calls(&[("z", "echo", "{}")]);
            m.content = "the answer".into();
            m
        }),
    ]);
    let config = RunnerConfig {
        max_iterations: 2,
        on_max_iterations: OnMaxIterations::FinalAnswer,
        ..RunnerConfig::default()
    };
    let outcome = block_on(runner(&provider, config)).expect("run");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    assert_eq!(outcome.final_text, "the answer");
    let seen = provider.seen();
    let choices: Vec<ToolChoice> = seen.iter().map(|s| s.tool_choice.clone()).collect();
    assert_eq!(
        choices,
        [ToolChoice::Auto, ToolChoice::Auto, ToolChoice::None]
    );
    assert!(!seen[2].tools.is_empty(), "tools stay declared");
    let Some(Message::Assistant(last)) = outcome.messages.last() else {
        panic!("{:?}", outcome.messages)
    };
    assert!(
        last.tool_calls.is_empty(),
        "the final answer's calls are dropped"
    );
}

#[test]
fn set_params_and_push_messages_apply_between_iterations() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "extra", "{}")])),
        Ok(calls(&[("a", "extra", "{}")])),
        Ok(text("done")),
    ]);
    let config = RunnerConfig {
        tools: ToolSelection::Named(vec!["echo".into()]),
        ..RunnerConfig::default()
    };
    let mut run = runner(&provider, config);
    block_on(async {
        let Some(Ok(RunItem::Iteration(first))) = run.next().await else {
            panic!("no first iteration")
        };
        assert_eq!(first.calls[0].status, CallStatus::Unavailable);
        run.set_params(|c: &mut RunnerConfig| {
            c.dynamic_tools = Some(DynamicTools::new(["extra"]));
        });
        run.push_messages([Message::user("you may use extra now")]);
        let Some(Ok(RunItem::Iteration(second))) = run.next().await else {
            panic!("no second iteration")
        };
        assert_eq!(second.calls[0].status, CallStatus::Succeeded);
        let outcome = run.await.expect("run");
        assert_eq!(outcome.stop_reason, StopReason::Completed);
    });
    let seen = provider.seen();
    assert_eq!(seen[0].tools, [("echo".to_owned(), "Echoes.".to_owned())]);
    assert_eq!(
        seen[1].tools,
        [
            ("echo".to_owned(), "Echoes.".to_owned()),
            (
                "extra".to_owned(),
                "Extra. (added for this step)".to_owned()
            )
        ]
    );
    assert!(
        matches!(seen[1].messages.last(), Some(Message::User { content, .. }) if content == "you may use extra now")
    );
}

#[test]
fn the_stream_ends_after_its_last_item_and_cannot_be_rerun() {
    let provider = Scripted::new(vec![Ok(text("hi"))]);
    let mut run = runner(&provider, RunnerConfig::default());
    block_on(async {
        assert!(matches!(run.next().await, Some(Ok(RunItem::Iteration(_)))));
        assert!(matches!(run.next().await, Some(Ok(RunItem::Finished(_)))));
        assert!(run.next().await.is_none());
        let err = run.await.expect_err("already finished");
        assert!(matches!(err.kind, RunErrorKind::AlreadyFinished), "{err:?}");
    });
    assert_eq!(provider.seen().len(), 1);
}

#[test]
fn a_pushed_message_that_breaks_the_invariant_is_never_sent() {
    let provider = Scripted::new(vec![Ok(calls(&[("a", "echo", "{}")])), Ok(text("x"))]);
    let mut run = runner(&provider, RunnerConfig::default());
    let err = block_on(async {
        assert!(matches!(run.next().await, Some(Ok(RunItem::Iteration(_)))));
        run.push_messages([Message::Tool(crate::llm::ToolResult {
            tool_call_id: "ghost".into(),
            name: "echo".into(),
            content: "{}".into(),
            is_error: false,
            parts: Vec::new(),
        })]);
        run.await.expect_err("invariant")
    });
    assert!(matches!(err.kind, RunErrorKind::Invariant(_)), "{err:?}");
    assert_eq!(
        provider.seen().len(),
        1,
        "the broken conversation was not sent"
    );
}

#[test]
fn approval_can_refuse_a_call() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "echo", r#"{"x":1}"#), ("b", "fail", "{}")])),
        Ok(text("done")),
    ]);
    let seen_results = Arc::new(Mutex::new(Vec::new()));
    let sink = seen_results.clone();
    let outcome = block_on(
        runner(&provider, RunnerConfig::default())
            .on_tool_call(|call| match call.name.as_str() {
                "fail" => Decision::deny("the host", "not today"),
                _ => Decision::Approve,
            })
            .on_tool_result(move |record| {
                sink.lock()
                    .expect("lock")
                    .push((record.call.id.clone(), record.status))
            }),
    )
    .expect("run");
    assert_eq!(
        *seen_results.lock().expect("lock"),
        [
            ("a".to_owned(), CallStatus::Succeeded),
            ("b".to_owned(), CallStatus::Refused)
        ]
    );
    assert_eq!(
        outcome.tool_calls, 2,
        "counted when admitted, even if refused later"
    );
    let Message::Tool(refused) = &outcome.messages[4] else {
        panic!()
    };
    assert!(
        refused.content.contains("refused this call: not today"),
        "{}",
        refused.content
    );
}

/// A tool that records the sessions it is called in and ended.
struct SessionSpy {
    spec: ToolSpec,
    calls: Arc<Mutex<Vec<SessionId>>>,
    ended: Arc<Mutex<Vec<SessionId>>>,
}

impl Tool for SessionSpy {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call(
        &self,
        _input: Value,
        cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        if let Some(s) = &cx.session {
            self.calls.lock().expect("lock").push(s.clone());
        }
        Box::pin(async { Ok(json!(null).into()) })
    }
    fn end_session(&self, session: &SessionId) {
        self.ended.lock().expect("lock").push(session.clone());
    }
}

#[test]
fn one_session_per_run_and_it_is_ended() {
    let calls_seen = Arc::new(Mutex::new(Vec::new()));
    let ended = Arc::new(Mutex::new(Vec::new()));
    let registry = ToolRegistry::new();
    registry
        .register(SessionSpy {
            spec: ToolSpec {
                name: "spy".into(),
                description: "Spies.".into(),
                input_schema: json!({"type": "object"}),
            },
            calls: calls_seen.clone(),
            ended: ended.clone(),
        })
        .expect("register");
    let registry = Arc::new(registry);
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let provider = Scripted::new(vec![
            Ok(calls(&[("a", "spy", "{}")])),
            Ok(calls(&[("a", "spy", "{}")])),
            Ok(text("done")),
        ]);
        let run = ToolRunner::new(
            provider,
            registry.clone(),
            RunnerConfig::default(),
            vec![Message::user("go")],
        );
        sessions.push(run.session().clone());
        block_on(run).expect("run");
    }
    assert_ne!(sessions[0], sessions[1]);
    let expected: Vec<SessionId> = vec![
        sessions[0].clone(),
        sessions[0].clone(),
        sessions[1].clone(),
        sessions[1].clone(),
    ];
    assert_eq!(*calls_seen.lock().expect("lock"), expected);
    assert_eq!(*ended.lock().expect("lock"), sessions);
}
