//! The capped loop end to end: the real provider clients against the
//! loopback fakes (which reject what the real providers reject, above all a
//! tool call without its result), native tools, every cap and failure.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolhost::llm::{Message, Provider, ProviderKind, ProviderOptions};
use toolhost::runner::{
    CallStatus, DynamicTools, OnMaxIterations, OverLimitPolicy, RunErrorKind, RunItem, RunOutcome,
    RunnerConfig, StopReason, ToolRunner, ToolSelection,
};
use toolhost::tools::{
    Backoff, ExecOptions, ExecOverrides, NativeTool, ToolError, ToolErrorKind, ToolRegistry,
};
use toolhost_tests::providers::{FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, Reply, Turn};

mod content;
mod generation;
mod opening;
mod search;

fn provider(kind: ProviderKind, url: String) -> Arc<dyn Provider> {
    kind.build(ProviderOptions {
        base_url: Some(url),
        model: Some("test-model".into()),
        api_key: Some("test-key".into()),
        ..ProviderOptions::default()
    })
    .expect("a provider for the fake server")
}

/// `add` adds; `sleep` waits `ms` then returns them; `broken` always fails;
/// `slow` never finishes in time (50 ms registry timeout); `extra` is for
/// dynamic tool tests.
fn registry() -> Arc<ToolRegistry> {
    let r = ToolRegistry::new();
    r.register(NativeTool::new(
        "add",
        "Adds a and b.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
               "required": ["a", "b"]}),
        |input: Value| async move {
            Ok(json!(
                input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0)
            ))
        },
    ))
    .expect("add");
    r.register(NativeTool::new(
        "sleep",
        "Waits ms milliseconds.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        |input: Value| async move {
            let ms = input["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(json!({"slept": ms}))
        },
    ))
    .expect("sleep");
    r.register(NativeTool::new(
        "broken",
        "Always fails.",
        json!({"type": "object"}),
        |_| async move { Err::<Value, _>(ToolError::failed("the disk is on fire")) },
    ))
    .expect("broken");
    r.register_with(
        Arc::new(NativeTool::new(
            "slow",
            "Takes forever.",
            json!({"type": "object"}),
            |_| async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(json!("never"))
            },
        )),
        ExecOptions {
            timeout: Some(Duration::from_millis(50)),
            ..ExecOptions::default()
        },
    )
    .expect("slow");
    r.register(NativeTool::new(
        "extra",
        "An extra tool.",
        json!({"type": "object"}),
        |_| async move { Ok(json!("extra!")) },
    ))
    .expect("extra");
    Arc::new(r)
}

fn run(provider: Arc<dyn Provider>, config: RunnerConfig) -> ToolRunner {
    ToolRunner::new(
        provider,
        registry(),
        config,
        vec![Message::system("You are a test."), Message::user("go")],
    )
}

fn add(a: i64, b: i64) -> FakeCall {
    FakeCall::new("add", json!({"a": a, "b": b}))
}

/// The OpenAI `tool` messages of a request body: (tool_call_id, content).
fn openai_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn tool_results(outcome: &RunOutcome) -> Vec<(String, String, bool)> {
    outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some((r.tool_call_id.clone(), r.content.clone(), r.is_error)),
            _ => None,
        })
        .collect()
}

fn capped(limit: usize, policy: OverLimitPolicy) -> RunnerConfig {
    RunnerConfig {
        max_calls_per_response: Some(limit),
        over_limit: policy,
        ..RunnerConfig::default()
    }
}

#[tokio::test]
async fn over_the_cap_decline_answers_every_extra_call() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![add(1, 1), add(2, 2), add(3, 3)]));
    server.push(Turn::text("2, and the rest later"));
    let outcome = run(
        provider(ProviderKind::OpenAi, server.url()),
        capped(1, OverLimitPolicy::Decline),
    )
    .await
    .expect("run");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    assert_eq!(outcome.tool_calls, 1);
    let sent = openai_results(&server.bodies()[1]);
    assert_eq!(sent.len(), 3, "every call answered on the wire: {sent:?}");
    assert_eq!(sent[0].1, "2.0");
    for (_, content) in &sent[1..] {
        assert!(
            content.contains("not executed: limit of 1 tool calls per response"),
            "{content}"
        );
    }
}

