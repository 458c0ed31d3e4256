//! Quotas per principal: what the sandbox counted of a principal's calls
//! (fuel) and their wall time, refused with a hint once spent while other
//! principals are served, statelessly and on a session's fast lane; every
//! decision counted.

use serde_json::{Value, json};
use toolhost::approval::ToolPattern;
use toolhost::mcp::server::ServerOptions;
use toolhost::mcp::server::auth::{Policy, Quota, Rule, Who};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::plugins::plugin_subset;

use super::{Arc, Session, rpc, serve_registry_with};

/// The calc plugin and the native `hello`, served as they are to users
/// (the plugin's calls cost what the sandbox counted), counted in
/// `metrics`.
async fn metered_registry(metrics: &toolhost::telemetry::Metrics) -> Arc<ToolRegistry> {
    let dir = plugin_subset(&["calc"]);
    let host = toolhost::plugin::PluginHost::new(
        toolhost::config::HostConfig::default().cache_dir(toolhost_tests::mcp::test_cache_dir()),
    )
    .unwrap();
    let report = host.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report
        .registry()
        .unwrap()
        .observed(toolhost::tools::Observability::new().metrics(metrics.clone()));
    for tool in registry_tools() {
        registry.register(tool).unwrap();
    }
    Arc::new(registry)
}

fn registry_tools() -> Vec<NativeTool> {
    vec![NativeTool::new(
        "hello",
        "Says hello.",
        json!({"type": "object"}),
        |_| async { Ok(json!({"hello": "world"})) },
    )]
}

/// Alice's rule allows less fuel than one call of the plugin: one call,
/// then refused; bob's has no quota.
fn metered_policy() -> Policy {
    let any = ToolPattern::new("*").unwrap();
    Policy::new()
        .rule(
            Rule::new("metered", Who::ClientId("alice".into()), [any.clone()]).quota(Quota {
                window: std::time::Duration::from_secs(3600),
                fuel: Some(1),
                wall_time: None,
            }),
        )
        .rule(Rule::new("free", Who::Anyone, [any]))
}

fn says_42(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("42"))
}

/// The quota's refusal, as the client gets it.
fn assert_quota_refusal(refused: &Value) {
    assert_eq!(refused["error"]["code"], json!(-32029), "{refused}");
    let data = &refused["error"]["data"];
    assert_eq!(data["rule"], json!("metered"), "{refused}");
    assert_eq!(data["quota"], json!("fuel"), "{refused}");
    let retry = data["retryAfterSeconds"].as_f64().unwrap();
    assert!((3000.0..=3600.0).contains(&retry), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("larger quota"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_fuel_quota_is_refused_with_a_hint_while_another_is_served() {
    let metrics = toolhost::telemetry::Metrics::new();
    let (addr, uri, issuer, server) = serve_registry_with(
        metered_registry(&metrics).await,
        metered_policy(),
        ServerOptions::new().stateless(true),
    )
    .await;
    let alice = issuer.token("alice", &uri).await;
    let bob = issuer.token("bob", &uri).await;
    let eval = |token: String| {
        let addr = addr.clone();
        async move {
            let answer = rpc(
                &addr,
                Some(&token),
                "tools/call",
                json!({"name": "calc_eval", "arguments": {"expression": "6*7"}}),
            )
            .await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            serde_json::from_str::<Value>(&answer.body).unwrap()
        }
    };

    let first = eval(alice.clone()).await;
    assert!(
        says_42(&first),
        "the first call is within the quota: {first}"
    );
    assert_quota_refusal(&eval(alice.clone()).await);
    // Bob's rule has no quota; alice's spending is hers alone.
    for _ in 0..3 {
        let answer = eval(bob.clone()).await;
        assert!(says_42(&answer), "{answer}");
    }
    // Every decision is counted, by rule.
    assert_eq!(metrics.policy_decisions("metered", "allowed"), 1);
    assert_eq!(metrics.policy_decisions("metered", "quota"), 1);
    assert_eq!(metrics.policy_decisions("free", "allowed"), 3);
    assert!(
        metrics
            .render()
            .contains(r#"toolhost_policy_decisions_total{rule="metered",decision="quota"} 1"#),
        "{}",
        metrics.render()
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_session_the_policy_holds_on_the_fast_lane() {
    let metrics = toolhost::telemetry::Metrics::new();
    let (addr, uri, issuer, server) = serve_registry_with(
        metered_registry(&metrics).await,
        metered_policy(),
        ServerOptions::new(),
    )
    .await;
    let alice = Session::open(&addr, &issuer.token("alice", &uri).await).await;
    // `hello` costs no fuel: called until the session goes direct.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (answer, direct) = alice.call("hello", json!({})).await;
        assert!(answer["result"].is_object(), "{answer}");
        if direct {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never went direct");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Admitted on the fast lane, and charged there.
    let (first, direct) = alice.call("calc_eval", json!({"expression": "6*7"})).await;
    assert!(says_42(&first) && direct, "{first}");
    let (refused, _) = alice.call("calc_eval", json!({"expression": "6*7"})).await;
    assert_quota_refusal(&refused);
    // Refused once (by rmcp's path, which answers what the lane refuses).
    assert_eq!(metrics.policy_decisions("metered", "quota"), 1);

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_charged_to_its_principal_as_a_plain_call_is() {
    // calc's tools may run as tasks (the operator's word).
    let mut config = toolhost::tasks::TasksConfig::default();
    config
        .support
        .insert("calc_*".into(), toolhost::tasks::TaskSupport::Optional);
    let tasks = toolhost::tasks::TaskHost::open(config, None).unwrap();
    let metrics = toolhost::telemetry::Metrics::new();
    let (addr, uri, issuer, server) = serve_registry_with(
        metered_registry(&metrics).await,
        metered_policy(),
        ServerOptions::new().tasks(tasks),
    )
    .await;
    let alice = Session::open(&addr, &issuer.token("alice", &uri).await).await;
    // Each request's id is 7, as `Session::request` reads.
    let post = |message: Value| {
        let alice = &alice;
        async move { alice.request(&message).await.0 }
    };
    // The fast lane knows the session once its handshake is answered (it
    // answers 2025-11-25's tasks; rmcp would drop `params.task`): `hello`
    // (no fuel) goes direct at once.
    assert!(
        alice.call("hello", json!({})).await.1,
        "the first call after the handshake goes direct"
    );
    // 2025-11-25: the call as a task, then its result.
    let created = post(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "calc_eval", "arguments": {"expression": "6*7"}, "task": {"ttl": 60000}}}),
    )
    .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let result = post(json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/result",
                             "params": {"taskId": id}}))
    .await;
    assert!(says_42(&result), "{result}");
    // What the task spent counts: alice's quota is spent, by a task or
    // a plain call alike.
    let (refused, _) = alice.call("calc_eval", json!({"expression": "6*7"})).await;
    assert_quota_refusal(&refused);
    let again = post(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "calc_eval", "arguments": {"expression": "6*7"}, "task": {}}}),
    )
    .await;
    assert_quota_refusal(&again);
    server.shutdown().await;
}
