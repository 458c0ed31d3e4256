//! Tools found by search (issue 41): the base tools a run defers are not
//! sent until the model's search finds them; then they are offered from the
//! next request on and called like any other, on every wire format, with
//! the conversation valid for each (the fakes reject what the real APIs
//! reject). Caps and approvals apply to searches as to any call.
//!
//! Anthropic searches with its own tool search tool unless told not to
//! ([`native`]).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::approval::{ApprovalPolicy, ToolPattern};
use toolhost::llm::{Message, ProviderKind};
use toolhost::runner::{
    CallRecord, CallStatus, RunOutcome, RunnerConfig, StopReason, ToolRunner, ToolSearch,
    ToolSelection,
};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::providers::{
    Dialect, FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, FakeResponses, FakeServer, Reply,
    Turn,
};

use super::provider;

const KINDS: [ProviderKind; 4] = [
    ProviderKind::OpenAi,
    ProviderKind::OpenAiResponses,
    ProviderKind::Anthropic,
    ProviderKind::Gemini,
];

/// A fake provider of any wire format, scripted the same way.
trait Scripted {
    fn url(&self) -> String;
    fn push(&self, reply: Reply);
    fn bodies(&self) -> Vec<Value>;
}

impl<D: Dialect> Scripted for FakeServer<D> {
    fn url(&self) -> String {
        FakeServer::url(self)
    }
    fn push(&self, reply: Reply) {
        FakeServer::push(self, reply);
    }
    fn bodies(&self) -> Vec<Value> {
        FakeServer::bodies(self)
    }
}

async fn fake(kind: ProviderKind) -> Box<dyn Scripted> {
    match kind {
        ProviderKind::OpenAi => Box::new(FakeOpenAi::start().await),
        ProviderKind::OpenAiResponses => Box::new(FakeResponses::start().await),
        ProviderKind::Anthropic => Box::new(FakeAnthropic::start().await),
        _ => Box::new(FakeGemini::start().await),
    }
}

/// The tool names a request offered, whatever its wire format.
fn offered(body: &Value) -> Vec<String> {
    fn walk(value: &Value, names: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let (Some(Value::String(name)), true) =
                    (map.get("name"), map.contains_key("description"))
                {
                    names.push(name.clone());
                }
                for (key, inner) in map {
                    // A schema's properties are not tools.
                    if key != "parameters" && key != "input_schema" && key != "parametersJsonSchema"
                    {
                        walk(inner, names);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, names)),
            _ => {}
        }
    }
    let mut names = Vec::new();
    walk(&body["tools"], &mut names);
    names
}

fn tool(name: &str, description: &str, answer: Value) -> NativeTool {
    NativeTool::new(
        name,
        description,
        json!({"type": "object", "properties": {"city": {"type": "string",
               "description": "The city."}}}),
        move |_| {
            let answer = answer.clone();
            async move { Ok(answer) }
        },
    )
}

/// `clock` is always sent; the weather and currency tools are found by
/// search.
fn registry() -> Arc<ToolRegistry> {
    let r = ToolRegistry::new();
    r.register(tool("clock", "The time now.", json!("12:00")))
        .unwrap();
    r.register(tool(
        "weather_forecast",
        "The weather forecast for a city: temperature, rain and wind.",
        json!({"sky": "sunny"}),
    ))
    .unwrap();
    r.register(tool(
        "currency_convert",
        "Convert an amount of money from one currency to another.",
        json!(1.08),
    ))
    .unwrap();
    Arc::new(r)
}

/// The loop's own search on every wire format (Anthropic would otherwise
/// use its own: see [`native`]).
fn config() -> RunnerConfig {
    RunnerConfig {
        tool_search: Some(ToolSearch {
            provider_search: false,
            ..native_search()
        }),
        ..RunnerConfig::default()
    }
}

fn native_search() -> ToolSearch {
    ToolSearch::deferring([
        ToolPattern::new("weather_*").unwrap(),
        ToolPattern::new("currency_*").unwrap(),
    ])
}

/// A run's outcome and the records of its calls, in order.
async fn run(
    kind: ProviderKind,
    server: &dyn Scripted,
    tools: Arc<ToolRegistry>,
    config: RunnerConfig,
) -> (RunOutcome, Vec<CallRecord>) {
    let records = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&records);
    let outcome = ToolRunner::new(
        provider(kind, server.url()),
        tools,
        config,
        vec![Message::system("You are a test."), Message::user("go")],
    )
    .on_tool_result(move |record| kept.lock().unwrap().push(record.clone()))
    .await
    .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    let records = records.lock().unwrap().clone();
    (outcome, records)
}

