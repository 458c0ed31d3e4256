//! Retries, Retry-After, exhausted retries, connection failures, keys.

use std::time::Duration;

use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, GeminiConfig, GeminiProvider, HttpConfig, LlmError,
    OpenAiConfig, OpenAiProvider, Provider, ProviderKind, ProviderOptions, ToolChoice,
};
use toolhost_tests::providers::{FakeAnthropic, FakeGemini, FakeOpenAi, Reply, Turn};

use super::{KEY, ask, http, start, status_of, tools};

#[tokio::test]
async fn rate_limit_then_success_honours_retry_after() {
    let server = FakeOpenAi::start().await;
    server
        .push(Reply::rate_limited("1"))
        .push(Turn::text("made it"));
    let openai = OpenAiProvider::new(OpenAiConfig::new(http(server.url()), "m")).expect("config");
    let (answer, _) = ask(&openai, &start(), &tools(), ToolChoice::Auto, true).await;
    assert_eq!(
        answer.expect("the retry succeeds").message.content,
        "made it"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at.duration_since(requests[0].at);
    // The computed backoff is at most 40 ms here; only Retry-After explains a second.
    assert!(waited >= Duration::from_millis(950), "waited {waited:?}");
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_is_returned_at_once() {
    let server = FakeAnthropic::start().await;
    server
        .push(Reply::rate_limited("3600"))
        .push(Turn::text("too late"));
    let mut config = http(server.url());
    config.max_retry_after = Duration::from_secs(5);
    let claude = AnthropicProvider::new(AnthropicConfig::new(config, "m")).expect("config");
    let (answer, _) = ask(&claude, &start(), &tools(), ToolChoice::Auto, false).await;
    let (provider, status, message) = status_of(&answer.expect_err("no retry")).expect("status");
    assert_eq!((provider.as_str(), status), ("anthropic", 429));
    assert!(
        message.contains("rate_limit_error: Rate limit reached"),
        "{message}"
    );
    assert!(message.contains("3600s"), "{message}");
    assert_eq!(server.requests().len(), 1);
}

/// Every provider gives up after `max_retries` and names itself, the
/// status and the provider's own message.
#[tokio::test]
async fn server_errors_exhaust_retries_with_a_readable_error() {
    let openai = FakeOpenAi::start().await;
    let anthropic = FakeAnthropic::start().await;
    let gemini = FakeGemini::start().await;
    for _ in 0..3 {
        openai.push(Reply::error(
            500,
            "The server had an error while processing your request.",
        ));
        anthropic.push(Reply::error(529, "Overloaded"));
        gemini.push(Reply::error(
            503,
            "The model is overloaded. Please try again later.",
        ));
    }
    let providers: Vec<(Box<dyn Provider>, &str, u16, &str)> = vec![
        (
            Box::new(
                OpenAiProvider::new(OpenAiConfig::new(http(openai.url()), "m")).expect("config"),
            ),
            "openai",
            500,
            "server_error: The server had an error while processing your request.",
        ),
        (
            Box::new(
                AnthropicProvider::new(AnthropicConfig::new(http(anthropic.url()), "m"))
                    .expect("config"),
            ),
            "anthropic",
            529,
            "overloaded_error: Overloaded",
        ),
        (
            Box::new(
                GeminiProvider::new(GeminiConfig::new(http(gemini.url()), "m")).expect("config"),
            ),
            "gemini",
            503,
            "UNAVAILABLE: The model is overloaded. Please try again later.",
        ),
    ];
    for (provider, name, code, text) in &providers {
        let (answer, _) = ask(
            provider.as_ref(),
            &start(),
            &tools(),
            ToolChoice::Auto,
            true,
        )
        .await;
        let error = answer.expect_err("retries run out");
        assert_eq!(
            status_of(&error),
            Some(((*name).to_owned(), *code, (*text).to_owned()))
        );
        let shown = error.to_string();
        assert!(
            shown.contains(name) && shown.contains(&code.to_string()) && shown.contains(text),
            "{shown}"
        );
    }
    for count in [
        openai.requests().len(),
        anthropic.requests().len(),
        gemini.requests().len(),
    ] {
        assert_eq!(count, 3, "one try and two retries");
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    drop(listener);
    let openai = OpenAiProvider::new(OpenAiConfig::new(http(url.clone()), "m")).expect("config");
    let (answer, _) = ask(&openai, &start(), &tools(), ToolChoice::Auto, false).await;
    match answer {
        Err(LlmError::Connect {
            provider,
            url: tried,
            ..
        }) => {
            assert_eq!(provider, "openai");
            assert_eq!(tried, format!("{url}/chat/completions"));
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // Accepts connections but never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let _hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let mut config = http(url);
    config.timeout = Duration::from_millis(200);
    config.max_retries = 1;
    let openai = OpenAiProvider::new(OpenAiConfig::new(config, "m")).expect("config");
    let (answer, _) = ask(&openai, &start(), &tools(), ToolChoice::Auto, false).await;
    assert!(
        matches!(answer, Err(LlmError::Timeout { ref provider, timeout }) if provider == "openai" && timeout == Duration::from_millis(200)),
        "{answer:?}"
    );
}

#[tokio::test]
async fn keys_are_never_in_debug_output() {
    let config = HttpConfig::new("http://127.0.0.1:1/v1").with_api_key(KEY);
    let provider = OpenAiProvider::new(OpenAiConfig::new(config.clone(), "m")).expect("config");
    let options = ProviderOptions {
        api_key: Some(KEY.into()),
        ..ProviderOptions::default()
    };
    for shown in [
        format!("{config:?}"),
        format!("{provider:?}"),
        format!("{options:?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
    }
}

#[tokio::test]
async fn provider_kind_builds_a_working_client() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("built"));
    let provider = ProviderKind::Anthropic
        .build(ProviderOptions {
            base_url: Some(server.url()),
            model: Some("claude-test".into()),
            api_key: Some(KEY.into()),
            ..ProviderOptions::default()
        })
        .expect("builds");
    assert_eq!(provider.name(), "anthropic");
    let (answer, _) = ask(
        provider.as_ref(),
        &start(),
        &tools(),
        ToolChoice::Auto,
        false,
    )
    .await;
    assert_eq!(answer.expect("answer").message.content, "built");
    assert_eq!(server.bodies()[0]["model"], "claude-test");
}
