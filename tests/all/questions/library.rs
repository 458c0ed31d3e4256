//! Questions through the library: a [`QuestionSink`] on the call's context.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{
    Answer, CallContext, MAX_QUESTIONS_PER_CALL, Question, QuestionSink, ToolErrorKind,
    ToolRegistry,
};
use toolhost_tests::mcp::test_cache_dir;
use toolhost_tests::plugins::{copy_plugin_from, hostile_dir};

/// A registry with `hostile_ask` (its manifest: a 1 s deadline).
async fn registry(dir: &Path) -> Arc<ToolRegistry> {
    copy_plugin_from(hostile_dir(), "hostile_ask", dir);
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir()))
        .expect("the sandbox starts");
    let report = host.load_dir(dir).await.expect("the directory loads");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    Arc::new(report.registry().expect("a registry"))
}

/// Call `hostile_ask` with `input`; its answer list, or the error.
async fn ask(
    input: Value,
    sink: Option<QuestionSink>,
) -> Result<Vec<Value>, (ToolErrorKind, String)> {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path()).await;
    let cx = CallContext {
        questions: sink,
        ..CallContext::default()
    };
    match registry
        .call("hostile_ask", &input.to_string(), &cx)
        .await
        .output
    {
        Ok(out) => Ok(out["answers"].as_array().cloned().unwrap_or_default()),
        Err(e) => Err((e.kind, e.message)),
    }
}

/// A sink that notes each question and answers with `answer`.
fn answering(answer: Answer) -> (QuestionSink, Arc<Mutex<Vec<Question>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let sink = QuestionSink::new(move |question: Question| {
        seen.lock().unwrap().push(question);
        let answer = answer.clone();
        async move { answer }
    });
    (sink, asked)
}

