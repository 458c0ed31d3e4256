//! Generation parameters through each real client to each fake: the body
//! each wire format gets (golden JSON), values refused before sending, and
//! the fakes refusing what the real APIs refuse.

use serde_json::{Value, json};
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, ChatRequest, GeminiConfig, GeminiProvider,
    GenerationParams, LlmError, Message, OpenAiConfig, OpenAiProvider, Provider, ToolChoice,
};
use toolhost_tests::providers::{Dialect, FakeAnthropic, FakeGemini, FakeOpenAi, FakeServer, Turn};

use super::{http, start, status_of, tools};

/// Everything set, the way a user sets it.
fn every_param() -> GenerationParams {
    GenerationParams {
        temperature: Some(0.0),
        top_p: Some(0.5),
        max_output_tokens: Some(100),
        stop: vec!["END".into()],
        seed: None,
        tool_choice: ToolChoice::Tool("add".into()),
        parallel_tool_calls: Some(false),
        extra: serde_json::Map::new(),
    }
}

async fn send(provider: &dyn Provider, params: &GenerationParams) -> Result<(), LlmError> {
    let tools = tools();
    let messages = start();
    provider
        .complete(ChatRequest {
            messages: &messages,
            tools: &tools,
            params,
            stream: false,
            on_text: None,
            deferred: &[],
        })
        .await
        .map(drop)
}

/// The last body `server` received, without the conversation and tools.
fn sent_params<D: Dialect>(server: &FakeServer<D>, structural: &[&str]) -> Value {
    let mut body = server.bodies().pop().expect("a request was sent");
    let fields = body.as_object_mut().expect("an object");
    for key in structural {
        fields.remove(*key);
    }
    body
}

fn openai(server: &FakeOpenAi) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(http(server.url()), "gpt-test")).expect("valid config")
}

fn anthropic(server: &FakeAnthropic) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig::new(http(server.url()), "claude-test"))
        .expect("valid config")
}

fn gemini(server: &FakeGemini) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig::new(http(server.url()), "gemini-test")).expect("valid config")
}

#[tokio::test]
async fn every_param_reaches_the_openai_chat_body() {
    let server = FakeOpenAi::start().await;
    server.push(Turn::text("ok")).push(Turn::text("ok"));
    let params = GenerationParams {
        seed: Some(42),
        ..every_param()
    };
    send(&openai(&server), &params).await.expect("accepted");
    assert_eq!(
        sent_params(&server, &["model", "messages", "tools"]),
        json!({
            "stream": false, "temperature": 0.0, "top_p": 0.5, "max_tokens": 100,
            "stop": ["END"], "seed": 42,
            "tool_choice": {"type": "function", "function": {"name": "add"}},
            "parallel_tool_calls": false
        })
    );
    let required = GenerationParams {
        tool_choice: ToolChoice::Required,
        ..GenerationParams::default()
    };
    send(&openai(&server), &required).await.expect("accepted");
    assert_eq!(
        sent_params(&server, &["model", "messages", "tools"]),
        json!({"stream": false, "tool_choice": "required"})
    );
}

#[tokio::test]
async fn extra_fields_reach_a_local_server_and_conflicts_are_refused() {
    let server = FakeOpenAi::start_llama_cpp().await;
    server.push(Turn::text("ok"));
    let mut params = GenerationParams::default();
    params.set_extra("min_p", json!(0.05)).expect("new field");
    params.set_extra("top_k", json!(20)).expect("new field");
    send(&openai(&server), &params).await.expect("accepted");
    assert_eq!(
        sent_params(&server, &["model", "messages", "tools"]),
        json!({"stream": false, "min_p": 0.05, "top_k": 20})
    );
    // A field the request sets itself is not silently replaced.
    let mut clash = GenerationParams {
        temperature: Some(0.2),
        ..GenerationParams::default()
    };
    clash
        .set_extra("temperature", json!(1.0))
        .expect("extra alone is fine");
    let err = send(&openai(&server), &clash)
        .await
        .expect_err("a conflict");
    assert!(
        matches!(&err, LlmError::InvalidParams { source, .. } if source.parameter == "extra.temperature"),
        "{err:?}"
    );
    assert_eq!(server.bodies().len(), 1, "the conflict was never sent");
}

#[tokio::test]
async fn every_param_reaches_the_anthropic_body_and_max_tokens_keeps_its_default() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("ok")).push(Turn::text("ok"));
    send(&anthropic(&server), &every_param())
        .await
        .expect("accepted");
    assert_eq!(
        sent_params(&server, &["model", "messages", "tools", "system"]),
        json!({
            "max_tokens": 100, "temperature": 0.0, "top_p": 0.5, "stop_sequences": ["END"],
            "tool_choice": {"type": "tool", "name": "add", "disable_parallel_tool_use": true}
        })
    );
    send(&anthropic(&server), &GenerationParams::default())
        .await
        .expect("accepted");
    assert_eq!(
        sent_params(&server, &["model", "messages", "tools", "system"]),
        json!({"max_tokens": 4096})
    );
}

#[tokio::test]
async fn every_param_reaches_the_gemini_body() {
    let server = FakeGemini::start().await;
    server.push(Turn::text("ok")).push(Turn::text("ok"));
    let params = GenerationParams {
        seed: Some(7),
        parallel_tool_calls: None,
        ..every_param()
    };
    send(&gemini(&server), &params).await.expect("accepted");
    assert_eq!(
        sent_params(&server, &["contents", "tools", "systemInstruction"]),
        json!({
            "generationConfig": {
                "temperature": 0.0, "topP": 0.5, "maxOutputTokens": 100,
                "stopSequences": ["END"], "seed": 7
            },
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}}
        })
    );
    let mut top_k = GenerationParams {
        tool_choice: ToolChoice::None,
        ..GenerationParams::default()
    };
    top_k
        .set_extra("generationConfig.topK", json!(40))
        .expect("new field");
    send(&gemini(&server), &top_k).await.expect("accepted");
    assert_eq!(
        sent_params(&server, &["contents", "tools", "systemInstruction"]),
        json!({
            "generationConfig": {"topK": 40},
            "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}
        })
    );
}

