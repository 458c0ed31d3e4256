//! The library: a run pauses on a call that needs approval, reports it,
//! and continues with the decisions — in the same process, after its
//! transcript was saved and loaded, or through an async approver another
//! task answers — without asking the model again for the decided round.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::approval::{ApprovalPolicy, ApprovalRequest, Decision, ToolPattern};
use toolhost::llm::{Message, ProviderKind};
use toolhost::runner::{
    CallStatus, PAUSED_TRANSCRIPT_FORMAT, RunErrorKind, RunItem, RunOutcome, RunnerConfig,
    StopReason, ToolRunner, Transcript, TranscriptError,
};
use toolhost_tests::providers::{FakeAnthropic, FakeCall, FakeOpenAi, Turn};

use super::{provider, registry};

pub(super) type Runs = Arc<Mutex<Vec<String>>>;

pub(super) fn prompt() -> Vec<Message> {
    vec![Message::system("You are a test."), Message::user("go")]
}

pub(super) fn requiring(pattern: &str) -> RunnerConfig {
    RunnerConfig {
        approval: ApprovalPolicy::requiring([ToolPattern::new(pattern).unwrap()]),
        ..RunnerConfig::default()
    }
}

/// The OpenAI `tool` messages of a request body: (tool_call_id, content).
pub(super) fn openai_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A fake whose first turn calls `delete` (it asks for approval itself)
/// and `read` (no approval), then answers.
async fn delete_and_read() -> FakeOpenAi {
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("delete", json!({"path": "/tmp/x"})).with_id("call_del"),
        FakeCall::new("read", json!({})).with_id("call_read"),
    ]));
    fake.push(Turn::text("done"));
    fake
}

fn assert_paused_on_delete(outcome: &RunOutcome, runs: &Runs) {
    assert_eq!(outcome.stop_reason, StopReason::AwaitingApproval);
    let round = outcome.pending.as_ref().expect("a waiting round");
    let waiting = round.awaiting();
    assert_eq!(
        waiting,
        [ApprovalRequest {
            call_id: "call_del".into(),
            tool: "delete".into(),
            arguments: json!({"path": "/tmp/x"}).to_string(),
        }]
    );
    // Nothing of the round ran, and the round is not in the messages yet:
    // they keep the invariant on their own.
    assert!(
        runs.lock().unwrap().is_empty(),
        "{:?}",
        runs.lock().unwrap()
    );
    assert_eq!(outcome.messages, prompt());
    assert_eq!(outcome.final_text, "");
}

#[tokio::test]
async fn a_paused_run_continues_in_the_same_process_without_a_new_request_for_the_round() {
    let fake = delete_and_read().await;
    let runs = Runs::default();
    let registry = registry(&runs);
    let llm = provider(ProviderKind::OpenAi, fake.url());
    let config = RunnerConfig::default();
    let outcome = ToolRunner::new(llm.clone(), registry.clone(), config.clone(), prompt())
        .await
        .expect("a paused run is not an error");
    assert_paused_on_delete(&outcome, &runs);
    assert_eq!(fake.requests().len(), 1);

    let resumed = ToolRunner::resume(llm, registry, config, Transcript::from_outcome(&outcome))
        .with_session(outcome.session.clone())
        .decide("call_del", Decision::Approve)
        .await
        .expect("the resumed run");
    assert_eq!(resumed.stop_reason, StopReason::Completed);
    assert_eq!(resumed.final_text, "done");
    // One more request in all: the decided round went straight to its
    // results, then the model was asked once.
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(
        openai_results(&fake.bodies()[1]),
        [
            (
                "call_del".to_owned(),
                json!({"deleted": "/tmp/x"}).to_string()
            ),
            ("call_read".to_owned(), json!("contents").to_string()),
        ]
    );
    assert_eq!(*runs.lock().unwrap(), ["delete \"/tmp/x\"", "read"]);
    assert!(resumed.pending.is_none());
}

