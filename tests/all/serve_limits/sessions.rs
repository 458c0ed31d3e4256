//! The cap on live MCP sessions (issue 21, class 3).

use std::thread;

use toolhost_tests::wait::wait_until;

use super::*;

/// `session`, after a request: a session in use, never ended to make room.
pub(super) fn used(session: Session) -> Session {
    assert!(session.tool_names().contains(&"calc_eval".to_owned()));
    session
}

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
    // One client (every test client is 127.0.0.1) may take the whole cap.
    let server = serve(
        plugins.path(),
        &["--max-sessions", "3", "--max-sessions-per-client", "3"],
    );
    // Sessions in use: none of them is ended to make room.
    let open: Vec<_> = (0..3).map(|_| used(Session::open(&server.addr))).collect();
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
    let again = used(Session::open(&server.addr));
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 3);
    again.end();
}

#[test]
fn a_client_opening_sessions_in_a_loop_gets_no_more_than_the_cap() {
    let plugins = plugins();
    let server = serve(
        plugins.path(),
        &["--max-sessions", "20", "--max-sessions-per-client", "20"],
    );
    let first = used(Session::open(&server.addr));
    let opened: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr.clone();
            thread::spawn(move || {
                // Each session is used at once; one ended to make room
                // before its first request (a 404) is not kept.
                (0..25)
                    .filter_map(|_| match Session::try_open(&addr) {
                        Ok(session) => {
                            let (status, _, _) = post(
                                &addr,
                                Some(&session.id),
                                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                            );
                            (status == 200).then_some(session)
                        }
                        // Ended to make room before its handshake was over.
                        Err((404, _)) => None,
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
        &[
            "--max-sessions",
            "2",
            "--max-sessions-per-client",
            "2",
            "--session-idle-timeout",
            "1s",
        ],
    );
    let _a = used(Session::open(&server.addr));
    let _b = used(Session::open(&server.addr));
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 2);
    // Refused until the two idle out (1 s), then served.
    let mut room = None;
    wait_until("an idle session made room", PATIENCE, || {
        room = Session::try_open(&server.addr).ok();
        room.is_some()
    });
    visit(room.unwrap());
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
    let _only = used(Session::open(&server.addr));
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 1);
    for _ in 0..5 {
        let answer = stateless_list(&server.addr);
        assert!(answer["result"]["tools"].is_array(), "{answer}");
    }
}

/// Check a refusal for the client's own share of the cap.
fn assert_refused_for_client(refusal: (u16, String), max: usize) {
    let (status, body) = refusal;
    assert_eq!(status, 503, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("it holds {max}"))
            && message.contains("--max-sessions-per-client"),
        "{error}"
    );
}

/// Issue 36, class 6: one client's sessions never lock out the others.
#[test]
fn one_client_cannot_take_every_session() {
    let plugins = plugins();
    // The default share: half the cap.
    let server = serve(plugins.path(), &["--max-sessions", "4"]);
    let mine: Vec<_> = (0..2).map(|_| Session::open(&server.addr)).collect();
    for _ in 0..3 {
        let refusal = Session::try_open(&server.addr).map(|_| ()).unwrap_err();
        assert_refused_for_client(refusal, 2);
    }
    for from in ["127.0.0.2", "127.0.0.3"] {
        let other = Session::try_open_from(from, &server.addr)
            .unwrap_or_else(|(status, body)| panic!("{from} refused: {status} {body}"));
        assert!(other.tool_names().contains(&"calc_eval".to_owned()));
    }
    // Ending one of its sessions gives the client its place back.
    let mut mine = mine;
    mine.pop().unwrap().end();
    let again = Session::open(&server.addr);
    assert!(again.tool_names().contains(&"calc_eval".to_owned()));
    // A share set by flag.
    let server = serve(
        plugins.path(),
        &["--max-sessions", "10", "--max-sessions-per-client", "1"],
    );
    let _one = Session::open(&server.addr);
    assert_refused_for_client(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 1);
    let _other = Session::try_open_from("127.0.0.2", &server.addr).unwrap();
}

/// At the cap, the oldest session that never made a request ends to make
/// room; one that did is never ended; when all did, the newcomer is
/// refused.
#[test]
fn at_the_cap_a_session_never_used_makes_room() {
    let plugins = plugins();
    let server = serve(
        plugins.path(),
        &["--max-sessions", "3", "--max-sessions-per-client", "3"],
    );
    let called = Session::open(&server.addr);
    called.call("calc_eval", json!({"expression": "1+1"}));
    let unused = Session::open(&server.addr);
    let listed = Session::open(&server.addr);
    assert!(listed.tool_names().contains(&"calc_eval".to_owned()));
    // The cap is reached: the unused one goes for the newcomer.
    let newcomer = Session::open(&server.addr);
    let (status, _, body) = post(
        &server.addr,
        Some(&unused.id),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}),
    );
    assert_eq!(status, 404, "the unused session ended: {body}");
    for session in [&called, &listed] {
        let answer = session.call("calc_eval", json!({"expression": "2+3"}));
        assert_eq!(answer["result"]["structuredContent"]["value"], 5.0);
    }
    // All three made requests: the next one is refused.
    newcomer.call("calc_eval", json!({"expression": "1+1"}));
    assert_refused(Session::try_open(&server.addr).map(|_| ()).unwrap_err(), 3);
}

