//! `toolhost resources`, `read`, `prompt`, `complete` and `run --prompt/--attach`
//! (issue 42) with an `[[mcp]]` upstream in the host config, npm
//! `@modelcontextprotocol/server-everything`, and a loopback provider.

use std::process::Output;

use serde_json::{Value, json};
use toolhost_tests::plugins::toolhost_run;
use toolhost_tests::providers::{FakeAnthropic, FakeGemini, FakeOpenAi, Turn};

use crate::mcp::offers::Setup;

/// An empty plugin directory and a host config with server-everything
/// over stdio as `[[mcp]]` server `everything`.
struct Upstream(Setup);

impl Upstream {
    fn new() -> Self {
        Self(Setup::new())
    }

    /// `toolhost ARGS --plugins DIR --config FILE`.
    async fn toolhost(&self, args: &[&str]) -> Output {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend([
            "--plugins".to_owned(),
            self.0.plugins().display().to_string(),
            "--config".to_owned(),
            self.0.config(),
        ]);
        toolhost_run(all).await
    }
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Exit code 2 (a usage error) with `needle` in the message, and nothing
/// on stdout; never a panic.
fn assert_refused(out: &Output, needle: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains(needle), "{needle:?} in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn resources_lists_the_upstream_s_resources_and_templates() {
    let upstream = Upstream::new();
    let out = upstream.toolhost(&["resources"]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with(
            "demo://resource/static/document/architecture.md  architecture.md  (text/markdown)  [mcp:everything]"
        )),
        "one resource a line: {stdout}"
    );
    assert!(
        stdout.contains("  demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource"),
        "{stdout}"
    );

    let out = upstream.toolhost(&["resources", "--json"]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let listing: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let resources = listing["resources"].as_array().unwrap();
    assert!(
        resources.iter().any(
            |r| r["uri"] == "demo://resource/static/document/features.md"
                && r["owner"] == "mcp:everything"
                && r["mime_type"] == "text/markdown"
        ),
        "{listing}"
    );
    assert!(
        listing["templates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uri"] == "demo://resource/dynamic/blob/{resourceId}"),
        "{listing}"
    );
}

#[tokio::test]
async fn read_prints_text_writes_bytes_to_a_file_and_refuses_an_unknown_uri() {
    let upstream = Upstream::new();
    let out = upstream
        .toolhost(&["read", "demo://resource/dynamic/text/3"])
        .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("Resource 3: This is a plaintext resource created at"),
        "{stdout}"
    );

    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("blob.bin");
    let out = upstream
        .toolhost(&[
            "read",
            "demo://resource/dynamic/blob/4",
            "--out",
            file.to_str().unwrap(),
        ])
        .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let bytes = std::fs::read(&file).expect("--out was written");
    assert!(
        bytes.starts_with(b"Resource 4: This is a base64 blob created at"),
        "the blob's bytes, decoded: {}",
        String::from_utf8_lossy(&bytes)
    );

    let out = upstream.toolhost(&["read", "demo://no/such/thing"]).await;
    assert_refused(&out, "no resource has URI `demo://no/such/thing`");
    assert_refused(&out, "toolhost resources");
}

#[tokio::test]
async fn prompt_lists_the_prompts_and_prints_one_s_messages() {
    let upstream = Upstream::new();
    let out = upstream.toolhost(&["prompt"]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("everything_args-prompt  [mcp:everything]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    --arg city=... (required)  Name of the city"),
        "{stdout}"
    );

    let args = [
        "prompt",
        "everything_args-prompt",
        "--arg",
        "city=Warsaw",
        "--arg",
        "state=Mazovia",
    ];
    let out = upstream.toolhost(&args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "user: What's weather in Warsaw, Mazovia?\n");

    let out = upstream.toolhost(&[&args[..], &["--json"]].concat()).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let printed: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(
        printed,
        json!({"prompt": "everything_args-prompt", "messages": [
            {"role": "user", "content": "What's weather in Warsaw, Mazovia?"}]})
    );

    let out = upstream
        .toolhost(&["prompt", "everything_args-prompt", "--arg", "state=Mazovia"])
        .await;
    assert_refused(
        &out,
        "prompt `everything_args-prompt` needs argument `city`: give it as city=VALUE",
    );
    let out = upstream.toolhost(&["prompt", "everything_no-such"]).await;
    assert_refused(&out, "no prompt is named `everything_no-such`");
    assert_refused(&out, "everything_args-prompt");
    let out = upstream
        .toolhost(&["prompt", "everything_args-prompt", "--arg", "city"])
        .await;
    assert_refused(&out, "is not KEY=VALUE");
}

