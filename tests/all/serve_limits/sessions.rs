//! The cap on live MCP sessions (issue 21, class 3).

use std::thread;
use std::time::Duration;

use super::*;

/// Check a refused initialize: 503, and a JSON-RPC error naming the cap.
fn assert_refused(refusal: (u16, String), max: usize) {
    let (status, body) = refusal;
    assert_eq!(status, 503, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    assert_eq!(error["id"], 1, "the initialize's id: {error}");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("at most {max}")) && message.contains("--max-sessions"),
        "{error}"
    );
}

#[test]
fn an_initialize_over_the_session_cap_gets_503_with_a_json_rpc_error() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--max-sessions", "3"]);
    let open: Vec<_> = (0..3).map(|_| Session::open(&server.addr)).collect();
    for _ in 0..3 {
        assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 3);
    }
    // The sessions there are still served.
    for session in &open {
        assert!(session.tool_names().contains(&"calc_eval".to_owned()));
        let answer = session.call("calc_eval", json!({"expression": "2+3"}));
        assert_eq!(
            answer["result"]["structuredContent"]["value"], 5.0,
            "{answer}"
        );
    }
    // One ended makes room for one more.
    let mut open = open;
    open.pop().unwrap().end();
    well_behaved_visit(&server.addr);
    let again = Session::open(&server.addr);
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 3);
    again.end();
}

#[test]
fn a_client_opening_sessions_in_a_loop_gets_no_more_than_the_cap() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--max-sessions", "20"]);
    let first = Session::open(&server.addr);
    let opened: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr.clone();
            thread::spawn(move || {
                (0..25)
                    .filter_map(|_| match Session::try_open(&addr) {
                        Ok(session) => Some(session),
                        Err(refusal) => {
                            assert_refused(refusal, 20);
                            None
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let opened: Vec<Session> = opened.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert_eq!(opened.len(), 19, "the cap is 20, one was open before");
    // The client that was there first is still served.
    assert!(first.tool_names().contains(&"calc_eval".to_owned()));
    let answer = first.call("calc_eval", json!({"expression": "1+1"}));
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 2.0,
        "{answer}"
    );
}

#[test]
fn idle_sessions_expire_and_make_room() {
    let plugins = plugins();
    let server = serve(
        plugins.path(),
        &["--max-sessions", "2", "--session-idle-timeout", "1s"],
    );
    let _a = Session::open(&server.addr);
    let _b = Session::open(&server.addr);
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 2);
    thread::sleep(Duration::from_millis(2500));
    well_behaved_visit(&server.addr);
}

/// One request of the stateless 2026-07-28 revision; its JSON-RPC answer.
fn stateless_list(addr: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}}}})
    .to_string();
    let (status, _, answer) = exchange(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert_eq!(status, 200, "{answer}");
    message(&answer)
}

#[test]
fn stateless_serving_is_not_capped() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--stateless", "--max-sessions", "1"]);
    for _ in 0..10 {
        let answer = stateless_list(&server.addr);
        assert!(answer["result"]["tools"].is_array(), "{answer}");
    }
}

#[test]
fn stateless_requests_pass_while_sessions_are_at_the_cap() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--max-sessions", "1"]);
    let _only = Session::open(&server.addr);
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 1);
    for _ in 0..5 {
        let answer = stateless_list(&server.addr);
        assert!(answer["result"]["tools"].is_array(), "{answer}");
    }
}
