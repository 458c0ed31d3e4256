//! `--transcript` / `--resume` over the library's `Transcript`: a file a
//! program saved resumes from the CLI, a file the CLI saved loads in a
//! program, and a file that was edited, cut short or is of another format
//! is refused before anything is sent.

use std::path::Path;

use serde_json::{Value, json};
use toolhost::llm::{AssistantMessage, Message, ToolCall, ToolResult};
use toolhost::runner::{MEDIA_TRANSCRIPT_FORMAT, TRANSCRIPT_FORMAT, Transcript, TranscriptError};
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::providers::{FakeCall, FakeOpenAi, Turn};

use super::{assert_ok, roles_and_text, run_against};

/// A conversation with one answered call, as a program would save it.
fn program_transcript() -> Transcript {
    Transcript::new(vec![
        Message::system("Be brief."),
        Message::user("What is 6*7?"),
        Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "call-1".into(),
                name: "calc_eval".into(),
                arguments: r#"{"expression":"6*7"}"#.into(),
                signature: None,
            }],
            ..AssistantMessage::default()
        }),
        Message::Tool(ToolResult {
            tool_call_id: "call-1".into(),
            name: "calc_eval".into(),
            content: "42".into(),
            is_error: false,
            parts: Vec::new(),
        }),
        Message::Assistant(AssistantMessage {
            content: "42.".into(),
            ..AssistantMessage::default()
        }),
    ])
}

#[tokio::test]
async fn a_transcript_a_program_saved_resumes_from_the_cli_and_the_cli_s_loads_back() {
    let work = tempfile::tempdir().unwrap();
    let saved = work.path().join("program.json");
    let next = work.path().join("next.json");
    program_transcript().save(&saved).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("84."));
    let flags = [
        "--plugins",
        empty.path().to_str().unwrap(),
        "--resume",
        saved.to_str().unwrap(),
        "--transcript",
        next.to_str().unwrap(),
    ];
    let out = run_against(&fake, "And doubled?", &flags).await;
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "84.");
    let sent = roles_and_text(&fake.bodies()[0]);
    let roles: Vec<&str> = sent.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(sent[5].1, json!("And doubled?"));

    // What the CLI wrote is a sealed transcript the library reads back.
    let written = Transcript::load(&next).unwrap();
    let mut expected = program_transcript().messages;
    expected.push(Message::user("And doubled?"));
    expected.push(Message::Assistant(AssistantMessage {
        content: "84.".into(),
        ..AssistantMessage::default()
    }));
    assert_eq!(written.messages, expected);
    assert_eq!(written.final_text.as_deref(), Some("84."));
    assert_eq!(written.iterations, 1);
    let raw: Value = serde_json::from_slice(&std::fs::read(&next).unwrap()).unwrap();
    assert_eq!(raw["format"], json!(TRANSCRIPT_FORMAT));
    assert!(
        raw["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:")),
        "{raw}"
    );
}

/// `--resume FILE` with `text` in FILE fails with exit 2, names the file,
/// says `expected`, and sends nothing.
async fn refused(fake: &FakeOpenAi, dir: &Path, name: &str, text: &[u8], expected: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let flags = [
        "--plugins",
        empty.path().to_str().unwrap(),
        "--resume",
        path.to_str().unwrap(),
    ];
    let out = run_against(fake, "next", &flags).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
    assert!(stderr.contains(expected), "{name}: {stderr}");
    assert!(stderr.contains(name), "the file is named: {stderr}");
}

#[tokio::test]
async fn resume_refuses_edited_truncated_and_other_format_transcripts() {
    let work = tempfile::tempdir().unwrap();
    let good = work.path().join("good.json");
    program_transcript().save(&good).unwrap();
    let text = std::fs::read(&good).unwrap();
    let value: Value = serde_json::from_slice(&text).unwrap();
    let fake = FakeOpenAi::start().await;

    let mut edited = value.clone();
    edited["messages"][3]["content"] = json!("41");
    let edited = serde_json::to_vec_pretty(&edited).unwrap();
    refused(
        &fake,
        work.path(),
        "edited.json",
        &edited,
        "changed after it was saved",
    )
    .await;
    refused(&fake, work.path(), "edited.json", &edited, "--messages").await;

    for keep in [text.len() / 2, text.len() - 3] {
        refused(
            &fake,
            work.path(),
            "cut.json",
            &text[..keep],
            "not valid JSON",
        )
        .await;
    }

    let mut future = value.clone();
    // 3 is a paused run's transcript, 4 one with images: the next unknown
    // format is 5.
    future["format"] = json!(MEDIA_TRANSCRIPT_FORMAT + 1);
    let future = serde_json::to_vec(&future).unwrap();
    let expected = format!(
        "transcript format {}, this toolhost reads {TRANSCRIPT_FORMAT}",
        MEDIA_TRANSCRIPT_FORMAT + 1
    );
    refused(&fake, work.path(), "future.json", &future, &expected).await;

    let mut unsealed = value;
    unsealed.as_object_mut().unwrap().remove("digest");
    let unsealed = serde_json::to_vec(&unsealed).unwrap();
    refused(&fake, work.path(), "unsealed.json", &unsealed, "\"digest\"").await;
    assert!(fake.bodies().is_empty(), "no request was sent");

    // The library says the same, by type.
    std::fs::write(&good, &edited).unwrap();
    assert!(matches!(
        Transcript::load(&good),
        Err(TranscriptError::Tampered { .. })
    ));
}

/// The shape `toolhost run` wrote before transcripts were sealed (format
/// 1, no digest) still resumes.
#[tokio::test]
async fn resume_still_reads_format_1_transcripts() {
    let work = tempfile::tempdir().unwrap();
    let old = work.path().join("old.json");
    let plugins = plugin_subset(&["calc"]);
    let messages = serde_json::to_value(&program_transcript().messages).unwrap();
    let text = json!({
        "format": 1, "final": "42.", "stop_reason": "completed", "iterations": 2,
        "tool_calls": 1, "usage": {"input_tokens": 1, "output_tokens": 1},
        "messages": messages,
    });
    std::fs::write(&old, text.to_string()).unwrap();
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![FakeCall::new(
        "calc_eval",
        json!({"expression": "42*2"}),
    )]));
    fake.push(Turn::text("84."));
    let flags = [
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--resume",
        old.to_str().unwrap(),
    ];
    let out = run_against(&fake, "And doubled?", &flags).await;
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "84.");
    assert_eq!(roles_and_text(&fake.bodies()[0]).len(), 6);
}
