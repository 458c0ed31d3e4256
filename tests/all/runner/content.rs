//! What a 0.2 tool gives the loop besides JSON: progress reports reach the
//! program running it, in order, before the call's result; an image a tool
//! returns reaches the providers whose wire format takes images in tool
//! results (Anthropic, Responses, Gemini 3) as image parts, and the others
//! as a text stand-in; a transcript keeps it.

use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::llm::{Message, Provider, ProviderKind, ProviderOptions};
use toolhost::plugin::PluginHost;
use toolhost::runner::{MEDIA_TRANSCRIPT_FORMAT, RunOutcome, RunnerConfig, ToolRunner, Transcript};
use toolhost::tools::{Content, ToolRegistry};
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::{copy_plugin_from, fixtures_dir, plugin_subset};
use toolhost_tests::providers::{
    AnthropicDialect, Dialect, FakeAnthropic, FakeCall, FakeGemini, FakeOpenAi, FakeResponses,
    FakeServer, GeminiDialect, OpenAiDialect, OpenAiFlavor, RecordedRequest, ResponsesDialect,
    Turn,
};

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

async fn registry(dir: &Path) -> Arc<ToolRegistry> {
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir())).unwrap();
    let report = host.load_dir(dir).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    Arc::new(report.registry().unwrap())
}

fn provider(kind: ProviderKind, url: String, model: &str) -> Arc<dyn Provider> {
    kind.build(ProviderOptions {
        base_url: Some(url),
        model: Some(model.into()),
        api_key: Some("test-key".into()),
        ..ProviderOptions::default()
    })
    .expect("a provider for the fake server")
}

#[tokio::test]
async fn the_runner_delivers_a_call_s_progress_in_order_before_its_result() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin_from(fixtures_dir(), "mcp_conformance", dir.path());
    let registry = registry(dir.path()).await;
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("test_tool_with_progress", json!({})).with_id("call_p"),
    ]));
    fake.push(Turn::text("done"));
    let events = Arc::new(Mutex::new(Vec::new()));
    let (on_progress, on_result) = (Arc::clone(&events), Arc::clone(&events));
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, fake.url(), "test-model"),
        registry,
        RunnerConfig::default(),
        vec![Message::user("go")],
    )
    .on_progress(move |call, p| {
        on_progress.lock().unwrap().push(format!(
            "{} {} {}/{} {}",
            call.id,
            call.name,
            p.done,
            p.total.unwrap_or(f64::NAN),
            p.message.as_deref().unwrap_or("")
        ));
    })
    .on_tool_result(move |record| {
        on_result
            .lock()
            .unwrap()
            .push(format!("result {}", record.call.id));
    })
    .await
    .unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(
        *events.lock().unwrap(),
        [
            "call_p test_tool_with_progress 0/100 0% done",
            "call_p test_tool_with_progress 50/100 50% done",
            "call_p test_tool_with_progress 100/100 100% done",
            "result call_p",
        ]
    );
}

fn draw() -> FakeCall {
    FakeCall::new(
        "chart_draw",
        json!({"kind": "bar", "title": "Sales", "labels": ["Jan", "Feb", "Mar"],
               "series": [{"name": "2026", "values": [3, 5, 2]}], "width": 320, "height": 200}),
    )
    .with_id("call_chart")
}

/// One run against `fake` in which the model asks for a chart and then
/// answers; the request that carried the chart back.
async fn chart_run<D: Dialect>(
    fake: &FakeServer<D>,
    kind: ProviderKind,
    model: &str,
    config: RunnerConfig,
) -> (RunOutcome, RecordedRequest) {
    let dir = plugin_subset(&["chart"]);
    fake.push(Turn::calls(vec![draw()]));
    fake.push(Turn::text("A bar chart."));
    let outcome = ToolRunner::new(
        provider(kind, fake.url(), model),
        registry(dir.path()).await,
        config,
        vec![Message::user("chart my sales")],
    )
    .await
    .unwrap_or_else(|e| panic!("{model}: {e}"));
    assert_eq!(outcome.final_text, "A bar chart.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{model}");
    (outcome, requests[1].clone())
}

fn png(base64: &str) -> Vec<u8> {
    let bytes = STANDARD.decode(base64).expect("base64");
    assert!(bytes.starts_with(PNG_MAGIC), "a PNG");
    bytes
}

/// The Anthropic `tool_result` block of a request body.
fn anthropic_result(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool_result block")
}