#[tokio::test]
async fn over_the_cap_drop_removes_the_extra_calls_from_the_history() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![add(1, 1), add(2, 2), add(3, 3)]));
    server.push(Turn::text("2"));
    let outcome = run(
        provider(ProviderKind::OpenAi, server.url()),
        capped(2, OverLimitPolicy::Drop),
    )
    .await
    .expect("run");
    assert_eq!(outcome.tool_calls, 2);
    let body = &server.bodies()[1];
    let assistant = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "assistant"))
        .expect("an assistant message");
    assert_eq!(assistant["tool_calls"].as_array().map(Vec::len), Some(2));
    assert_eq!(openai_results(body).len(), 2);
}

#[tokio::test]
async fn over_the_cap_fail_stops_with_an_error_naming_count_and_limit() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![add(1, 1)]));
    server.push(Turn::calls(vec![add(1, 1), add(2, 2), add(3, 3)]));
    let err = run(
        provider(ProviderKind::OpenAi, server.url()),
        capped(2, OverLimitPolicy::Fail),
    )
    .await
    .expect_err("over the limit");
    let message = err.to_string();
    assert!(
        message.contains("3 tool calls") && message.contains("limit of 2"),
        "{message}"
    );
    assert!(matches!(
        err.kind,
        RunErrorKind::OverLimit {
            count: 3,
            limit: 2,
            ..
        }
    ));
    assert_eq!(err.outcome.stop_reason, StopReason::OverLimit);
    assert_eq!(
        tool_results(&err.outcome).len(),
        1,
        "the first round is kept"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn parallel_calls_are_answered_in_call_order_on_anthropic() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::calls(vec![
        FakeCall::new("sleep", json!({"ms": 150})),
        FakeCall::new("sleep", json!({"ms": 10})),
        FakeCall::new("sleep", json!({"ms": 80})),
    ]));
    server.push(Turn::text("slept"));
    let mut order = Vec::new();
    let mut stream = run(
        provider(ProviderKind::Anthropic, server.url()),
        RunnerConfig::default(),
    );
    while let Some(item) = stream.next().await {
        match item.expect("no error") {
            RunItem::Iteration(it) => order.extend(it.calls.iter().map(|c| {
                assert_eq!(c.status, CallStatus::Succeeded);
                c.result.content.clone()
            })),
            RunItem::Finished(outcome) => assert_eq!(outcome.final_text, "slept"),
        }
    }
    assert_eq!(
        order,
        [r#"{"slept":150}"#, r#"{"slept":10}"#, r#"{"slept":80}"#]
    );
    // On the wire: the results are the first blocks of the next user
    // message, in call order.
    let body = &server.bodies()[1];
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages");
    let uses: Vec<&str> = body["messages"][1]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["id"].as_str())
        .collect();
    let answered: Vec<&str> = last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert_eq!(uses.len(), 3);
    assert_eq!(uses, answered);
}

#[tokio::test]
async fn an_unknown_tool_gets_an_error_result_and_the_loop_goes_on_on_gemini() {
    let server = FakeGemini::start().await;
    server.push(Turn::calls(vec![
        FakeCall::new("teleport", json!({"to": "mars"})),
        add(2, 3),
    ]));
    server.push(Turn::text("could not teleport; 2+3=5"));
    let outcome = run(
        provider(ProviderKind::Gemini, server.url()),
        RunnerConfig::default(),
    )
    .await
    .expect("run");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    let results = tool_results(&outcome);
    assert!(
        results[0].2 && results[0].1.contains("unknown_tool"),
        "{results:?}"
    );
    assert_eq!((results[1].1.as_str(), results[1].2), ("5.0", false));
    assert_eq!(outcome.tool_calls, 1);
}

