//! What a principal opens is its own: an MCP session (2025-11-25) serves
//! only the principal whose token opened it, so another's valid token with
//! a leaked session id reaches none of its calls, approvals or answers;
//! and an approval given in one principal's 2026-07-28 round
//! (`requestState`) is no approval for another, who is asked again. The
//! call log says whom each call was made for.

use serde_json::{Value, json};
use toolhost::approval::{ApprovalPolicy, ToolPattern};
use toolhost::mcp::server::ServerOptions;
use toolhost::mcp::server::auth::{Policy, Rule, Who};
use toolhost::tools::{CallLog, Observability, ToolRegistry};

use super::{Answer, Arc, Session, hello, http, serve_registry_with, serve_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_serves_only_the_principal_that_opened_it() {
    let log = Arc::new(CallLog::new(100, 1 << 20));
    let registry = ToolRegistry::new().observed(Observability::new().log(Arc::clone(&log)));
    registry.register(hello()).unwrap();
    let (addr, uri, issuer, server) =
        serve_registry_with(Arc::new(registry), everyone(), ServerOptions::new()).await;
    let alice = Session::open(&addr, &issuer.token("alice", &uri).await).await;
    let (answer, _) = alice.call("hello", json!({})).await;
    assert_eq!(answer["result"]["structuredContent"]["hello"], "world");

    // Bob holds a valid token of his own, and alice's session id.
    let bob = Session {
        addr: addr.clone(),
        token: issuer.token("bob", &uri).await,
        id: alice.id.clone(),
    };
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "hello", "arguments": {}}});
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    // An answer to a question or an approval alice's client was asked.
    let accept = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}});
    for (what, message) in [("a call", &call), ("a list", &list), ("an answer", &accept)] {
        // Twice: the second would take the fast lane in alice's session.
        for _ in 0..2 {
            let refused = bob.post(message).await;
            assert_eq!(refused.status, 404, "{what}: {}", refused.body);
            assert!(
                refused.body.contains("Session not found"),
                "{what}: {}",
                refused.body
            );
        }
    }
    let delete = session_request(&bob, "DELETE").await;
    assert_eq!(delete.status, 404, "{}", delete.body);
    let stream = session_request(&bob, "GET").await;
    assert_eq!(stream.status, 404, "{}", stream.body);

    // Alice's session is untouched, and a new token of hers (a refresh)
    // still serves in it.
    let (answer, _) = alice.call("hello", json!({})).await;
    assert_eq!(answer["result"]["structuredContent"]["hello"], "world");
    let refreshed = Session {
        addr: addr.clone(),
        token: issuer.token("alice", &uri).await,
        id: alice.id.clone(),
    };
    assert_ne!(refreshed.token, alice.token);
    for _ in 0..2 {
        let (answer, _) = refreshed.call("hello", json!({})).await;
        assert_eq!(
            answer["result"]["structuredContent"]["hello"], "world",
            "{answer}"
        );
    }
    // Every call ran for alice, and the log says so: the first through
    // rmcp, the others on the fast lane. Bob's ran none.
    let entries = log.entries();
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(
        entries
            .iter()
            .all(|e| e.tool == "hello" && e.principal.as_deref() == Some("alice")),
        "{entries:?}"
    );
    server.shutdown().await;
}

/// Every principal sees and calls every tool.
fn everyone() -> Policy {
    Policy::new().rule(Rule::new(
        "all",
        Who::Anyone,
        [ToolPattern::new("*").unwrap()],
    ))
}

/// A `method` request (`GET`: the session's event stream; `DELETE`: its
/// end) in `session`, with its token.
async fn session_request(session: &Session, method: &str) -> Answer {
    http(
        &session.addr,
        &format!(
            "{method} /mcp HTTP/1.1\r\nAccept: application/json, text/event-stream\r\n\
             Authorization: Bearer {}\r\nMcp-Session-Id: {}",
            session.token, session.id
        ),
        "",
    )
    .await
}

/// A stateless 2026-07-28 `tools/call` of `secret` by `token`'s holder,
/// whose client can ask its user (form elicitation), with a later round's
/// `inputResponses` and `requestState`.
async fn call_secret(addr: &str, token: &str, round: Option<(&Value, &str)>) -> Value {
    let mut params = json!({"name": "secret", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }});
    if let Some((responses, state)) = round {
        params["inputResponses"] = responses.clone();
        params["requestState"] = json!(state);
    }
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let answer = http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: secret\r\nAuthorization: Bearer {token}"
        ),
        &request.to_string(),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("not JSON: {}", answer.body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_given_to_one_principal_is_none_for_another() {
    let approval = ApprovalPolicy::requiring([ToolPattern::new("secret").unwrap()]);
    let (addr, uri, issuer, server) =
        serve_with(everyone(), ServerOptions::new().approval(approval)).await;
    let alice = issuer.token("alice", &uri).await;
    let bob = issuer.token("bob", &uri).await;

    // Alice's first round asks her user.
    let asked = call_secret(&addr, &alice, None).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState: {asked}"));
    let accept = json!({"toolhost.dev/approval": {"action": "accept", "content": {}}});

    // Bob replays alice's round with an accept: he is asked, not served.
    let replayed = call_secret(&addr, &bob, Some((&accept, state))).await;
    assert_eq!(
        replayed["result"]["resultType"], "input_required",
        "bob was served on alice's approval: {replayed}"
    );
    assert!(replayed["result"].get("structuredContent").is_none());

    // Alice's accept runs her call.
    let served = call_secret(&addr, &alice, Some((&accept, state))).await;
    assert_eq!(
        served["result"]["structuredContent"]["secret"], 42,
        "{served}"
    );
    server.shutdown().await;
}
