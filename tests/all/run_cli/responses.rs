//! `toolhost run --provider openai-responses`: a real plugin over the
//! strict Responses fake, and a reasoning model's items carried through a
//! `--transcript` file into a `--resume` run.

use serde_json::{Value, json};
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::providers::{FakeCall, FakeResponses, Turn};

use super::{assert_ok, toolhost_run};

async fn run(fake: &FakeResponses, prompt: &str, extra: &[&str]) -> std::process::Output {
    let mut args = fake.run_args(prompt);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    toolhost_run(args).await
}

fn calc(expression: &str) -> Turn {
    Turn::calls(vec![FakeCall::new(
        "calc_eval",
        json!({"expression": expression}),
    )])
    .with_reasoning("The calculator knows.")
}

fn of_kind<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[tokio::test]
async fn run_over_openai_responses_carries_reasoning_through_a_transcript() {
    let plugins = plugin_subset(&["calc"]);
    let plugins = plugins.path().to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let saved = work.path().join("first.json");
    let saved = saved.to_str().unwrap();
    let fake = FakeResponses::start().await;
    fake.push(calc("6*7"))
        .push(Turn::text("6*7 is 42."))
        .push(calc("42*2"))
        .push(Turn::text("Doubled, 84."));

    let out = run(
        &fake,
        "What is 6*7? Use the calculator.",
        &["--plugins", plugins, "--transcript", saved],
    )
    .await;
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "6*7 is 42.");
    let second = &fake.bodies()[1];
    let output = &of_kind(second, "function_call_output")[0]["output"];
    assert!(output.as_str().unwrap().contains("42"), "{output}");

    let out = run(
        &fake,
        "And doubled?",
        &["--plugins", plugins, "--resume", saved, "--stream"],
    )
    .await;
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Doubled, 84."),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 4, "the strict fake accepted every request");
    let last = &bodies[3];
    assert_eq!(last["stream"], true);
    let reasoning = of_kind(last, "reasoning");
    assert_eq!(
        reasoning.len(),
        2,
        "both rounds' reasoning went back: {last}"
    );
    assert!(reasoning.iter().all(|r| r["encrypted_content"].is_string()));
}

/// Issue 36, class 4: an answer past `--max-body-bytes` ends the run with
/// exit code 1 and an error naming the flag; the transcript keeps the
/// conversation up to that request, for a `--resume`.
#[tokio::test]
async fn run_stops_at_max_body_bytes_and_keeps_the_conversation() {
    let plugins = plugin_subset(&["calc"]);
    let plugins = plugins.path().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.json");
    let fake = FakeResponses::start().await;
    fake.push(calc("6*7"));
    fake.push(toolhost_tests::providers::Reply::endless(
        200,
        "application/json",
        r#"{"object":"response","output":[{"type":"message","content":[{"type":"output_text","text":""#,
        "a".repeat(64 << 10),
    ));
    let out = run(
        &fake,
        "What is 6*7?",
        &[
            "--plugins",
            plugins,
            "--max-body-bytes",
            "100000",
            "--transcript",
            transcript.to_str().unwrap(),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("100000-byte cap") && stderr.contains("--max-body-bytes"),
        "{stderr}"
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap();
    let messages = saved["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "the prompt, the call, its result: {saved}"
    );
    let result = messages[2]["content"].as_str().unwrap_or_default();
    assert!(result.contains("42"), "{saved}");
}

/// Issue 36, class 11: `--text-only` sends a tool's image as its text
/// stand-in, to a server that would refuse it.
#[tokio::test]
async fn run_text_only_sends_a_tool_image_as_its_stand_in() {
    let plugins = plugin_subset(&["chart"]);
    let plugins = plugins.path().to_str().unwrap();
    let fake = FakeResponses::start().await;
    fake.refuse_images(500);
    fake.push(Turn::calls(vec![FakeCall::new(
        "chart_draw",
        json!({"kind": "bar", "title": "Sales", "labels": ["Jan", "Feb"],
               "series": [{"name": "2026", "values": [3, 5]}], "width": 320, "height": 200}),
    )]));
    fake.push(Turn::text("A bar chart."));
    let out = run(
        &fake,
        "Chart my sales.",
        &["--plugins", plugins, "--text-only"],
    )
    .await;
    assert_ok(&out);
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 2, "no refused request");
    let text = bodies[1].to_string();
    assert!(!text.contains("input_image"), "{text}");
    assert!(
        text.contains("image/png")
            && text.contains("not shown: this model is set up to take no images"),
        "{text}"
    );
}
