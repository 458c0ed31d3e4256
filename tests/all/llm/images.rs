//! Issue 36, class 11: images to a model that cannot take them. A model
//! declared text-only gets every tool image as its text stand-in; a server
//! that answers an image with "image input is not supported" gets the
//! same request once more with stand-ins, and stand-ins from then on.

use serde_json::Value;
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, AssistantMessage, GeminiConfig, GeminiProvider, LlmError,
    Message, Provider, ProviderKind, ProviderOptions, ResponsesConfig, ResponsesProvider, ToolCall,
    ToolChoice, ToolResult,
};
use toolhost::tools::Content;
use toolhost_tests::providers::{
    FakeAnthropic, FakeGemini, FakeResponses, IMAGE_REFUSAL, Reply, Turn,
};

use super::{ask, http, tools};

/// A conversation whose last tool result holds a PNG.
fn with_image() -> Vec<Message> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend([0u8; 100]);
    vec![
        Message::user("Take a screenshot."),
        Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "lookup".into(),
                arguments: "{}".into(),
                signature: None,
            }],
            ..AssistantMessage::default()
        }),
        Message::Tool(ToolResult {
            tool_call_id: "call_1".into(),
            name: "lookup".into(),
            content: "the screen:".into(),
            is_error: false,
            parts: vec![Content::Image {
                media_type: "image/png".into(),
                data: png,
            }],
        }),
    ]
}

/// Whether a request body carries an image, in any provider's shape.
fn has_image(body: &Value) -> bool {
    let text = body.to_string();
    [
        "\"input_image\"",
        "\"type\":\"image\"",
        "inlineData",
        "inline_data",
    ]
    .iter()
    .any(|shape| text.contains(shape))
}

/// One request with the image conversation.
async fn ask_image(provider: &dyn Provider, stream: bool) -> Result<String, LlmError> {
    let (answer, _) = ask(provider, &with_image(), &tools(), ToolChoice::Auto, stream).await;
    answer.map(|a| a.message.content)
}

/// The fallback against a server in refusing mode: the first request
/// carries the image and is refused (not retried, though it is a 500);
/// the same request goes once more with the stand-in; the next request
/// sends the stand-in at once.
async fn falls_back_once(provider: &dyn Provider, requests: impl Fn() -> Vec<Value>, stream: bool) {
    assert_eq!(
        ask_image(provider, stream).await.expect("falls back"),
        "seen as text"
    );
    let bodies = requests();
    assert_eq!(
        bodies.len(),
        2,
        "the refused request and its text-only retry"
    );
    assert!(has_image(&bodies[0]));
    assert!(!has_image(&bodies[1]), "{}", bodies[1]);
    let text = bodies[1].to_string();
    assert!(
        text.contains("[image/png, 108 bytes, not shown: the provider answered that this model takes no image input]"),
        "{text}"
    );
    assert_eq!(ask_image(provider, stream).await.expect("text"), "again");
    let bodies = requests();
    assert_eq!(bodies.len(), 3, "remembered: no second refusal");
    assert!(!has_image(&bodies[2]));
}

#[tokio::test]
async fn a_responses_server_that_refuses_images_gets_stand_ins_once_and_from_then_on() {
    for stream in [false, true] {
        let server = FakeResponses::start().await;
        server.refuse_images(500);
        server
            .push(Turn::text("seen as text"))
            .push(Turn::text("again"));
        let provider =
            ResponsesProvider::new(ResponsesConfig::new(http(server.url()), "local-model"))
                .expect("config");
        falls_back_once(&provider, || server.bodies(), stream).await;
    }
}

#[tokio::test]
async fn an_anthropic_or_gemini_server_that_refuses_images_falls_back_too() {
    let server = FakeAnthropic::start().await;
    server.refuse_images(400);
    server
        .push(Turn::text("seen as text"))
        .push(Turn::text("again"));
    let provider =
        AnthropicProvider::new(AnthropicConfig::new(http(server.url()), "m")).expect("config");
    falls_back_once(&provider, || server.bodies(), true).await;

    let server = FakeGemini::start().await;
    server.refuse_images(500);
    server
        .push(Turn::text("seen as text"))
        .push(Turn::text("again"));
    let provider =
        GeminiProvider::new(GeminiConfig::new(http(server.url()), "gemini-3-pro")).expect("config");
    falls_back_once(&provider, || server.bodies(), false).await;
}

/// Without an image in the request, a refusal is an ordinary error: no
/// retry without images, nothing remembered.
#[tokio::test]
async fn a_refusal_without_images_in_the_request_is_returned_as_it_is() {
    let server = FakeResponses::start().await;
    server.push(Reply::error(400, IMAGE_REFUSAL));
    let provider =
        ResponsesProvider::new(ResponsesConfig::new(http(server.url()), "m")).expect("config");
    let (answer, _) = ask(
        &provider,
        &[Message::user("hi")],
        &tools(),
        ToolChoice::Auto,
        false,
    )
    .await;
    assert!(
        matches!(answer, Err(LlmError::Status { status: 400, .. })),
        "{answer:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// Reads a fake server's request bodies.
type Bodies<'a> = Box<dyn Fn() -> Vec<Value> + 'a>;

/// The operator's word: a model declared text-only never gets an image,
/// on every provider that takes images in tool results.
#[tokio::test]
async fn a_model_declared_text_only_gets_stand_ins_from_the_first_request() {
    let responses = FakeResponses::start().await;
    let anthropic = FakeAnthropic::start().await;
    let gemini = FakeGemini::start().await;
    let servers: [(ProviderKind, String, &str, Bodies<'_>); 3] = [
        (
            ProviderKind::OpenAiResponses,
            responses.url(),
            "local-model",
            Box::new(|| responses.bodies()),
        ),
        (
            ProviderKind::Anthropic,
            anthropic.url(),
            "m",
            Box::new(|| anthropic.bodies()),
        ),
        (
            ProviderKind::Gemini,
            gemini.url(),
            "gemini-3-pro",
            Box::new(|| gemini.bodies()),
        ),
    ];
    responses.refuse_images(500).push(Turn::text("ok"));
    anthropic.refuse_images(500).push(Turn::text("ok"));
    gemini.refuse_images(500).push(Turn::text("ok"));
    for (kind, url, model, bodies) in servers {
        let provider = kind
            .build(ProviderOptions {
                base_url: Some(url),
                model: Some(model.into()),
                api_key: Some("test-key".into()),
                text_only: true,
                ..ProviderOptions::default()
            })
            .expect("provider");
        let answer = ask_image(provider.as_ref(), false).await;
        assert_eq!(answer.unwrap_or_else(|e| panic!("{kind}: {e}")), "ok");
        let bodies = bodies();
        assert_eq!(bodies.len(), 1, "{kind}");
        assert!(!has_image(&bodies[0]), "{kind}: {}", bodies[0]);
        assert!(
            bodies[0]
                .to_string()
                .contains("not shown: this model is set up to take no images"),
            "{kind}: {}",
            bodies[0]
        );
    }
}