#[tokio::test]
async fn a_paused_run_saved_to_a_file_is_denied_in_a_new_runner_and_the_model_hears_why() {
    let fake = delete_and_read().await;
    let runs = Runs::default();
    let llm = provider(ProviderKind::OpenAi, fake.url());
    let outcome = ToolRunner::new(
        llm.clone(),
        registry(&runs),
        RunnerConfig::default(),
        prompt(),
    )
    .await
    .unwrap();
    assert_paused_on_delete(&outcome, &runs);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paused.json");
    Transcript::from_outcome(&outcome).save(&path).unwrap();
    let text: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(text["format"], json!(PAUSED_TRANSCRIPT_FORMAT));
    assert_eq!(text["stop_reason"], json!("awaiting_approval"));

    // As another process would: a fresh registry, the file, a decision.
    let loaded = Transcript::load(&path).unwrap();
    let mut records = Vec::new();
    let mut runner = ToolRunner::resume(llm, registry(&runs), RunnerConfig::default(), loaded)
        .decide(
            "call_del",
            Decision::deny("the reviewer", "not on a Friday"),
        );
    use futures::StreamExt;
    let mut finished = None;
    while let Some(item) = runner.next().await {
        match item.unwrap() {
            RunItem::Iteration(it) => records.extend(it.calls),
            RunItem::Finished(outcome) => finished = Some(outcome),
        }
    }
    let finished = finished.unwrap();
    assert_eq!(finished.stop_reason, StopReason::Completed);
    assert_eq!(records[0].status, CallStatus::Refused);
    assert_eq!(
        records[0].error_kind,
        Some(toolhost::tools::ToolErrorKind::PermissionDenied)
    );
    assert_eq!(records[1].status, CallStatus::Succeeded);
    let sent = openai_results(&fake.bodies()[1]);
    assert_eq!(
        sent[0],
        (
            "call_del".to_owned(),
            "permission_denied: the reviewer refused this call: not on a Friday".to_owned()
        )
    );
    assert_eq!(*runs.lock().unwrap(), ["read"], "the denied call never ran");
}

#[tokio::test]
async fn a_resumed_run_without_every_decision_pauses_again_without_asking_the_model() {
    let fake = delete_and_read().await;
    let runs = Runs::default();
    let llm = provider(ProviderKind::OpenAi, fake.url());
    let outcome = ToolRunner::new(
        llm.clone(),
        registry(&runs),
        RunnerConfig::default(),
        prompt(),
    )
    .await
    .unwrap();
    let again = ToolRunner::resume(
        llm.clone(),
        registry(&runs),
        RunnerConfig::default(),
        Transcript::from_outcome(&outcome),
    )
    .await
    .unwrap();
    assert_paused_on_delete(&again, &runs);
    assert_eq!(again.pending, outcome.pending);
    assert_eq!(fake.requests().len(), 1);

    // A decision for a call that does not wait is refused before anything
    // runs, and the round still waits in the error's outcome.
    let err = ToolRunner::resume(
        llm,
        registry(&runs),
        RunnerConfig::default(),
        Transcript::from_outcome(&again),
    )
    .decide("call_read", Decision::Approve)
    .await
    .expect_err("call_read does not wait");
    assert!(matches!(err.kind, RunErrorKind::Decision { .. }), "{err}");
    assert!(err.to_string().contains("call_del"), "{err}");
    assert_eq!(err.outcome.pending, outcome.pending);
    assert!(runs.lock().unwrap().is_empty());
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_async_approver_answered_from_another_task_lets_the_run_go_on_without_a_pause() {
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("add", json!({"a": 1, "b": 2})).with_id("call_1"),
        FakeCall::new("add", json!({"a": 3, "b": 4})).with_id("call_2"),
    ]));
    fake.push(Turn::text("3 and nothing"));
    let runs = Runs::default();
    // The "UI": it hears of each request and answers later, from its own task.
    let (asked, mut questions) = tokio::sync::mpsc::unbounded_channel::<(
        ApprovalRequest,
        tokio::sync::oneshot::Sender<Decision>,
    )>();
    let ui = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some((request, answer)) = questions.recv().await {
            let decision = if request.arguments.contains("\"a\":1") {
                Decision::Approve
            } else {
                Decision::deny("the user", "too large")
            };
            seen.push(request.call_id.clone());
            answer.send(decision).unwrap();
        }
        seen
    });
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, fake.url()),
        registry(&runs),
        requiring("ad*"),
        prompt(),
    )
    .approver(move |request: ApprovalRequest| {
        let asked = asked.clone();
        async move {
            let (answer, decision) = tokio::sync::oneshot::channel();
            asked.send((request, answer)).unwrap();
            decision.await.unwrap_or(Decision::Defer)
        }
    })
    .await
    .unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Completed);
    assert_eq!(ui.await.unwrap(), ["call_1", "call_2"]);
    let sent = openai_results(&fake.bodies()[1]);
    assert_eq!(sent[0].1, "3.0");
    assert_eq!(
        sent[1].1,
        "permission_denied: the user refused this call: too large"
    );
    assert_eq!(*runs.lock().unwrap(), ["add"]);
}