#[tokio::test]
async fn an_image_result_reaches_anthropic_as_an_image_block_after_the_text() {
    let fake = FakeAnthropic::start().await;
    let (outcome, request) = chart_run(
        &fake,
        ProviderKind::Anthropic,
        "claude-test",
        RunnerConfig::default(),
    )
    .await;
    let result = anthropic_result(&request.body);
    let blocks = result["content"].as_array().expect("a list of blocks");
    assert_eq!(blocks.len(), 2, "{result}");
    assert_eq!(blocks[0]["type"], "text");
    let summary: Value = serde_json::from_str(blocks[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["source"]["type"], "base64");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    let bytes = png(blocks[1]["source"]["data"].as_str().unwrap());
    assert_eq!(summary["bytes"], json!(bytes.len()));

    // The neutral result keeps the image for the next request and for a
    // transcript.
    let Message::Tool(stored) = &outcome.messages[2] else {
        panic!("the result follows the call")
    };
    assert!(
        matches!(&stored.parts[..], [Content::Image { media_type, data }] if media_type == "image/png" && *data == bytes)
    );

    // The fake refuses what Anthropic refuses: a media type off its list,
    // and bytes that are not what the media type says.
    let dialect = AnthropicDialect::default();
    assert_eq!(dialect.check(&request), Ok(()));
    let mut bmp = request.clone();
    let at = image_path(&bmp.body);
    *pointer(&mut bmp.body, &format!("{at}/source/media_type")) = json!("image/bmp");
    let (status, message) = dialect.check(&bmp).unwrap_err();
    assert_eq!(status, 400);
    assert!(
        message.contains("media_type: Input should be 'image/jpeg'"),
        "{message}"
    );
    let mut lying = request.clone();
    *pointer(&mut lying.body, &format!("{at}/source/media_type")) = json!("image/jpeg");
    let (_, message) = dialect.check(&lying).unwrap_err();
    assert!(
        message.contains("appears to be a image/png image"),
        "{message}"
    );
}

/// The JSON pointer of the first image block of an Anthropic body.
fn image_path(body: &Value) -> String {
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            for (k, c) in b["content"].as_array().into_iter().flatten().enumerate() {
                if c["type"] == "image" {
                    return format!("/messages/{i}/content/{j}/content/{k}");
                }
            }
        }
    }
    panic!("no image block in {body}")
}

fn pointer<'a>(body: &'a mut Value, at: &str) -> &'a mut Value {
    body.pointer_mut(at)
        .unwrap_or_else(|| panic!("no {at} in the body"))
}

#[tokio::test]
async fn an_image_result_reaches_the_responses_api_as_an_input_image() {
    let fake = FakeResponses::start().await;
    let (_, request) = chart_run(
        &fake,
        ProviderKind::OpenAiResponses,
        "gpt-5",
        RunnerConfig::default(),
    )
    .await;
    let items = request.body["input"].as_array().unwrap();
    let index = items
        .iter()
        .position(|i| i["type"] == "function_call_output")
        .expect("the call's output");
    let output = items[index]["output"].as_array().expect("a list of items");
    assert_eq!(output.len(), 2, "{output:?}");
    assert_eq!(output[0]["type"], "input_text");
    assert_eq!(output[1]["type"], "input_image");
    let url = output[1]["image_url"].as_str().unwrap();
    let data = url
        .strip_prefix("data:image/png;base64,")
        .expect("a PNG data URL");
    png(data);

    let dialect = ResponsesDialect::default();
    assert_eq!(dialect.check(&request), Ok(()));
    let mut bmp = request.clone();
    bmp.body["input"][index]["output"][1]["image_url"] =
        json!(format!("data:image/bmp;base64,{data}"));
    let (status, message) = dialect.check(&bmp).unwrap_err();
    assert_eq!(status, 400);
    assert!(
        message.contains("but got unsupported MIME type 'image/bmp'"),
        "{message}"
    );
}

/// The `functionResponse` of a Gemini request body, and its pointer.
fn gemini_response(body: &Value) -> (String, Value) {
    for (i, c) in body["contents"].as_array().unwrap().iter().enumerate() {
        for (j, p) in c["parts"].as_array().into_iter().flatten().enumerate() {
            if p.get("functionResponse").is_some() {
                return (
                    format!("/contents/{i}/parts/{j}/functionResponse"),
                    p["functionResponse"].clone(),
                );
            }
        }
    }
    panic!("no functionResponse in {body}")
}