/// A flood of sessions from many clients that never use them: each
/// newcomer still gets in (the flood's own unused sessions make room), and
/// the sessions in use are served throughout.
#[test]
fn a_flood_of_unused_sessions_drops_no_session_in_use() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--max-sessions", "6"]);
    let busy: Vec<_> = (0..2)
        .map(|i| {
            let session = Session::open(&server.addr);
            session.call("calc_eval", json!({"expression": format!("{i}+1")}));
            session
        })
        .collect();
    for round in 0..20 {
        let from = format!("127.0.0.{}", 2 + round % 5);
        Session::try_open_from(&from, &server.addr)
            .unwrap_or_else(|(status, body)| panic!("round {round}: {status} {body}"));
    }
    for session in &busy {
        let answer = session.call("calc_eval", json!({"expression": "6*7"}));
        assert_eq!(answer["result"]["structuredContent"]["value"], 42.0);
    }
}

/// Issue 36, class 12: the official Python SDK client ends its session
/// with DELETE and accepts the answer (200 or 204; rmcp's 202 logged
/// "Session termination failed: 202").
#[test]
fn the_python_client_ends_its_session_without_a_complaint() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    for _ in 0..2 {
        let got = toolhost_tests::mcp::python_client(
            "tests/all/serve_limits/end_session.py",
            &[&server.url],
        );
        assert!(
            got["text"].as_str().unwrap_or_default().contains("42"),
            "{got}"
        );
        assert_eq!(got["logged"], json!([]), "the SDK logged: {got}");
    }
}

/// A DELETE is answered 200, and the session is gone after it.
#[test]
fn a_delete_is_answered_200_and_ends_the_session() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    for _ in 0..2 {
        let session = used(Session::open(&server.addr));
        let (status, _, body) = exchange(
            &server.addr,
            &format!(
                "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {}\r\n\
                 Content-Length: 0\r\nConnection: close\r\n\r\n",
                server.addr, session.id
            ),
        );
        assert_eq!(status, 200, "{body}");
        let (status, _, body) = post(
            &server.addr,
            Some(&session.id),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
        );
        assert_eq!(status, 404, "{body}");
    }
}

/// `toolhost_mcp_sessions` in a scrape of `addr`'s `/metrics`.
fn sessions_gauge(addr: &str) -> f64 {
    let (status, _, body) = exchange_patiently(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|line| line.strip_prefix("toolhost_mcp_sessions ")?.parse().ok())
        .unwrap_or_else(|| panic!("no toolhost_mcp_sessions in {body}"))
}

/// The live-session gauge counts the server's sessions as they open and
/// close, whichever address serves the metrics: a scrape of a metrics
/// address of its own once read 0 and set the shared gauge to it.
#[test]
fn the_session_gauge_counts_live_sessions_on_either_metrics_address() {
    let plugins = plugins();
    let config_dir = tempfile::tempdir().unwrap();
    let port = toolhost_tests::telemetry::free_port();
    let config = toolhost_tests::telemetry::host_config(
        config_dir.path(),
        &format!("[telemetry]\nmetrics_addr = \"127.0.0.1:{port}\"\n"),
    );
    let server = serve(
        plugins.path(),
        &[
            "--session-idle-timeout",
            "1s",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let own = format!("127.0.0.1:{port}");
    wait_until("the metrics listener", PATIENCE, || {
        std::net::TcpStream::connect(&own).is_ok()
    });
    assert_eq!(sessions_gauge(&own), 0.0);
    let a = used(Session::open(&server.addr));
    let b = used(Session::open(&server.addr));
    for _ in 0..2 {
        assert_eq!(sessions_gauge(&own), 2.0, "on the metrics address");
        assert_eq!(sessions_gauge(&server.addr), 2.0, "on the MCP address");
    }
    a.end();
    assert_eq!(sessions_gauge(&own), 1.0);
    assert_eq!(sessions_gauge(&server.addr), 1.0);
    // Idle for its timeout, the other closes and leaves the count too.
    let _ = b;
    wait_until("the idle session's close counted", PATIENCE, || {
        sessions_gauge(&own) == 0.0
    });
    assert_eq!(sessions_gauge(&server.addr), 0.0);
}