#[tokio::test]
async fn malformed_and_mismatched_arguments_become_invalid_input_results() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![
        FakeCall::new("add", json!(r#"{"a": 1, "b": "#)),
        FakeCall::new("add", json!({"a": "one", "b": 2})),
    ]));
    server.push(Turn::calls(vec![add(1, 2)]));
    server.push(Turn::text("3"));
    let outcome = run(
        provider(ProviderKind::OpenAi, server.url()),
        RunnerConfig::default(),
    )
    .await
    .expect("run");
    let results = tool_results(&outcome);
    assert!(
        results[0].2
            && results[0]
                .1
                .starts_with("invalid_input: the input is not valid JSON"),
        "{results:?}"
    );
    assert!(
        results[1].2
            && results[1]
                .1
                .starts_with("invalid_input: the input does not match"),
        "{results:?}"
    );
    assert_eq!((results[2].1.as_str(), results[2].2), ("3.0", false));
    assert_eq!(outcome.final_text, "3");
}

#[tokio::test]
async fn a_tool_that_times_out_becomes_a_timeout_result() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![
        FakeCall::new("slow", json!({})),
        add(1, 1),
    ]));
    server.push(Turn::text("the slow one timed out"));
    let mut timings = Vec::new();
    let mut stream = run(
        provider(ProviderKind::OpenAi, server.url()),
        RunnerConfig::default(),
    );
    while let Some(item) = stream.next().await {
        if let RunItem::Iteration(it) = item.expect("no error") {
            timings.extend(
                it.calls
                    .iter()
                    .map(|c| (c.status, c.error_kind, c.duration)),
            );
        }
    }
    let (status, kind, duration) = timings[0];
    assert_eq!(
        (status, kind),
        (
            CallStatus::Failed,
            Some(toolhost::tools::ToolErrorKind::Timeout)
        )
    );
    assert!(duration >= Duration::from_millis(50), "{duration:?}");
    let sent = openai_results(&server.bodies()[1]);
    assert!(sent[0].1.starts_with("timeout: "), "{sent:?}");
    assert_eq!(timings[1].0, CallStatus::Succeeded);
}

#[tokio::test]
async fn rate_limited_then_success_completes() {
    let server = FakeOpenAi::start().await;
    server.push(Reply::rate_limited("0"));
    server.push(Turn::calls(vec![add(20, 22)]));
    server.push(Turn::text("42"));
    let outcome = run(
        provider(ProviderKind::OpenAi, server.url()),
        RunnerConfig::default(),
    )
    .await
    .expect("the provider retries the 429");
    assert_eq!(
        (outcome.final_text.as_str(), outcome.stop_reason),
        ("42", StopReason::Completed)
    );
    assert_eq!(server.requests().len(), 3);
    assert_eq!(outcome.iterations, 2);
}

#[tokio::test]
async fn a_stream_cut_mid_call_ends_the_run_with_the_conversation_intact() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let (url, push): (String, Box<dyn Fn(Reply)>) = match kind {
            ProviderKind::OpenAi => {
                let s = FakeOpenAi::start().await;
                (
                    s.url(),
                    Box::new(move |r| {
                        s.push(r);
                    }),
                )
            }
            _ => {
                let s = FakeAnthropic::start().await;
                (
                    s.url(),
                    Box::new(move |r| {
                        s.push(r);
                    }),
                )
            }
        };
        push(Turn::calls(vec![add(1, 1)]).into());
        push(Reply::Cut {
            turn: Turn::calls(vec![add(2, 2), add(3, 3)]),
            events: 3,
        });
        let config = RunnerConfig {
            stream: true,
            ..RunnerConfig::default()
        };
        let err = run(provider(kind, url), config)
            .await
            .expect_err("the stream is cut");
        assert!(
            matches!(err.kind, RunErrorKind::Provider { iteration: 2, .. }),
            "{kind}: {err:?}"
        );
        assert_eq!(err.outcome.stop_reason, StopReason::Error);
        let messages = err.messages();
        assert_eq!(
            messages.len(),
            4,
            "{kind}: system, user, first call, its result"
        );
        assert_eq!(toolhost::llm::check_messages(messages), Ok(()));
        assert!(matches!(messages.last(), Some(Message::Tool(r)) if r.content == "2.0"));
    }
}

