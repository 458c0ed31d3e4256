use serde_json::{Value, json};

use super::*;
use crate::llm::{AssistantMessage, ToolCall, ToolResult};

/// A run's conversation with one answered call, and its report.
fn sample() -> Transcript {
    let call = ToolCall {
        id: "c1".into(),
        name: "calc_eval".into(),
        arguments: r#"{"expression":"6*7"}"#.into(),
        signature: None,
    };
    Transcript {
        messages: vec![
            Message::system("Be brief."),
            Message::user("What is 6*7?"),
            Message::Assistant(AssistantMessage {
                tool_calls: vec![call],
                ..AssistantMessage::default()
            }),
            Message::Tool(ToolResult {
                tool_call_id: "c1".into(),
                name: "calc_eval".into(),
                content: "42".into(),
                is_error: false,
                parts: Vec::new(),
            }),
            Message::Assistant(AssistantMessage {
                content: "6*7 is 42.".into(),
                ..AssistantMessage::default()
            }),
        ],
        stop_reason: Some(StopReason::Completed),
        iterations: 2,
        tool_calls: 1,
        usage: Usage {
            input_tokens: 30,
            output_tokens: 12,
        },
        final_text: Some("6*7 is 42.".into()),
        error: Some("none, really".into()),
        pending: None,
    }
}

fn saved(transcript: &Transcript) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.json");
    transcript.save(&path).unwrap();
    (dir, path)
}

#[test]
fn round_trip_through_a_file_and_a_value_keeps_every_field() {
    let transcript = sample();
    let (_dir, path) = saved(&transcript);
    assert_eq!(Transcript::load(&path).unwrap(), transcript);
    let value = transcript.to_value().unwrap();
    assert_eq!(value["format"], json!(TRANSCRIPT_FORMAT));
    assert_eq!(value["final"], json!("6*7 is 42."));
    assert_eq!(value["stop_reason"], json!("completed"));
    assert_eq!(Transcript::from_value(value).unwrap(), transcript);
    let bare = Transcript::new(vec![Message::user("hi")]);
    assert_eq!(
        Transcript::from_value(bare.to_value().unwrap()).unwrap(),
        bare
    );
}

#[test]
fn reformatting_the_file_is_not_a_change() {
    let (_dir, path) = saved(&sample());
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // Compact, and the keys of the top object in reverse order.
    let Value::Object(fields) = value else {
        panic!("an object")
    };
    let reversed: serde_json::Map<String, Value> = fields.into_iter().rev().collect();
    std::fs::write(&path, serde_json::to_string(&reversed).unwrap()).unwrap();
    assert_eq!(Transcript::load(&path).unwrap(), sample());
}

#[test]
fn other_format_versions_are_refused_by_number() {
    for found in [0u64, 5, 99] {
        let mut value = sample().to_value().unwrap();
        value["format"] = json!(found);
        let err = Transcript::from_value(value).unwrap_err();
        assert!(
            matches!(err, TranscriptError::Version { found: f } if f == found),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "transcript format {found}, this toolhost reads {TRANSCRIPT_FORMAT}"
            )),
            "{text}"
        );
    }
    let mut value = sample().to_value().unwrap();
    value["format"] = json!("2");
    assert!(matches!(
        Transcript::from_value(value),
        Err(TranscriptError::NotATranscript(_))
    ));
}

