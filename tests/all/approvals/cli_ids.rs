//! `toolhost run`'s approval flags and call ids: the model chooses its call
//! ids, so a `--approve`/`--deny` PATTERN matches tool names only; a call
//! id approves (or refuses) one call of the paused round a `--resume`
//! continues, once, and no fresh call whatever its id.

use serde_json::Value;
use toolhost_tests::plugins::plugin_subset;
use toolhost_tests::providers::{FakeOpenAi, Turn};

use super::cli::{calc, no_terminal, results, run_args, text};

const REFUSED: &str = "permission_denied: toolhost run refused this call";
const RAN: &str = r#"{"value":42.0}"#;

#[tokio::test]
async fn a_pattern_never_matches_a_fresh_call_by_the_id_the_model_gave_it() {
    let plugins = plugin_subset(&["calc", "text"]);
    // (the id the model gives its `calc_eval` call, the flags, what the
    // call gets): an id equal to a pattern given for another tool (loaded
    // or not) approves nothing; an id equal to a --deny pattern refuses
    // nothing. (Ids with characters such as `*` are renamed by the
    // provider layer before anything sees them.)
    let cases: [(&str, &[&str], &str); 4] = [
        ("text_stats", &["--approve", "text_stats"], REFUSED),
        ("read_file", &["--approve", "read_file"], REFUSED),
        (
            "text-stats",
            &["--approve", "calc_x", "--approve", "text-stats"],
            REFUSED,
        ),
        (
            "text_stats",
            &["--approve", "calc_*", "--deny", "text_stats"],
            RAN,
        ),
    ];
    for (id, flags, expected) in cases {
        let fake = FakeOpenAi::start().await;
        fake.push(Turn::calls(vec![calc("6*7", id)]));
        fake.push(Turn::text("finished"));
        let mut all = vec!["--require-approval", "calc_eval"];
        all.extend_from_slice(flags);
        let out = no_terminal(run_args(&fake, plugins.path(), Some("6*7?"), &all)).await;
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", text(&out));
        let sent = results(&fake.bodies()[1]);
        assert_eq!(sent.len(), 1, "{flags:?}");
        assert_eq!(sent[0].0, id);
        assert!(sent[0].1.starts_with(expected), "{flags:?}: {}", sent[0].1);
    }
}

/// Pause a run whose model calls `calc_eval` with id `id` and, after the
/// round, once more with the same id: the transcript's path and the fake.
async fn paused_with_a_second_round(
    plugins: &std::path::Path,
    work: &std::path::Path,
    id: &str,
) -> (std::path::PathBuf, FakeOpenAi) {
    let paused = work.join("paused.json");
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![calc("6*7", id)]));
    fake.push(Turn::calls(vec![calc("1+1", id)]));
    fake.push(Turn::text("done"));
    let flags = [
        "--require-approval",
        "calc_eval",
        "--transcript",
        paused.to_str().unwrap(),
    ];
    let out = no_terminal(run_args(&fake, plugins, Some("6*7?"), &flags)).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("--approve-call {id}")), "{stderr}");
    (paused, fake)
}

#[tokio::test]
async fn a_resumed_call_s_id_approves_that_call_once_and_no_fresh_call_with_its_id() {
    let plugins = plugin_subset(&["calc"]);
    // The new flag, and the old `--approve CALL_ID` form of a resume.
    for flag in ["--approve-call", "--approve"] {
        let work = tempfile::tempdir().unwrap();
        let (paused, fake) =
            paused_with_a_second_round(plugins.path(), work.path(), "call_a").await;
        let flags = [
            "--resume",
            paused.to_str().unwrap(),
            "--require-approval",
            "calc_eval",
            flag,
            "call_a",
        ];
        let out = no_terminal(run_args(&fake, plugins.path(), None, &flags)).await;
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", text(&out));
        assert_eq!(fake.requests().len(), 3, "{flag}");
        let first = results(&fake.bodies()[1]);
        assert_eq!(first, [("call_a".to_owned(), RAN.to_owned())], "{flag}");
        // The model's next call reuses the id: it is a fresh call, and
        // nobody approved it.
        let second = results(&fake.bodies()[2]);
        assert_eq!(second.len(), 2, "{flag}: {second:?}");
        assert!(second[1].1.starts_with(REFUSED), "{flag}: {second:?}");
    }
}

#[tokio::test]
async fn on_resume_a_value_that_names_a_tool_is_a_pattern_and_not_a_paused_call_s_id() {
    let plugins = plugin_subset(&["calc", "text"]);
    // The model named its `calc_eval` call after the text tool (or a
    // pattern of it); the operator's `--approve` of that tool approves no
    // calc call: the round waits again.
    for id in ["text_stats", "text_*"] {
        let work = tempfile::tempdir().unwrap();
        let (paused, fake) = paused_with_a_second_round(plugins.path(), work.path(), id).await;
        let again = work.path().join("again.json");
        let flags = [
            "--resume",
            paused.to_str().unwrap(),
            "--approve",
            id,
            "--transcript",
            again.to_str().unwrap(),
        ];
        let out = no_terminal(run_args(&fake, plugins.path(), None, &flags)).await;
        assert_eq!(out.status.code(), Some(3), "{id}: {}", text(&out));
        assert_eq!(fake.requests().len(), 1, "{id}");
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
        assert_eq!(saved["pending"]["calls"][0]["state"], "awaiting", "{id}");

        // Said as a call id, it is that call's decision.
        let flags = ["--resume", again.to_str().unwrap(), "--approve-call", id];
        let out = no_terminal(run_args(&fake, plugins.path(), None, &flags)).await;
        assert_eq!(out.status.code(), Some(0), "{id}: {}", text(&out));
        assert_eq!(results(&fake.bodies()[1])[0].1, RAN, "{id}");
    }
}

#[tokio::test]
async fn call_decisions_need_a_resume_and_a_waiting_call() {
    let plugins = plugin_subset(&["calc"]);
    let fake = FakeOpenAi::start().await;
    let out = no_terminal(run_args(
        &fake,
        plugins.path(),
        Some("6*7?"),
        &["--approve-call", "call_a"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--resume"), "{}", text(&out));
    assert!(fake.requests().is_empty());

    let work = tempfile::tempdir().unwrap();
    let (paused, fake) = paused_with_a_second_round(plugins.path(), work.path(), "call_a").await;
    let flags = [
        "--resume",
        paused.to_str().unwrap(),
        "--approve-call",
        "call_zz",
    ];
    let out = no_terminal(run_args(&fake, plugins.path(), None, &flags)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("call_zz"), "{}", text(&out));
    assert_eq!(fake.requests().len(), 1, "nothing ran, nothing asked");
}