#[tokio::test]
async fn an_image_result_reaches_gemini_3_as_inline_data_and_older_models_as_a_stand_in() {
    let fake = FakeGemini::start().await;
    let (_, request) = chart_run(
        &fake,
        ProviderKind::Gemini,
        "gemini-3-pro-preview",
        RunnerConfig::default(),
    )
    .await;
    let (at, response) = gemini_response(&request.body);
    assert_eq!(response["response"]["width"], 320, "{response}");
    let parts = response["parts"].as_array().expect("media parts");
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png");
    png(parts[0]["inlineData"]["data"].as_str().unwrap());

    // Gemini before 3 refuses parts in a function response: the fake does,
    // and the client sends such a model a stand-in instead.
    let dialect = GeminiDialect::default();
    assert_eq!(dialect.check(&request), Ok(()));
    let mut older = request.clone();
    older.path = older
        .path
        .replace("gemini-3-pro-preview", "gemini-2.5-flash");
    let (status, message) = dialect.check(&older).unwrap_err();
    assert_eq!(status, 400);
    assert!(
        message.contains("not supported by model gemini-2.5-flash"),
        "{message}"
    );
    let mut bmp = request.clone();
    *pointer(&mut bmp.body, &format!("{at}/parts/0/inlineData/mimeType")) = json!("image/bmp");
    let (_, message) = dialect.check(&bmp).unwrap_err();
    assert!(
        message.contains("Unsupported MIME type: image/bmp"),
        "{message}"
    );

    let fake = FakeGemini::start().await;
    let (_, request) = chart_run(
        &fake,
        ProviderKind::Gemini,
        "gemini-2.5-flash",
        RunnerConfig::default(),
    )
    .await;
    let (_, response) = gemini_response(&request.body);
    assert!(response.get("parts").is_none(), "{response}");
    let note = response["response"]["attachments"][0].as_str().unwrap();
    assert!(
        note.starts_with("[image/png, ") && note.contains("not shown: this model takes JSON only"),
        "{note}"
    );
}

#[tokio::test]
async fn chat_completions_gets_the_text_and_a_stand_in_naming_the_image() {
    let fake = FakeOpenAi::start().await;
    let (_, request) = chart_run(
        &fake,
        ProviderKind::OpenAi,
        "test-model",
        RunnerConfig::default(),
    )
    .await;
    let messages = request.body["messages"].as_array().unwrap();
    let index = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let content = messages[index]["content"].as_str().expect("text");
    let (summary, stand_in) = content.split_once('\n').expect("two lines");
    let summary: Value = serde_json::from_str(summary).unwrap();
    let kb = summary["bytes"].as_u64().unwrap().div_ceil(1000);
    assert_eq!(
        stand_in,
        format!("[image/png, {kb} KB, not shown: this API takes text only in tool results]")
    );

    // An image part in a tool message is what OpenAI refuses.
    let dialect = OpenAiDialect::new(OpenAiFlavor::OpenAi);
    assert_eq!(dialect.check(&request), Ok(()));
    let mut image = request.clone();
    image.body["messages"][index]["content"] = json!([
        {"type": "text", "text": "a chart"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]);
    let (status, message) = dialect.check(&image).unwrap_err();
    assert_eq!(status, 400);
    assert!(
        message.contains("Image URLs are only allowed for messages with role 'user'"),
        "{message}"
    );
}

#[tokio::test]
async fn an_image_past_the_media_budget_is_sent_as_a_stand_in() {
    let fake = FakeAnthropic::start().await;
    let config = RunnerConfig {
        max_media_bytes: 100,
        ..RunnerConfig::default()
    };
    let (_, request) = chart_run(&fake, ProviderKind::Anthropic, "claude-test", config).await;
    let result = anthropic_result(&request.body);
    let blocks = result["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{result}");
    assert!(blocks.iter().all(|b| b["type"] == "text"), "{result}");
    let note = blocks[1]["text"].as_str().unwrap();
    assert!(
        note.starts_with("[image/png, ")
            && note.ends_with(
                "not shown: over the limit of 100 bytes of images and audio per tool result]"
            ),
        "{note}"
    );
}

#[tokio::test]
async fn a_transcript_with_an_image_result_saves_and_resumes_with_the_image() {
    let fake = FakeAnthropic::start().await;
    let (outcome, _) = chart_run(
        &fake,
        ProviderKind::Anthropic,
        "claude-test",
        RunnerConfig::default(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.json");
    Transcript::from_outcome(&outcome).save(&path).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["format"], json!(MEDIA_TRANSCRIPT_FORMAT));
    let loaded = Transcript::load(&path).unwrap();
    assert_eq!(loaded.messages, outcome.messages);

    let mut messages = loaded.messages;
    messages.push(Message::user("and as a line chart?"));
    fake.push(Turn::text("Later."));
    let plugins = plugin_subset(&["chart"]);
    ToolRunner::new(
        provider(ProviderKind::Anthropic, fake.url(), "claude-test"),
        registry(plugins.path()).await,
        RunnerConfig::default(),
        messages,
    )
    .await
    .unwrap();
    let resumed = fake.requests().pop().unwrap();
    let result = anthropic_result(&resumed.body);
    assert_eq!(result["content"][1]["type"], "image", "{result}");
    png(result["content"][1]["source"]["data"].as_str().unwrap());
}