fn looping_server_turns(server: &FakeOpenAi, rounds: usize) {
    for i in 0..rounds {
        server.push(Turn::calls(vec![add(i as i64, 1)]));
    }
}

#[tokio::test]
async fn the_iteration_cap_stops() {
    let server = FakeOpenAi::start().await;
    looping_server_turns(&server, 3);
    let config = RunnerConfig {
        max_iterations: 3,
        ..RunnerConfig::default()
    };
    let outcome = run(provider(ProviderKind::OpenAi, server.url()), config)
        .await
        .expect("run");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    assert_eq!((outcome.iterations, outcome.tool_calls), (3, 3));
    assert_eq!(server.requests().len(), 3);
    assert!(matches!(outcome.messages.last(), Some(Message::Tool(_))));
}

#[tokio::test]
async fn the_iteration_cap_with_final_answer_asks_once_more_without_tools() {
    let server = FakeOpenAi::start().await;
    looping_server_turns(&server, 2);
    // The model still tries a call; it is dropped from the stored answer.
    server.push(Turn::calls(vec![add(9, 9)]).with_text("in short: 1 and 2"));
    server.push(Turn::text("never asked"));
    let config = RunnerConfig {
        max_iterations: 2,
        on_max_iterations: OnMaxIterations::FinalAnswer,
        ..RunnerConfig::default()
    };
    let outcome = run(provider(ProviderKind::OpenAi, server.url()), config)
        .await
        .expect("run");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    assert_eq!(outcome.final_text, "in short: 1 and 2");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[2]["tool_choice"], "none");
    assert!(bodies[2]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    let Some(Message::Assistant(last)) = outcome.messages.last() else {
        panic!("{:?}", outcome.messages)
    };
    assert!(last.tool_calls.is_empty());
    assert_eq!(server.pending(), 1);
}