#[tokio::test]
async fn a_resumed_round_keeps_anthropic_s_results_right_after_their_calls() {
    let fake = FakeAnthropic::start().await;
    fake.push(Turn::calls(vec![
        FakeCall::new("read", json!({})),
        FakeCall::new("add", json!({"a": 1, "b": 1})),
    ]));
    fake.push(Turn::text("2"));
    let runs = Runs::default();
    let llm = provider(ProviderKind::Anthropic, fake.url());
    let config = requiring("add");
    let outcome = ToolRunner::new(llm.clone(), registry(&runs), config.clone(), prompt())
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, StopReason::AwaitingApproval);
    let waiting = outcome.pending.as_ref().unwrap().awaiting();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].tool, "add");
    let mut runner = ToolRunner::resume(
        llm,
        registry(&runs),
        config,
        Transcript::from_outcome(&outcome),
    );
    for request in waiting {
        runner = runner.decide(request.call_id, Decision::Approve);
    }
    // The fake rejects a tool_use without its tool_result right after it.
    let done = runner
        .await
        .expect("the provider accepts the resumed history");
    assert_eq!(done.final_text, "2");
    assert_eq!(*runs.lock().unwrap(), ["read", "add"]);
}

#[tokio::test]
async fn a_paused_transcript_whose_waiting_round_was_edited_is_refused() {
    let fake = delete_and_read().await;
    let runs = Runs::default();
    let outcome = ToolRunner::new(
        provider(ProviderKind::OpenAi, fake.url()),
        registry(&runs),
        RunnerConfig::default(),
        prompt(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paused.json");
    Transcript::from_outcome(&outcome).save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // Someone widens what was to be approved.
    let edited = text.replace("/tmp/x", "/etc");
    assert_ne!(edited, text);
    std::fs::write(&path, edited).unwrap();
    let err = Transcript::load(&path).expect_err("tampered");
    assert!(matches!(err, TranscriptError::Tampered { .. }), "{err}");

    // A format 2 file may not smuggle a waiting round in.
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["format"] = json!(2);
    let err = Transcript::from_value(value).expect_err("format 2 with pending");
    assert!(err.to_string().contains("format 3"), "{err}");
}

#[test]
fn the_declarations_of_each_tool_source_carry_needs_approval() {
    // A plugin manifest's [exec], an [[mcp]] declaration's exec: one type.
    let exec: toolhost::tools::ExecOverrides = toml::from_str("needs_approval = true").unwrap();
    assert!(exec.options().unwrap().needs_approval);
    assert!(!toolhost::tools::ExecOptions::default().needs_approval);
    // A [[rest]] declaration.
    let rest: toolhost::tools::rest::RestDecl = toml::from_str(
        "name = \"wipe\"\ndescription = \"Wipes.\"\nurl = \"https://example.com/wipe\"\nneeds_approval = true\n",
    )
    .unwrap();
    assert!(rest.needs_approval);
    // The operator's host config.
    let config: toolhost::config::HostConfig =
        toml::from_str("[approval]\nrequire = [\"wipe\", \"fs_*\"]\n").unwrap();
    assert!(config.approval.requires("fs_write") && config.approval.requires("wipe"));
    assert!(!config.approval.requires("read"));
    let error = toml::from_str::<toolhost::config::HostConfig>("[approval]\nrequire = [\"a b\"]\n")
        .expect_err("a pattern with a space");
    assert!(error.to_string().contains("tool pattern"), "{error}");
}
