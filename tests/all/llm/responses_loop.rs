//! The capped loop on the Responses provider, against its strict fake,
//! with a reasoning model (every call turn carries a reasoning item that
//! must go back adjacent to its call): the per-response cap under each
//! policy, the iteration cap, the final answer at the cap, dynamic tools,
//! and resuming from a saved conversation.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};
use toolhost::llm::{Message, Provider, ProviderKind, ProviderOptions};
use toolhost::runner::{
    DynamicTools, OnMaxIterations, OverLimitPolicy, RunItem, RunnerConfig, StopReason, ToolRunner,
    ToolSelection,
};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::providers::{FakeCall, FakeResponses, Turn};

fn provider(server: &FakeResponses) -> Arc<dyn Provider> {
    ProviderKind::OpenAiResponses
        .build(ProviderOptions {
            base_url: Some(server.url()),
            model: Some("gpt-5-mini".into()),
            api_key: Some("test-key".into()),
            ..ProviderOptions::default()
        })
        .expect("a provider for the fake server")
}

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
        "extra",
        "An extra tool.",
        json!({"type": "object"}),
        |_| async move { Ok(json!("extra!")) },
    ))
    .expect("extra");
    Arc::new(r)
}

fn runner(server: &FakeResponses, config: RunnerConfig, messages: Vec<Message>) -> ToolRunner {
    ToolRunner::new(provider(server), registry(), config, messages)
}

fn start() -> Vec<Message> {
    vec![Message::system("You are a test."), Message::user("go")]
}

fn add(a: i64, b: i64) -> FakeCall {
    FakeCall::new("add", json!({"a": a, "b": b}))
}

/// A reasoning model's turn calling `calls`.
fn reasoned(calls: Vec<FakeCall>) -> Turn {
    Turn::calls(calls).with_reasoning("thinking about it")
}

/// The items of a request body of `kind`.
fn of_kind<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == kind)
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
async fn over_the_cap_decline_answers_every_extra_call_on_responses() {
    let server = FakeResponses::start().await;
    server.push(reasoned(vec![add(1, 1), add(2, 2), add(3, 3)]));
    server.push(Turn::text("2, and the rest later"));
    let outcome = runner(&server, capped(1, OverLimitPolicy::Decline), start())
        .await
        .expect("the strict server accepts every request");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    assert_eq!(outcome.tool_calls, 1);
    let body = &server.bodies()[1];
    let outputs = of_kind(body, "function_call_output");
    assert_eq!(outputs.len(), 3, "every call answered on the wire");
    assert_eq!(outputs[0]["output"], "2.0");
    for declined in &outputs[1..] {
        let text = declined["output"].as_str().unwrap_or_default();
        assert!(
            text.contains("not executed: limit of 1 tool calls per response"),
            "{text}"
        );
    }
    assert_eq!(of_kind(body, "reasoning").len(), 1);
}

#[tokio::test]
async fn over_the_cap_drop_keeps_the_reasoning_with_the_kept_calls_on_responses() {
    let server = FakeResponses::start().await;
    server.push(reasoned(vec![add(1, 1), add(2, 2), add(3, 3)]));
    server.push(Turn::text("2"));
    let outcome = runner(&server, capped(2, OverLimitPolicy::Drop), start())
        .await
        .expect("run");
    assert_eq!(outcome.tool_calls, 2);
    let body = &server.bodies()[1];
    assert_eq!(of_kind(body, "function_call").len(), 2);
    assert_eq!(of_kind(body, "function_call_output").len(), 2);
    assert_eq!(of_kind(body, "reasoning").len(), 1);
}