/// The statuses of a run's calls, `currency_convert` unregistered after
/// the first iteration; any run error fails the test.
async fn run_unregistering(
    kind: ProviderKind,
    server: &dyn Scripted,
    tools: &Arc<ToolRegistry>,
    config: RunnerConfig,
) -> Vec<CallStatus> {
    let mut stream = ToolRunner::new(
        provider(kind, server.url()),
        Arc::clone(tools),
        config,
        vec![Message::user("go")],
    );
    let mut statuses = Vec::new();
    while let Some(item) = futures::StreamExt::next(&mut stream).await {
        let item = item.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        if let toolhost::runner::RunItem::Iteration(it) = item {
            statuses.extend(it.calls.iter().map(|c| c.status));
            if it.number == 1 {
                assert!(tools.unregister("currency_convert").is_some(), "{kind:?}");
            }
        }
    }
    statuses
}

fn search(query: &str) -> FakeCall {
    FakeCall::new("tool_search", json!({"query": query}))
}

#[tokio::test]
async fn a_found_tool_is_offered_and_called_in_the_next_request() {
    for kind in KINDS {
        let server = fake(kind).await;
        server.push(Turn::calls(vec![search("weather in Paris tomorrow")]).into());
        server.push(
            Turn::calls(vec![FakeCall::new(
                "weather_forecast",
                json!({"city": "Paris"}),
            )])
            .into(),
        );
        server.push(Turn::text("sunny").into());
        let (outcome, calls) = run(kind, &*server, registry(), config()).await;
        assert_eq!(outcome.stop_reason, StopReason::Completed, "{kind:?}");
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 3, "{kind:?}");
        // Held back at first: the search tool and the rest only.
        assert_eq!(offered(&bodies[0]), ["tool_search", "clock"], "{kind:?}");
        // Found, then offered from the next request on: what the search
        // answered, no more.
        assert_eq!(calls.len(), 2, "{kind:?}");
        assert_eq!(calls[0].status, CallStatus::Succeeded, "{kind:?}");
        let answer: Value = serde_json::from_str(&calls[0].result.content).unwrap();
        assert_eq!(
            answer["found"][0]["name"], "weather_forecast",
            "{kind:?}: {answer}"
        );
        let found = answer["found"].as_array().unwrap().iter();
        let mut expected = vec!["tool_search".to_owned(), "clock".to_owned()];
        expected.extend(found.map(|t| t["name"].as_str().unwrap().to_owned()));
        assert_eq!(offered(&bodies[1]), expected, "{kind:?}");
        assert_eq!(calls[1].status, CallStatus::Succeeded, "{kind:?}");
        assert!(calls[1].result.content.contains("sunny"), "{kind:?}");
        // Still offered in the request after that.
        assert!(
            offered(&bodies[2]).contains(&"weather_forecast".to_owned()),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_search_that_finds_nothing_says_so_and_offers_nothing_new() {
    for kind in KINDS {
        let server = fake(kind).await;
        server.push(Turn::calls(vec![search("zebra migration")]).into());
        // A call of a tool not found is answered as unknown.
        server.push(Turn::calls(vec![FakeCall::new("currency_convert", json!({}))]).into());
        server.push(Turn::text("no luck").into());
        let (outcome, calls) = run(kind, &*server, registry(), config()).await;
        assert_eq!(outcome.stop_reason, StopReason::Completed, "{kind:?}");
        let answer: Value = serde_json::from_str(&calls[0].result.content).unwrap();
        assert_eq!(answer["found"], json!([]), "{kind:?}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("No tool matches")
        );
        assert_eq!(calls[1].status, CallStatus::Unavailable, "{kind:?}");
        let bodies = server.bodies();
        assert_eq!(offered(&bodies[1]), ["tool_search", "clock"], "{kind:?}");
    }
}

#[tokio::test]
async fn a_found_tool_removed_from_the_registry_before_its_call_is_unavailable() {
    for kind in KINDS {
        let server = fake(kind).await;
        let tools = registry();
        server.push(Turn::calls(vec![search("convert dollars to euros")]).into());
        server.push(Turn::calls(vec![FakeCall::new("currency_convert", json!({}))]).into());
        server.push(Turn::text("gone").into());
        let statuses = run_unregistering(kind, &*server, &tools, config()).await;
        assert_eq!(
            statuses,
            [CallStatus::Succeeded, CallStatus::Unavailable],
            "{kind:?}"
        );
        let bodies = server.bodies();
        assert!(!offered(&bodies[1]).contains(&"currency_convert".to_owned()));
    }
}

#[tokio::test]
async fn searches_count_towards_the_caps_and_pass_the_approval_gate() {
    // Two searches in one response, at most one call per response: the
    // second is declined, and nothing it would have found is offered.
    let server = fake(ProviderKind::Anthropic).await;
    server.push(Turn::calls(vec![search("weather"), search("convert currency")]).into());
    server.push(Turn::text("ok").into());
    let capped = RunnerConfig {
        max_calls_per_response: Some(1),
        ..config()
    };
    let (_, calls) = run(ProviderKind::Anthropic, &*server, registry(), capped).await;
    let statuses: Vec<_> = calls.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [CallStatus::Succeeded, CallStatus::Declined]);
    let next = offered(&server.bodies()[1]);
    assert!(next.contains(&"weather_forecast".to_owned()), "{next:?}");
    assert!(!next.contains(&"currency_convert".to_owned()), "{next:?}");

    // An approval pattern that names the search gates it: without anyone to
    // approve, the run pauses before searching.
    let server = fake(ProviderKind::OpenAi).await;
    server.push(Turn::calls(vec![search("weather")]).into());
    let gated = RunnerConfig {
        approval: ApprovalPolicy::requiring([ToolPattern::new("tool_*").unwrap()]),
        ..config()
    };
    let (outcome, calls) = run(ProviderKind::OpenAi, &*server, registry(), gated).await;
    assert_eq!(outcome.stop_reason, StopReason::AwaitingApproval);
    assert!(calls.is_empty());
}

#[tokio::test]
async fn without_tool_search_every_tool_is_sent_and_a_selection_is_respected() {
    let server = fake(ProviderKind::OpenAi).await;
    server.push(Turn::text("hi").into());
    run(
        ProviderKind::OpenAi,
        &*server,
        registry(),
        RunnerConfig::default(),
    )
    .await;
    assert_eq!(
        offered(&server.bodies()[0]),
        ["clock", "currency_convert", "weather_forecast"]
    );
    // Only what the selection holds is held back and searched:
    // `currency_convert` is not selected.
    let server = fake(ProviderKind::OpenAi).await;
    server.push(Turn::calls(vec![search("convert money")]).into());
    server.push(Turn::text("none").into());
    let selected = RunnerConfig {
        tools: ToolSelection::Named(vec!["clock".into(), "weather_forecast".into()]),
        tool_search: Some(ToolSearch::default()),
        ..RunnerConfig::default()
    };
    let (_, calls) = run(ProviderKind::OpenAi, &*server, registry(), selected).await;
    // `clock` is deferred too under `*`; the currency tool is never found.
    assert_eq!(offered(&server.bodies()[0]), ["tool_search"]);
    let answer: Value = serde_json::from_str(&calls[0].result.content).unwrap();
    let names: Vec<&str> = answer["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"currency_convert"), "{answer}");
}

/// Anthropic's own tool search: the request carries every tool, the held
/// back ones with `defer_loading`, and the tool search tool under its beta;
/// the API's `server_tool_use` and `tool_search_tool_result` blocks go back
/// in the history (the fake rejects them unpaired, misplaced or naming a
/// tool the request does not define).
mod native {
    use super::*;

    fn tools_of(body: &Value) -> Vec<Value> {
        body["tools"].as_array().cloned().unwrap_or_default()
    }

    fn native_config(stream: bool) -> RunnerConfig {
        RunnerConfig {
            tool_search: Some(native_search()),
            stream,
            ..RunnerConfig::default()
        }
    }

    #[tokio::test]
    async fn the_api_searches_and_its_blocks_go_back_with_the_call() {
        for stream in [false, true] {
            let server = FakeAnthropic::start().await;
            let call = FakeCall::new("weather_forecast", json!({"city": "Paris"}));
            server.push(
                Turn::calls(vec![call])
                    .with_text("Let me look for a weather tool.")
                    .searching("weather forecast"),
            );
            server.push(Turn::text("sunny"));
            let (outcome, calls) = run(
                ProviderKind::Anthropic,
                &server,
                registry(),
                native_config(stream),
            )
            .await;
            assert_eq!(
                outcome.stop_reason,
                StopReason::Completed,
                "stream {stream}"
            );
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].status, CallStatus::Succeeded);
            assert!(calls[0].result.content.contains("sunny"));
            let bodies = server.bodies();
            // Every tool, the held back ones deferred, after the search
            // tool; no loop search tool of ours.
            let tools = tools_of(&bodies[0]);
            assert_eq!(tools[0]["type"], "tool_search_tool_bm25_20251119");
            let deferred = |name: &str| {
                tools
                    .iter()
                    .find(|t| t["name"] == name)
                    .map(|t| t["defer_loading"] == true)
            };
            assert_eq!(deferred("clock"), Some(false));
            assert_eq!(deferred("weather_forecast"), Some(true));
            assert_eq!(deferred("currency_convert"), Some(true));
            assert_eq!(deferred("tool_search"), None);
            // The API's blocks, back in the assistant turn after its text
            // and before its call.
            let turn = &bodies[1]["messages"][1];
            assert_eq!(turn["role"], "assistant");
            let kinds: Vec<&str> = turn["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["type"].as_str().unwrap())
                .collect();
            assert_eq!(
                kinds,
                [
                    "text",
                    "server_tool_use",
                    "tool_search_tool_result",
                    "tool_use"
                ],
                "stream {stream}"
            );
            assert_eq!(turn["content"][1]["input"]["query"], "weather forecast");
            assert_eq!(
                turn["content"][2]["content"]["tool_references"][0]["tool_name"],
                "weather_forecast"
            );
            assert_eq!(turn["content"][1]["id"], turn["content"][2]["tool_use_id"]);
        }
    }

    #[tokio::test]
    async fn a_found_tool_removed_from_the_registry_leaves_a_valid_history() {
        let server = FakeAnthropic::start().await;
        let tools = registry();
        server.push(
            Turn::calls(vec![FakeCall::new("currency_convert", json!({}))])
                .searching("convert currency"),
        );
        server.push(Turn::calls(vec![FakeCall::new(
            "currency_convert",
            json!({}),
        )]));
        server.push(Turn::text("gone"));
        // The fake answers 400 to a reference to a tool the request no
        // longer defines: an error in the run is a broken history.
        let statuses = run_unregistering(
            ProviderKind::Anthropic,
            &server,
            &tools,
            native_config(false),
        )
        .await;
        assert_eq!(statuses, [CallStatus::Succeeded, CallStatus::Unavailable]);
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 3);
        let result = &bodies[1]["messages"][1]["content"][1];
        assert_eq!(result["type"], "tool_search_tool_result");
        assert_eq!(result["content"]["tool_references"], json!([]));
        assert!(
            tools_of(&bodies[1])
                .iter()
                .all(|t| t["name"] != "currency_convert")
        );
    }

    #[tokio::test]
    async fn calls_of_found_tools_keep_the_caps_and_the_approval_gate() {
        let server = FakeAnthropic::start().await;
        let calls = vec![
            FakeCall::new("weather_forecast", json!({"city": "Oslo"})),
            FakeCall::new("currency_convert", json!({})),
        ];
        server.push(Turn::calls(calls).searching("weather currency"));
        server.push(Turn::text("ok"));
        let capped = RunnerConfig {
            max_calls_per_response: Some(1),
            ..native_config(false)
        };
        let (_, calls) = run(ProviderKind::Anthropic, &server, registry(), capped).await;
        let statuses: Vec<_> = calls.iter().map(|c| c.status).collect();
        assert_eq!(statuses, [CallStatus::Succeeded, CallStatus::Declined]);

        let server = FakeAnthropic::start().await;
        let call = FakeCall::new("weather_forecast", json!({"city": "Oslo"}));
        server.push(Turn::calls(vec![call]).searching("weather"));
        let gated = RunnerConfig {
            approval: ApprovalPolicy::requiring([ToolPattern::new("weather_*").unwrap()]),
            ..native_config(false)
        };
        let (outcome, calls) = run(ProviderKind::Anthropic, &server, registry(), gated).await;
        assert_eq!(outcome.stop_reason, StopReason::AwaitingApproval);
        assert!(calls.is_empty());
    }

    #[tokio::test]
    async fn provider_search_off_keeps_the_loops_own_search_on_anthropic() {
        let server = FakeAnthropic::start().await;
        server.push(Turn::text("hi"));
        run(ProviderKind::Anthropic, &server, registry(), config()).await;
        let tools = tools_of(&server.bodies()[0]);
        assert!(tools.iter().all(|t| t.get("defer_loading").is_none()));
        assert_eq!(offered(&server.bodies()[0]), ["tool_search", "clock"]);
    }
}