fn fields(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

#[tokio::test]
async fn an_accepted_answer_reaches_the_tool_with_the_question_it_asked() {
    let (sink, asked) = answering(Answer::Accept(fields(
        json!({"name": "Ada", "size": "L", "count": 3}),
    )));
    let answers = ask(json!({}), Some(sink)).await.unwrap();
    assert_eq!(
        answers,
        [
            json!({"action": "accept", "content": {"name": "Ada", "size": "L", "count": 3, "gift": null}})
        ]
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "hostile_ask");
    assert_eq!(asked[0].message, "Who is this order for?");
    assert_eq!(
        asked[0].schema["properties"]["size"]["enum"],
        json!(["S", "M", "L"])
    );
    assert!(asked[0].requires("name") && !asked[0].requires("size"));
}

#[tokio::test]
async fn decline_and_cancel_reach_the_tool_as_they_are() {
    let (sink, _) = answering(Answer::Decline);
    assert_eq!(
        ask(json!({}), Some(sink)).await.unwrap(),
        [json!({"action": "decline"})]
    );
    let (sink, _) = answering(Answer::Cancel);
    assert_eq!(
        ask(json!({}), Some(sink)).await.unwrap(),
        [json!({"action": "cancel"})]
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_schema_is_a_cancel_for_the_tool() {
    // `size` is not one of the choices; `count` is over its maximum.
    for wrong in [
        json!({"name": "Ada", "size": "XL"}),
        json!({"name": "Ada", "count": 11}),
        json!({"size": "S"}),
    ] {
        let (sink, _) = answering(Answer::Accept(fields(wrong.clone())));
        assert_eq!(
            ask(json!({}), Some(sink)).await.unwrap(),
            [json!({"action": "cancel"})],
            "{wrong}"
        );
    }
}

#[tokio::test]
async fn a_question_past_its_time_limit_is_cancelled() {
    let sink = QuestionSink::new(|_: Question| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Answer::Decline
    })
    .with_time_limit(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(
        ask(json!({}), Some(sink)).await.unwrap(),
        [json!({"action": "cancel"})]
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn without_a_sink_the_tool_hears_that_no_one_can_be_asked() {
    let answers = ask(json!({}), None).await.unwrap();
    let error = answers[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("no one to ask: no one can be asked here"),
        "{error}"
    );
}

#[tokio::test]
async fn schemas_of_another_shape_or_over_budget_are_refused_without_asking() {
    for (shape, why) in [
        ("nested", "`type` must be string"),
        ("huge", "bytes; the most is"),
    ] {
        let (sink, asked) = answering(Answer::Decline);
        let answers = ask(json!({"shape": shape}), Some(sink)).await.unwrap();
        let error = answers[0]["error"].as_str().unwrap();
        assert!(
            error.starts_with("the question cannot be asked") && error.contains(why),
            "{shape}: {error}"
        );
        assert!(asked.lock().unwrap().is_empty(), "{shape}: nobody is asked");
    }
}

/// Issue 36 (class 8): with no one to ask, a bad schema was answered
/// `unavailable` (so tests never saw it refused). The schema is checked
/// first, always: the plugin hears its own error.
#[tokio::test]
async fn a_bad_schema_is_the_plugin_s_error_even_when_no_one_can_be_asked() {
    for (shape, why) in [
        ("nested", "`type` must be string"),
        ("huge", "bytes; the most is"),
    ] {
        let answers = ask(json!({"shape": shape}), None).await.unwrap();
        let error = answers[0]["error"].as_str().unwrap();
        assert!(
            error.starts_with("the question cannot be asked") && error.contains(why),
            "{shape}: {error}"
        );
    }
    // A good one, with no one to ask, is `unavailable`.
    for shape in ["derived", "empty"] {
        let answers = ask(json!({"shape": shape}), None).await.unwrap();
        let error = answers[0]["error"].as_str().unwrap();
        assert!(error.starts_with("no one to ask"), "{shape}: {error}");
    }
}

/// Issue 36 (class 8): what `#[derive(JsonSchema)]` writes (`$schema`,
/// `additionalProperties`, `Option`s, `format`) and a schema without
/// `properties` are asked, in elicitation's form, and answered.
#[tokio::test]
async fn derived_and_field_less_schemas_are_asked_in_elicitation_s_form() {
    let content = json!({"name": "Ada", "size": "M", "colour": "blue"});
    let (sink, asked) = answering(Answer::Accept(fields(content.clone())));
    let answers = ask(json!({"shape": "derived"}), Some(sink)).await.unwrap();
    assert_eq!(
        answers,
        [
            json!({"action": "accept", "content": {"name": "Ada", "size": "M", "colour": "blue", "count": null}})
        ]
    );
    let schema = Value::Object(asked.lock().unwrap()[0].schema.clone());
    assert!(schema.get("additionalProperties").is_none(), "{schema}");
    let properties = &schema["properties"];
    assert_eq!(properties["count"]["type"], "integer", "{schema}");
    assert!(properties["count"].get("format").is_none(), "{schema}");
    assert_eq!(properties["colour"]["type"], "string", "{schema}");
    assert_eq!(
        properties["colour"]["enum"],
        json!(["red", "blue"]),
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["name", "size"]), "{schema}");

    let (sink, asked) = answering(Answer::Accept(Map::new()));
    let answers = ask(json!({"shape": "empty"}), Some(sink)).await.unwrap();
    assert_eq!(answers, [json!({"action": "accept", "content": {}})]);
    assert_eq!(asked.lock().unwrap()[0].schema["properties"], json!({}));
}

#[tokio::test]
async fn a_call_asks_at_most_its_budget_of_questions() {
    let (sink, asked) = answering(Answer::Decline);
    let times = MAX_QUESTIONS_PER_CALL + 2;
    let answers = ask(json!({"times": times}), Some(sink)).await.unwrap();
    assert_eq!(answers.len(), times);
    assert!(
        answers[..MAX_QUESTIONS_PER_CALL]
            .iter()
            .all(|a| a["action"] == "decline")
    );
    for over in &answers[MAX_QUESTIONS_PER_CALL..] {
        let error = over["error"].as_str().unwrap();
        assert!(error.starts_with("too many questions"), "{error}");
    }
    assert_eq!(asked.lock().unwrap().len(), MAX_QUESTIONS_PER_CALL);
}

#[tokio::test]
async fn the_wait_for_an_answer_does_not_count_against_the_call_s_deadline() {
    // The plugin's deadline is 1 s; the person takes 1.5 s.
    let slow = || {
        QuestionSink::new(|_: Question| async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            Answer::Decline
        })
    };
    let answers = ask(json!({}), Some(slow())).await.unwrap();
    assert_eq!(answers, [json!({"action": "decline"})]);
    // The deadline still holds for what the tool does after the answer:
    // 1.5 s of sleep is past its 1 s.
    let (kind, message) = ask(json!({"then_sleep_ms": 1500}), Some(slow()))
        .await
        .unwrap_err();
    assert_eq!(kind, ToolErrorKind::Timeout, "{message}");
}