fn tool_names(body: &Value) -> Vec<(String, String)> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                t["function"]["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn dynamic_tools_change_between_iterations() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![FakeCall::new("extra", json!({}))]));
    server.push(Turn::calls(vec![FakeCall::new("extra", json!({}))]));
    server.push(Turn::calls(vec![FakeCall::new("extra", json!({}))]));
    server.push(Turn::text("done"));
    let config = RunnerConfig {
        tools: ToolSelection::Named(vec!["add".into()]),
        dynamic_tools: Some(DynamicTools {
            tool_ids: vec!["extra".into()],
            description_template: "{description} [{name}: this step only]".into(),
        }),
        ..RunnerConfig::default()
    };
    let mut stream = run(provider(ProviderKind::OpenAi, server.url()), config);
    let mut statuses = Vec::new();
    while let Some(item) = stream.next().await {
        if let RunItem::Iteration(it) = item.expect("no error") {
            statuses.extend(it.calls.first().map(|c| c.status));
            match it.number {
                1 => stream.set_params(|c: &mut RunnerConfig| c.dynamic_tools = None),
                2 => stream.set_params(|c: &mut RunnerConfig| {
                    c.tools = ToolSelection::Named(vec!["add".into(), "extra".into()]);
                }),
                _ => {}
            }
        }
    }
    assert_eq!(
        statuses,
        [
            CallStatus::Succeeded,
            CallStatus::Unavailable,
            CallStatus::Succeeded
        ]
    );
    let bodies = server.bodies();
    assert_eq!(
        tool_names(&bodies[0]),
        [
            ("add".to_owned(), "Adds a and b.".to_owned()),
            (
                "extra".to_owned(),
                "An extra tool. [extra: this step only]".to_owned()
            )
        ]
    );
    assert_eq!(
        tool_names(&bodies[1]),
        [("add".to_owned(), "Adds a and b.".to_owned())]
    );
    assert_eq!(tool_names(&bodies[2]).len(), 2);
    let refused = openai_results(&bodies[2]);
    assert!(
        refused[1]
            .1
            .contains("tool `extra` is not available in this step"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_same_failing_call_repeated_stops_the_run() {
    let server = FakeOpenAi::start().await;
    for _ in 0..5 {
        server.push(Turn::calls(vec![FakeCall::new("broken", json!({"x": 1}))]));
    }
    let config = RunnerConfig {
        max_repeated_failures: std::num::NonZeroUsize::new(3),
        ..RunnerConfig::default()
    };
    let outcome = run(provider(ProviderKind::OpenAi, server.url()), config)
        .await
        .expect("run");
    assert_eq!(outcome.stop_reason, StopReason::RepeatedFailure);
    assert_eq!(outcome.iterations, 3);
    assert_eq!(server.requests().len(), 3);
    assert!(
        tool_results(&outcome)
            .iter()
            .all(|(_, c, e)| *e && c == "tool_failed: the disk is on fire")
    );
}

#[tokio::test]
async fn reused_ids_from_a_local_server_pass_the_strict_check() {
    // llama.cpp style: the same id on every turn and twice in one turn.
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![
        add(1, 1).with_id("call_0"),
        add(2, 2).with_id("call_0"),
    ]));
    server.push(Turn::calls(vec![add(3, 3).with_id("call_0")]));
    server.push(Turn::text("done"));
    let outcome = run(
        provider(ProviderKind::OpenAi, server.url()),
        RunnerConfig::default(),
    )
    .await
    .expect("the strict server accepts every request");
    let ids: Vec<String> = tool_results(&outcome)
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    // Unique within the turn (renamed before the loop stores it), reused
    // across turns, and the strict server accepted every request.
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], "call_0");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[2], "call_0");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(outcome.final_text, "done");
}

#[tokio::test]
async fn run_tool_options_apply_to_every_call_and_show_in_its_record() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![
        FakeCall::new("sleep", json!({"ms": 2000})),
        add(1, 2),
    ]));
    server.push(Turn::text("done"));
    let config = RunnerConfig {
        tool_options: ExecOverrides {
            timeout: Some(Duration::from_millis(50)),
            retries: Some(2),
            retry_delay: Some(Duration::from_millis(5)),
            backoff: Some(Backoff::Fixed),
            ..ExecOverrides::default()
        },
        ..RunnerConfig::default()
    };
    let mut stream = run(provider(ProviderKind::OpenAi, server.url()), config);
    let Some(Ok(RunItem::Iteration(first))) = stream.next().await else {
        panic!("a first iteration");
    };
    let sleep = &first.calls[0];
    assert_eq!(sleep.status, CallStatus::Failed);
    assert_eq!(sleep.error_kind, Some(ToolErrorKind::Timeout));
    assert_eq!(sleep.attempts, 3, "the first try and two retries");
    let options = sleep.options.as_ref().expect("it ran");
    assert_eq!(options.timeout, Some(Duration::from_millis(50)));
    assert_eq!(options.retries, 2);
    assert!(
        sleep.duration < Duration::from_secs(1),
        "{:?}",
        sleep.duration
    );
    let added = &first.calls[1];
    assert_eq!(added.status, CallStatus::Succeeded);
    assert_eq!(added.attempts, 1);
    assert_eq!(added.options.as_ref().map(|o| o.retries), Some(2));
}

