//! A run opened by a prompt (issue 42): the program's own prompt of text,
//! an image and an embedded resource becomes the opening messages, and
//! each of the four wire formats sends them as its user content, the
//! image as an image part; an attached resource follows.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::llm::{Message, Provider, ProviderKind, ProviderOptions};
use toolhost::runner::{RunnerConfig, ToolRunner, attach_resource, prompt_messages};
use toolhost::tools::{
    Content, PromptMessage, PromptRole, PromptSpec, ResourceContents, ResourceSpec, ToolRegistry,
};
use toolhost_tests::providers::{
    Dialect, FakeAnthropic, FakeGemini, FakeOpenAi, FakeResponses, FakeServer, Turn,
};

const PIXEL: &[u8] = b"\x89PNG\r\n\x1a\nfake";
const PIXEL_BASE64: &str = "iVBORw0KGgpmYWtl";

fn provider(kind: ProviderKind, url: String) -> Arc<dyn Provider> {
    kind.build(ProviderOptions {
        base_url: Some(url),
        model: Some("gemini-3-pro-preview".into()),
        api_key: Some("test-key".into()),
        ..ProviderOptions::default()
    })
    .expect("a provider for the fake server")
}

/// A registry whose program offers prompt `look` (text, an image, an
/// embedded text resource) and resource `memo://today`.
fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    let offers = registry.offers();
    offers
        .add_prompt(
            PromptSpec::new("look"),
            |_| async {
                Ok(vec![
                    PromptMessage::user("What is in this picture?"),
                    PromptMessage {
                        role: PromptRole::User,
                        content: Content::Image {
                            media_type: "image/png".into(),
                            data: PIXEL.to_vec(),
                        },
                    },
                    PromptMessage {
                        role: PromptRole::User,
                        content: Content::Resource {
                            uri: "memo://context".into(),
                            media_type: Some("text/plain".into()),
                            contents: ResourceContents::Text("Taken at noon.".into()),
                        },
                    },
                ]
                .into())
            },
            None,
        )
        .unwrap();
    offers
        .add_resource(
            ResourceSpec::new("memo://today", "today").with_mime_type("text/plain"),
            |_| async { Ok(ResourceContents::Text("Buy milk.".into())) },
        )
        .unwrap();
    Arc::new(registry)
}

const CONTEXT: &str = "Resource `memo://context` (text/plain):\nTaken at noon.";
const TODAY: &str = "Resource `memo://today` (text/plain):\nBuy milk.";

/// Open a run on `fake` with the prompt, the attached resource and a last
/// question; the body of the one request the model got.
async fn first_request<D: Dialect>(fake: &FakeServer<D>, kind: ProviderKind) -> Value {
    let registry = registry();
    let offers = registry.offers();
    let mut messages = prompt_messages(offers, "look", BTreeMap::new())
        .await
        .unwrap();
    messages.push(attach_resource(offers, "memo://today").await.unwrap());
    messages.push(Message::user("Answer briefly."));
    fake.push(Turn::text("A dot."));
    let outcome = ToolRunner::new(
        provider(kind, fake.url()),
        Arc::clone(&registry),
        RunnerConfig::default(),
        messages,
    )
    .await
    .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(outcome.final_text, "A dot.");
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 1, "{kind:?}");
    bodies[0].clone()
}

#[tokio::test]
async fn a_prompt_with_an_image_opens_a_run_on_chat_completions() {
    let fake = FakeOpenAi::start().await;
    let body = first_request(&fake, ProviderKind::OpenAi).await;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "What is in this picture?"},
            {"role": "user", "content": [{"type": "image_url",
                "image_url": {"url": format!("data:image/png;base64,{PIXEL_BASE64}")}}]},
            {"role": "user", "content": CONTEXT},
            {"role": "user", "content": TODAY},
            {"role": "user", "content": "Answer briefly."},
        ])
    );
}

#[tokio::test]
async fn a_prompt_with_an_image_opens_a_run_on_the_responses_api() {
    let fake = FakeResponses::start().await;
    let body = first_request(&fake, ProviderKind::OpenAiResponses).await;
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": "What is in this picture?"},
            {"type": "message", "role": "user", "content": [{"type": "input_image",
                "image_url": format!("data:image/png;base64,{PIXEL_BASE64}")}]},
            {"type": "message", "role": "user", "content": CONTEXT},
            {"type": "message", "role": "user", "content": TODAY},
            {"type": "message", "role": "user", "content": "Answer briefly."},
        ])
    );
}

#[tokio::test]
async fn a_prompt_with_an_image_opens_a_run_on_anthropic_messages() {
    let fake = FakeAnthropic::start().await;
    let body = first_request(&fake, ProviderKind::Anthropic).await;
    // Consecutive user messages merge into one, in order.
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                "data": PIXEL_BASE64}},
            {"type": "text", "text": CONTEXT},
            {"type": "text", "text": TODAY},
            {"type": "text", "text": "Answer briefly."},
        ]}])
    );
}

#[tokio::test]
async fn a_prompt_with_an_image_opens_a_run_on_gemini() {
    let fake = FakeGemini::start().await;
    let body = first_request(&fake, ProviderKind::Gemini).await;
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [
            {"text": "What is in this picture?"},
            {"inlineData": {"mimeType": "image/png", "data": PIXEL_BASE64}},
            {"text": CONTEXT},
            {"text": TODAY},
            {"text": "Answer briefly."},
        ]}])
    );
}
