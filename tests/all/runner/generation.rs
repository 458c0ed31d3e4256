//! Generation parameters per run and per request through the real
//! clients, and a run's answer taken only from what it produced.

use std::sync::Arc;

use serde_json::json;
use toolhost::llm::{
    AssistantMessage, GenerationParams, HttpConfig, LlmError, Message, OpenAiConfig,
    OpenAiProvider, Provider, ProviderKind, ToolChoice,
};
use toolhost::runner::{
    OnMaxIterations, OverLimitPolicy, RunErrorKind, RunnerConfig, StopReason, ToolRunner,
};
use toolhost_tests::providers::{FakeAnthropic, FakeOpenAi, Turn};

use super::{add, provider, registry};

/// A resumed conversation: its last assistant message is an old answer.
fn resumed() -> Vec<Message> {
    vec![
        Message::user("What is 1+1?"),
        Message::Assistant(AssistantMessage {
            content: "1+1 is 2 (an OLD answer).".into(),
            ..AssistantMessage::default()
        }),
        Message::user("And 2+2?"),
    ]
}

/// A loopback port that nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn stale_final_an_unreachable_provider_gives_no_answer_from_the_history() {
    let mut http = HttpConfig::new(closed_port());
    http.max_retries = 0;
    let unreachable: Arc<dyn Provider> =
        Arc::new(OpenAiProvider::new(OpenAiConfig::new(http, "test-model")).expect("valid config"));
    let err = ToolRunner::new(unreachable, registry(), RunnerConfig::default(), resumed())
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(
            &err.kind,
            RunErrorKind::Provider {
                source: LlmError::Connect { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.outcome.stop_reason, StopReason::Error);
    assert_eq!(err.outcome.final_text, "", "not the history's answer");
    assert!(err.outcome.final_message().is_none());
    assert_eq!(err.outcome.history_len, 3);
    assert_eq!(err.outcome.messages, resumed(), "the history is kept");
}

#[tokio::test]
async fn stale_final_a_response_over_the_limit_under_fail_gives_no_answer() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::calls(vec![add(1, 2), add(3, 4)]).with_text("Two sums."));
    let config = RunnerConfig {
        max_calls_per_response: Some(1),
        over_limit: OverLimitPolicy::Fail,
        ..RunnerConfig::default()
    };
    let err = ToolRunner::new(
        provider(ProviderKind::OpenAi, server.url()),
        registry(),
        config,
        resumed(),
    )
    .await
    .expect_err("over the limit");
    assert_eq!(err.outcome.stop_reason, StopReason::OverLimit);
    assert_eq!(err.outcome.final_text, "");
    assert!(err.outcome.final_message().is_none());
    // After a reply, the answer is the new one.
    server
        .push(Turn::calls(vec![add(2, 2)]))
        .push(Turn::text("2+2 is 4."));
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, server.url()),
        registry(),
        RunnerConfig::default(),
        resumed(),
    )
    .await
    .expect("answers");
    assert_eq!(outcome.final_text, "2+2 is 4.");
    assert_eq!(outcome.added().len(), 3);
}

#[tokio::test]
async fn run_params_reach_every_request_and_on_request_overrides_one() {
    let server = FakeOpenAi::start().await;
    server
        .push(Turn::calls(vec![add(1, 2)]))
        .push(Turn::text("3"));
    let config = RunnerConfig {
        generation: GenerationParams {
            temperature: Some(0.0),
            max_output_tokens: Some(200),
            ..GenerationParams::default()
        },
        ..RunnerConfig::default()
    };
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, server.url()),
        registry(),
        config,
        vec![Message::user("1+2?")],
    )
    .on_request(|request, params| {
        if request.number == 1 {
            params.tool_choice = ToolChoice::Tool("add".into());
            params.parallel_tool_calls = Some(false);
        } else {
            params.temperature = Some(0.8);
        }
    })
    .await
    .expect("run");
    assert_eq!(outcome.final_text, "3");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        bodies[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
    assert_eq!(bodies[0]["parallel_tool_calls"], json!(false));
    assert_eq!(bodies[0]["temperature"], json!(0.0));
    assert!(bodies[1].get("tool_choice").is_none(), "{}", bodies[1]);
    assert_eq!(bodies[1]["temperature"], json!(0.8));
    assert!(bodies.iter().all(|b| b["max_tokens"] == json!(200)));
}

#[tokio::test]
async fn a_value_the_provider_cannot_take_ends_the_run_before_sending() {
    let server = FakeAnthropic::start().await;
    let config = RunnerConfig {
        generation: GenerationParams {
            temperature: Some(1.5),
            ..GenerationParams::default()
        },
        ..RunnerConfig::default()
    };
    let err = ToolRunner::new(
        provider(ProviderKind::Anthropic, server.url()),
        registry(),
        config,
        vec![Message::user("hi")],
    )
    .await
    .expect_err("Anthropic takes 0 to 1");
    let RunErrorKind::Provider {
        source: LlmError::InvalidParams { source, .. },
        ..
    } = &err.kind
    else {
        panic!("{err:?}");
    };
    assert_eq!(source.parameter, "temperature");
    assert!(source.message.contains("0 to 1"), "{source}");
    assert!(server.bodies().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_final_answer_forbids_tools_even_when_the_run_requires_them() {
    let server = FakeAnthropic::start().await;
    server
        .push(Turn::calls(vec![add(1, 2)]))
        .push(Turn::text("3, finally."));
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
    let outcome = ToolRunner::new(
        provider(ProviderKind::Anthropic, server.url()),
        registry(),
        config,
        vec![Message::user("1+2?")],
    )
    .await
    .expect("the fake accepts both requests");
    assert_eq!(outcome.final_text, "3, finally.");
    assert_eq!(outcome.stop_reason, StopReason::MaxIterations);
    let bodies = server.bodies();
    assert_eq!(
        bodies[0]["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert_eq!(bodies[1]["tool_choice"], json!({"type": "none"}));
}