/// The neutral parameter `LlmError::InvalidParams` names, if it is one.
fn refused_param(result: Result<(), LlmError>) -> Option<String> {
    match result {
        Err(LlmError::InvalidParams { source, .. }) => Some(source.parameter),
        _ => None,
    }
}

#[tokio::test]
async fn values_a_provider_cannot_take_are_refused_before_sending() {
    let (o, a, g) = (
        FakeOpenAi::start().await,
        FakeAnthropic::start().await,
        FakeGemini::start().await,
    );
    let p = GenerationParams::default;
    let requests = [o.bodies().len(), a.bodies().len(), g.bodies().len()];
    let count = |i: usize| [o.bodies().len(), a.bodies().len(), g.bodies().len()][i];
    assert_eq!(requests, [0; 3]);
    let providers: [(&str, Box<dyn Provider>); 3] = [
        ("openai", Box::new(openai(&o))),
        ("anthropic", Box::new(anthropic(&a))),
        ("gemini", Box::new(gemini(&g))),
    ];
    // (params, what each of openai, anthropic, gemini refuses)
    let cases = [
        (
            GenerationParams {
                temperature: Some(1.5),
                ..p()
            },
            [None, Some("temperature"), None],
        ),
        (
            GenerationParams {
                temperature: Some(2.5),
                ..p()
            },
            [Some("temperature"); 3],
        ),
        (
            GenerationParams {
                top_p: Some(-0.5),
                ..p()
            },
            [Some("top_p"); 3],
        ),
        (
            GenerationParams {
                max_output_tokens: Some(0),
                ..p()
            },
            [Some("max_output_tokens"); 3],
        ),
        (
            GenerationParams {
                seed: Some(3),
                ..p()
            },
            [None, Some("seed"), None],
        ),
        (
            GenerationParams {
                seed: Some(1 << 40),
                ..p()
            },
            [None, Some("seed"), Some("seed")],
        ),
        (
            GenerationParams {
                stop: (0..6).map(|i| format!("s{i}")).collect(),
                ..p()
            },
            [None, None, Some("stop")],
        ),
        (
            GenerationParams {
                parallel_tool_calls: Some(false),
                ..p()
            },
            [None, None, Some("parallel_tool_calls")],
        ),
        (
            GenerationParams {
                tool_choice: ToolChoice::Tool("nope".into()),
                ..p()
            },
            [Some("tool_choice"); 3],
        ),
    ];
    for (params, refused) in cases {
        for (i, ((name, provider), expected)) in providers.iter().zip(refused).enumerate() {
            let before = count(i);
            // An accepted request meets the empty queue's 500, which is not
            // a parameter error.
            let got = refused_param(send(provider.as_ref(), &params).await);
            assert_eq!(got.as_deref(), expected, "{name}: {params:?}");
            if expected.is_some() {
                assert_eq!(count(i), before, "{name}: a refused request went out");
            } else {
                assert!(count(i) > before, "{name}: {params:?} was not sent");
            }
        }
    }
}

#[tokio::test]
async fn the_fakes_refuse_what_the_real_apis_refuse() {
    // Through `extra`, values the library does not check reach the fakes,
    // which answer as the real APIs do.
    let o = FakeOpenAi::start().await;
    let mut unknown = GenerationParams::default();
    unknown.set_extra("top_k", json!(5)).expect("new field");
    let err = send(&openai(&o), &unknown)
        .await
        .expect_err("OpenAI has no top_k");
    let (_, status, message) = status_of(&err).expect("an HTTP status");
    assert_eq!(status, 400);
    assert!(
        message.contains("Unrecognized request argument supplied: top_k"),
        "{message}"
    );

    let a = FakeAnthropic::start().await;
    let mut seed = GenerationParams::default();
    seed.set_extra("seed", json!(1)).expect("new field");
    let err = send(&anthropic(&a), &seed)
        .await
        .expect_err("Anthropic has no seed");
    let (_, status, message) = status_of(&err).expect("an HTTP status");
    assert_eq!(status, 400);
    assert!(
        message.contains("seed: Extra inputs are not permitted"),
        "{message}"
    );

    let g = FakeGemini::start().await;
    let mut top_k = GenerationParams::default();
    top_k
        .set_extra("generationConfig.temperature", json!(9))
        .expect("new field");
    let err = send(&gemini(&g), &top_k).await.expect_err("out of range");
    let (_, status, message) = status_of(&err).expect("an HTTP status");
    assert_eq!(status, 400);
    assert!(message.contains("temperature"), "{message}");
}

#[tokio::test]
async fn a_history_with_tool_calls_and_tool_choice_none_still_declares_tools() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::text("done"));
    let none = GenerationParams {
        tool_choice: ToolChoice::None,
        parallel_tool_calls: Some(false),
        ..GenerationParams::default()
    };
    let messages = vec![Message::user("hi")];
    let tools = tools();
    anthropic(&server)
        .complete(ChatRequest {
            messages: &messages,
            tools: &tools,
            params: &none,
            stream: false,
            on_text: None,
            deferred: &[],
        })
        .await
        .expect("accepted: `none` takes no disable_parallel_tool_use");
    let body = server.bodies().pop().expect("sent");
    assert_eq!(body["tool_choice"], json!({"type": "none"}));
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
}