#[test]
fn format_1_files_without_a_digest_are_still_read() {
    let transcript = sample();
    let mut value = transcript.to_value().unwrap();
    let fields = value.as_object_mut().unwrap();
    fields.remove("digest");
    fields.insert("format".into(), json!(1));
    assert_eq!(Transcript::from_value(value.clone()).unwrap(), transcript);
    value.as_object_mut().unwrap().remove("format");
    assert_eq!(Transcript::from_value(value).unwrap(), transcript);
    // As `toolhost run` wrote them by hand in tests: messages only.
    let minimal = json!({"format": 1, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        Transcript::from_value(minimal).unwrap(),
        Transcript::new(vec![Message::user("hi")])
    );
}

/// A change made to a saved file, and what it changes.
type Edit = (&'static str, fn(&mut Value));

#[test]
fn edited_files_are_refused_as_tampered() {
    let edits: [Edit; 4] = [
        ("a message's text", |v| {
            v["messages"][1]["content"] = json!("What is 6*8?");
        }),
        ("a tool result", |v| {
            v["messages"][3]["content"] = json!("48")
        }),
        ("a dropped message", |v| {
            v["messages"].as_array_mut().unwrap().remove(0);
        }),
        ("the report", |v| v["iterations"] = json!(7)),
    ];
    for (what, edit) in edits {
        let (_dir, path) = saved(&sample());
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut value);
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        let err = Transcript::load(&path).unwrap_err();
        let TranscriptError::Tampered { expected, actual } = &err else {
            panic!("{what}: {err:?}");
        };
        assert_ne!(expected, actual);
        let text = err.to_string();
        assert!(text.contains("changed after it was saved"), "{text}");
        assert!(text.contains("--messages"), "says how to proceed: {text}");
    }
}

#[test]
fn a_format_2_file_without_its_digest_is_refused() {
    for digest in [None, Some(json!(42))] {
        let mut value = sample().to_value().unwrap();
        match digest {
            None => {
                value.as_object_mut().unwrap().remove("digest");
            }
            Some(d) => value["digest"] = d,
        }
        let err = Transcript::from_value(value).unwrap_err();
        assert!(err.to_string().contains("has a \"digest\" string"), "{err}");
    }
}

#[test]
fn truncated_files_are_refused_as_invalid_json() {
    let (_dir, path) = saved(&sample());
    let full = std::fs::read(&path).unwrap();
    for keep in [0, 1, full.len() / 3, full.len() / 2, full.len() - 3] {
        std::fs::write(&path, &full[..keep]).unwrap();
        let err = Transcript::load(&path).unwrap_err();
        assert!(matches!(err, TranscriptError::Json(_)), "{keep}: {err:?}");
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        assert!(
            std::error::Error::source(&err).is_some(),
            "the cause is kept"
        );
    }
}

#[test]
fn messages_that_break_the_invariant_are_refused_with_the_cause() {
    let mut transcript = sample();
    transcript.messages.truncate(3);
    // Sealed as it is: the digest matches, the invariant does not hold.
    let err = Transcript::from_value(transcript.to_value().unwrap()).unwrap_err();
    let TranscriptError::Invariant(cause) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(cause, InvariantError::Unanswered { .. }),
        "{cause}"
    );
    assert!(err.to_string().contains("tool-call invariant"), "{err}");
    let legacy =
        json!({"messages": [{"role": "tool", "tool_call_id": "x", "name": "t", "content": ""}]});
    assert!(matches!(
        Transcript::from_value(legacy),
        Err(TranscriptError::Invariant(
            InvariantError::UnknownResult { .. }
        ))
    ));
}

#[test]
fn shapes_that_are_no_transcript_are_refused() {
    let cases = [
        (json!([{"role": "user", "content": "hi"}]), "JSON object"),
        (json!({"format": 1}), "no \"messages\""),
        (
            json!({"format": 1, "messages": [{"role": "narrator"}]}),
            "documented shape",
        ),
        (
            json!({"format": 1, "messages": [], "iterations": "two"}),
            "documented shape",
        ),
    ];
    for (value, expected) in cases {
        let err = Transcript::from_value(value.clone()).unwrap_err();
        assert!(err.to_string().contains(expected), "{value}: {err}");
    }
}

#[test]
fn save_replaces_the_whole_file_and_leaves_no_temporary_file() {
    let (dir, path) = saved(&sample());
    std::fs::write(&path, "x".repeat(1 << 16)).unwrap();
    let short = Transcript::new(vec![Message::user("hi")]);
    short.save(&path).unwrap();
    assert_eq!(Transcript::load(&path).unwrap(), short);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("chat.json")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "owner only: {mode:o}");
    }
}

#[test]
fn a_failed_save_leaves_the_old_file_and_keeps_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("chat.json");
    let err = sample().save(&missing).unwrap_err();
    assert!(matches!(err, TranscriptError::Write(_)), "{err:?}");
    assert!(std::error::Error::source(&err).is_some());
    // A directory where the file should be: the directory stays.
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    assert!(matches!(
        sample().save(&taken),
        Err(TranscriptError::Write(_))
    ));
    assert!(taken.is_dir());
}

#[test]
fn load_reports_unreadable_files_with_the_io_cause() {
    let dir = tempfile::tempdir().unwrap();
    let err = Transcript::load(&dir.path().join("missing.json")).unwrap_err();
    let TranscriptError::Read(cause) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(cause.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn a_result_with_an_image_is_saved_as_format_4_and_loads_back_with_its_bytes() {
    let mut transcript = sample();
    let png = b"\x89PNG\r\n\x1a\n-rest".to_vec();
    if let Message::Tool(result) = &mut transcript.messages[3] {
        result.parts = vec![crate::tools::Content::Image {
            media_type: "image/png".into(),
            data: png.clone(),
        }];
    }
    let (_dir, path) = saved(&transcript);
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(value["format"], json!(MEDIA_TRANSCRIPT_FORMAT));
    assert_eq!(
        value["messages"][3]["parts"],
        json!([{"type": "image", "media_type": "image/png", "data": "iVBORw0KGgotcmVzdA=="}])
    );
    let back = Transcript::load(&path).unwrap();
    assert_eq!(back, transcript);

    // Parts under an older format's number: refused, not half-read.
    let mut older = value;
    older["format"] = json!(TRANSCRIPT_FORMAT);
    let err = Transcript::from_value(older).unwrap_err();
    assert!(
        err.to_string().contains("only a format 4 transcript"),
        "{err}"
    );

    // A transcript of text only stays format 2.
    assert_eq!(
        sample().to_value().unwrap()["format"],
        json!(TRANSCRIPT_FORMAT)
    );
}