#[tokio::test]
async fn over_the_cap_fail_stops_with_an_error_naming_count_and_limit_on_responses() {
    let server = FakeResponses::start().await;
    server.push(reasoned(vec![add(1, 1)]));
    server.push(reasoned(vec![add(1, 1), add(2, 2), add(3, 3)]));
    let error = runner(&server, capped(2, OverLimitPolicy::Fail), start())
        .await
        .expect_err("over the limit");
    let message = error.to_string();
    assert!(
        message.contains("3 tool calls") && message.contains("limit of 2"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn the_iteration_cap_stops_on_responses() {
    let server = FakeResponses::start().await;
    for i in 0..3 {
        server.push(reasoned(vec![add(i, 1)]));
    }
    let config = RunnerConfig {
        max_iterations: 3,
        ..RunnerConfig::default()
    };
    let outcome = runner(&server, config, start()).await.expect("run");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    assert_eq!((outcome.iterations, outcome.tool_calls), (3, 3));
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    // Each earlier round's reasoning went back with its call.
    assert_eq!(of_kind(&bodies[2], "reasoning").len(), 2);
}

#[tokio::test]
async fn the_final_answer_at_the_cap_asks_once_more_without_tools_on_responses() {
    let server = FakeResponses::start().await;
    server.push(reasoned(vec![add(0, 1)]));
    server.push(reasoned(vec![add(1, 1)]));
    // The model still tries a call; it is dropped from the stored answer.
    server.push(reasoned(vec![add(9, 9)]).with_text("in short: 1 and 2"));
    server.push(Turn::text("never asked"));
    let config = RunnerConfig {
        max_iterations: 2,
        on_max_iterations: OnMaxIterations::FinalAnswer,
        ..RunnerConfig::default()
    };
    let outcome = runner(&server, config, start()).await.expect("run");
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

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn dynamic_tools_change_between_iterations_on_responses() {
    let server = FakeResponses::start().await;
    for _ in 0..3 {
        server.push(reasoned(vec![FakeCall::new("extra", json!({}))]));
    }
    server.push(Turn::text("done"));
    let config = RunnerConfig {
        tools: ToolSelection::Named(vec!["add".into()]),
        dynamic_tools: Some(DynamicTools {
            tool_ids: vec!["extra".into()],
            description_template: "{description} [{name}: this step only]".into(),
        }),
        ..RunnerConfig::default()
    };
    let mut stream = runner(&server, config, start());
    while let Some(item) = stream.next().await {
        if let RunItem::Iteration(it) = item.expect("no error") {
            match it.number {
                1 => stream.set_params(|c: &mut RunnerConfig| c.dynamic_tools = None),
                2 => stream.set_params(|c: &mut RunnerConfig| {
                    c.tools = ToolSelection::Named(vec!["add".into(), "extra".into()]);
                }),
                _ => {}
            }
        }
    }
    let bodies = server.bodies();
    assert_eq!(tool_names(&bodies[0]), ["add", "extra"]);
    assert_eq!(
        bodies[0]["tools"][1]["description"],
        "An extra tool. [extra: this step only]"
    );
    assert_eq!(tool_names(&bodies[1]), ["add"]);
    assert_eq!(tool_names(&bodies[2]), ["add", "extra"]);
    let refused = of_kind(&bodies[2], "function_call_output");
    let text = refused[1]["output"].as_str().unwrap_or_default();
    assert!(
        text.contains("tool `extra` is not available in this step"),
        "{text}"
    );
}

#[tokio::test]
async fn a_saved_conversation_resumes_with_its_reasoning_on_responses() {
    let server = FakeResponses::start().await;
    server.push(reasoned(vec![add(2, 2)]).with_text("Adding."));
    server.push(Turn::text("4"));
    let first = runner(&server, RunnerConfig::default(), start())
        .await
        .expect("first run");
    assert_eq!(first.final_text, "4");

    // Saved as JSON (what a transcript holds) and read back.
    let saved = serde_json::to_string(&first.messages).expect("JSON");
    let mut messages: Vec<Message> = serde_json::from_str(&saved).expect("JSON");
    assert_eq!(messages, first.messages, "the transcript round-trips");
    messages.push(Message::user("and doubled?"));
    server.push(reasoned(vec![add(4, 4)]));
    server.push(Turn::text("8"));
    let second = runner(&server, RunnerConfig::default(), messages)
        .await
        .expect("the strict server accepts the resumed history");
    assert_eq!(second.final_text, "8");
    let bodies = server.bodies();
    let last = &bodies[3];
    let reasoning = of_kind(last, "reasoning");
    assert_eq!(reasoning.len(), 2, "both rounds' reasoning went back");
    assert!(reasoning.iter().all(|r| r["encrypted_content"].is_string()));
    assert_eq!(of_kind(last, "function_call_output").len(), 2);
}

/// The item ids of a request body, in order.
fn item_ids(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["id"].as_str().map(str::to_owned))
        .collect()
}

/// Regression (issue 36, class 10): a server that gives two calls of one
/// answer the same `call_id` and the same item id, and numbers them the
/// same way again the next round. The loop renames the calls apart; every
/// request after that must still carry each item id once (the real API
/// answers 400 "Duplicate item found with id …") and each output the
/// `call_id` of its own call.
async fn duplicate_ids_go_through_two_rounds(stream: bool) {
    let server = FakeResponses::start().await;
    let same = |a: i64| add(a, 1).with_id("call_0").with_item_id("fc_0");
    server.push(reasoned(vec![same(1), same(2)]));
    server.push(Turn::calls(vec![
        same(3),
        same(4),
        add(5, 1).with_item_id("fc_0_2"),
    ]));
    server.push(Turn::text("done"));
    let config = RunnerConfig {
        stream,
        ..RunnerConfig::default()
    };
    let outcome = runner(&server, config, start())
        .await
        .expect("the strict server accepts every request");
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    assert_eq!(outcome.tool_calls, 5);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    for body in &bodies[1..] {
        let ids = item_ids(body);
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{ids:?}");
        let calls: Vec<&Value> = of_kind(body, "function_call")
            .into_iter()
            .map(|c| &c["call_id"])
            .collect();
        let outputs: Vec<&Value> = of_kind(body, "function_call_output")
            .into_iter()
            .map(|o| &o["call_id"])
            .collect();
        assert_eq!(calls, outputs, "each output follows its own call");
        let distinct: std::collections::BTreeSet<String> =
            calls.iter().map(|c| c.to_string()).collect();
        assert_eq!(distinct.len(), calls.len(), "{calls:?}");
    }
    // The results reached the model in order: 2, 3, 4, 5, 6.
    let outputs: Vec<&Value> = of_kind(&bodies[2], "function_call_output")
        .into_iter()
        .map(|o| &o["output"])
        .collect();
    assert_eq!(outputs, ["2.0", "3.0", "4.0", "5.0", "6.0"]);
}

#[tokio::test]
async fn duplicate_call_and_item_ids_go_through_two_rounds_on_responses() {
    duplicate_ids_go_through_two_rounds(false).await;
}

#[tokio::test]
async fn duplicate_call_and_item_ids_go_through_two_rounds_on_responses_streaming() {
    duplicate_ids_go_through_two_rounds(true).await;
}