#[tokio::test]
async fn a_tool_s_own_options_hold_unless_the_run_overrides_them() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![FakeCall::new("slow", json!({}))]));
    server.push(Turn::text("done"));
    let outcome_calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&outcome_calls);
    run(
        provider(ProviderKind::OpenAi, server.url()),
        RunnerConfig::default(),
    )
    .on_tool_result(move |r| seen.lock().unwrap().push(r.clone()))
    .await
    .expect("the run ends");
    let calls = outcome_calls.lock().unwrap();
    let options = calls[0].options.as_ref().expect("it ran");
    assert_eq!(
        options.timeout,
        Some(Duration::from_millis(50)),
        "slow's own"
    );
    assert_eq!(options.retries, 0);
    assert_eq!(calls[0].attempts, 1);
}

fn late_tool(name: &str) -> NativeTool {
    NativeTool::new(
        name,
        "Registered late.",
        json!({"type": "object"}),
        |_| async move { Ok(json!("late!")) },
    )
}

#[tokio::test]
async fn a_tool_registered_between_iterations_is_offered_in_the_next_request() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![add(1, 1)]));
    server.push(Turn::calls(vec![
        FakeCall::new("late", json!({})),
        FakeCall::new("later", json!({})),
    ]));
    server.push(Turn::text("done"));
    let tools = registry();
    // `late` is a base tool by name and `later` a dynamic one; neither is
    // registered when the run starts.
    let config = RunnerConfig {
        tools: ToolSelection::Named(vec!["add".into(), "broken".into(), "late".into()]),
        dynamic_tools: Some(DynamicTools::new(["later"])),
        ..RunnerConfig::default()
    };
    let changed = Arc::clone(&tools);
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, server.url()),
        Arc::clone(&tools),
        config,
        vec![Message::user("go")],
    )
    .on_iteration(move |it| {
        if it.number == 1 {
            changed.register(late_tool("late")).expect("late");
            changed.register(late_tool("later")).expect("later");
            assert!(changed.unregister("broken").is_some());
        }
    })
    .await
    .expect("the run ends");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    let bodies = server.bodies();
    let names =
        |i: usize| -> Vec<String> { tool_names(&bodies[i]).into_iter().map(|t| t.0).collect() };
    assert!(!names(0).contains(&"late".to_owned()), "{:?}", names(0));
    assert!(!names(0).contains(&"later".to_owned()), "{:?}", names(0));
    assert!(names(0).contains(&"broken".to_owned()));
    assert!(names(1).contains(&"late".to_owned()), "{:?}", names(1));
    assert!(!names(1).contains(&"broken".to_owned()), "{:?}", names(1));
    let later: Vec<_> = tool_names(&bodies[1])
        .into_iter()
        .filter(|t| t.0 == "later")
        .collect();
    assert_eq!(
        later,
        [(
            "later".to_owned(),
            "Registered late. (added for this step)".to_owned()
        )],
        "a dynamic tool registered late is offered once, decorated"
    );
    let results = tool_results(&outcome);
    assert_eq!(results[1].1, "\"late!\"", "{results:?}");
    assert_eq!(results[2].1, "\"late!\"", "{results:?}");
}

#[tokio::test]
async fn a_selection_may_name_a_version_and_its_calls_go_to_that_version() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![FakeCall::new("calc", json!({}))]));
    server.push(Turn::text("done"));
    let tools = ToolRegistry::new();
    for version in ["1.0.0", "2.0.0"] {
        tools
            .register(
                NativeTool::new(
                    "calc",
                    "Calculates.",
                    json!({"type": "object"}),
                    move |_| async move { Ok(json!(version)) },
                )
                .with_version(version),
            )
            .expect("calc");
    }
    let config = RunnerConfig {
        tools: ToolSelection::Named(vec!["calc@1.0.0".into()]),
        ..RunnerConfig::default()
    };
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, server.url()),
        Arc::new(tools),
        config,
        vec![Message::user("go")],
    )
    .await
    .expect("the run ends");
    let bodies = server.bodies();
    assert_eq!(
        tool_names(&bodies[0]),
        [("calc".to_owned(), "Calculates.".to_owned())],
        "the model sees the plain name"
    );
    assert_eq!(tool_results(&outcome)[0].1, "\"1.0.0\"");
}