/// `toolhost run ARGS` against a fake at `url` speaking `provider`.
#[tokio::test]
async fn complete_prints_a_prompt_argument_s_values_one_a_line() {
    let upstream = Upstream::new();
    let args = [
        "complete",
        "--prompt",
        "everything_completable-prompt",
        "name",
        "--value",
        "A",
        "--arg",
        "department=Engineering",
    ];
    let out = upstream.toolhost(&args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "Alice\n");

    let out = upstream.toolhost(&[&args[..], &["--json"]].concat()).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let printed: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(printed["values"], json!(["Alice"]), "{printed}");

    let out = upstream
        .toolhost(&["complete", "--prompt", "everything_no-such", "name"])
        .await;
    assert_refused(&out, "no prompt is named `everything_no-such`");
    assert_refused(&out, "toolhost prompt");
}

async fn run(upstream: &Upstream, provider: &str, url: &str, args: &[&str]) -> Output {
    let common = [
        "run",
        "--provider",
        provider,
        "--base-url",
        url,
        "--api-key-env",
        "TOOLHOST_TEST_KEY",
        "--model",
        "test-model",
    ];
    upstream.toolhost(&[&common[..], args].concat()).await
}

#[tokio::test]
async fn run_prompt_opens_the_run_with_the_prompt_s_messages_on_two_wire_formats() {
    let upstream = Upstream::new();
    let args = [
        "--prompt",
        "everything_args-prompt",
        "--arg",
        "city=Warsaw",
        "And tomorrow?",
    ];

    let openai = FakeOpenAi::start().await;
    openai.push(Turn::text("Sunny."));
    let out = run(&upstream, "openai", &openai.url(), &args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "Sunny.");
    assert_eq!(
        openai.bodies()[0]["messages"],
        json!([
            {"role": "user", "content": "What's weather in Warsaw?"},
            {"role": "user", "content": "And tomorrow?"},
        ])
    );

    let anthropic = FakeAnthropic::start().await;
    anthropic.push(Turn::text("Sunny."));
    let out = run(&upstream, "anthropic", &anthropic.url(), &args[..4]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        anthropic.bodies()[0]["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What's weather in Warsaw?"}]}]),
        "without a task text, the prompt's messages are the whole opening"
    );
}

#[tokio::test]
async fn run_attach_sends_the_resource_after_a_prompt_that_embeds_one() {
    let upstream = Upstream::new();
    let gemini = FakeGemini::start().await;
    gemini.push(Turn::text("Two resources."));
    let args = [
        "--prompt",
        "everything_resource-prompt",
        "--arg",
        "resourceType=Text",
        "--arg",
        "resourceId=2",
        "--attach",
        "demo://resource/dynamic/blob/5",
        "Compare them.",
    ];
    let out = run(&upstream, "gemini", &gemini.url(), &args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let contents = &gemini.bodies()[0]["contents"];
    let parts: Vec<&str> = contents[0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(contents.as_array().unwrap().len(), 1, "{contents}");
    assert_eq!(parts.len(), 4, "{contents}");
    assert!(
        parts[0].starts_with("This prompt includes the Text resource with id: 2."),
        "{contents}"
    );
    assert!(
        parts[1].starts_with(
            "Resource `demo://resource/dynamic/text/2` (text/plain):\nResource 2: This is a plaintext resource"
        ),
        "the embedded resource's text under its URI: {contents}"
    );
    assert!(
        parts[2].starts_with(
            "Resource `demo://resource/dynamic/blob/5` (text/plain):\nResource 5: This is a base64 blob"
        ),
        "the attached resource (bytes of text/plain, as text): {contents}"
    );
    assert_eq!(parts[3], "Compare them.");
}

#[tokio::test]
async fn run_with_an_unknown_prompt_uri_or_argument_exits_2_before_asking_the_model() {
    let upstream = Upstream::new();
    let openai = FakeOpenAi::start().await;
    for (args, needle) in [
        (
            &["--prompt", "everything_nope", "Hi"][..],
            "--prompt everything_nope: no prompt is named `everything_nope`",
        ),
        (
            &["--prompt", "everything_args-prompt", "--arg", "town=Warsaw"][..],
            "needs argument `city`",
        ),
        (
            &[
                "--prompt",
                "everything_args-prompt",
                "--arg",
                "city=Warsaw",
                "--arg",
                "town=x",
            ][..],
            "has no argument `town`",
        ),
        (
            &["--attach", "demo://no/such/thing", "Hi"][..],
            "--attach demo://no/such/thing: no resource has URI",
        ),
    ] {
        let out = run(&upstream, "openai", &openai.url(), args).await;
        assert_refused(&out, needle);
    }
    assert!(openai.requests().is_empty(), "the model was never asked");
}
