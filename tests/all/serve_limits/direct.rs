//! `tools/call` in an HTTP session, answered without rmcp's session worker
//! (issue 22): a JSON answer, and everything a call through rmcp keeps
//! (cancellation, the end of the session, the session's idle timer).

use std::thread;
use std::time::{Duration, Instant};

use toolhost_tests::wait::PATIENCE;

use super::sessions::used;
use super::*;

/// A POST in `session`; the status, the `content-type` and the JSON-RPC
/// answer.
fn post_in(session: &Session, body: &Value) -> (u16, String, Value) {
    let (status, head, answer) = post(&session.addr, Some(&session.id), body);
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, message(&answer))
}

/// A session whose calls are answered directly. The 202 to
/// `notifications/initialized` comes before the server has processed it;
/// until then a call goes through rmcp (answered all the same, as an
/// event stream), which on a loaded machine can last a moment. The
/// session must go direct within a few seconds.
pub(super) fn open_direct(addr: &str) -> Session {
    let session = Session::open(addr);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, content_type, answer) = post_in(
            &session,
            &call_request(2, "calc_eval", json!({"expression": "1+1"})),
        );
        assert_eq!((status, answer["id"].clone()), (200, json!(2)), "{answer}");
        if content_type == "application/json" {
            return session;
        }
        assert!(Instant::now() < deadline, "the session never went direct");
        thread::sleep(Duration::from_millis(20));
    }
}

fn call_request(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

#[test]
fn a_call_in_a_session_is_answered_with_one_json_body() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    let session = open_direct(&server.addr);
    let (status, content_type, answer) = post_in(
        &session,
        &call_request(3, "calc_eval", json!({"expression": "6*7"})),
    );
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 42.0,
        "{answer}"
    );
    // A protocol error the same way: an unknown tool is invalid params.
    let (status, content_type, answer) =
        post_in(&session, &call_request(4, "no_such_tool", json!({})));
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(answer["id"], 4, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // A tool's own failure is a result the model sees, not an error.
    let (_, content_type, answer) = post_in(
        &session,
        &call_request(5, "calc_eval", json!({"expression": "1/"})),
    );
    assert_eq!(content_type, "application/json");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    // Other requests are rmcp's, answered as before.
    let (status, content_type, answer) = post_in(
        &session,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {}}),
    );
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}

#[test]
fn a_call_without_a_live_session_is_not_answered() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    // A call right after the DELETE races the session's teardown; a few
    // rounds give the race its chances.
    for round in 0..8 {
        let session = Session::open(&server.addr);
        let id = session.id.clone();
        session.end();
        let (status, _, body) = post(
            &server.addr,
            Some(&id),
            &call_request(3, "calc_eval", json!({"expression": "1+1"})),
        );
        assert_eq!(status, 404, "round {round}, an ended session: {body}");
    }
    let (status, _, body) = post(
        &server.addr,
        Some("not-a-session"),
        &call_request(3, "calc_eval", json!({"expression": "1+1"})),
    );
    assert_eq!(status, 404, "an unknown session: {body}");
}

/// Start `hostile_spin` (it spins for a minute unless stopped) in
/// `session` on a thread of its own; its answer, and how long it took.
fn spin(session: &Session, id: u64) -> thread::JoinHandle<(Value, Duration)> {
    spin_with(session, call_request(id, "hostile_spin", json!({})))
}

/// As [`spin`], for the request `request`.
fn spin_with(session: &Session, request: Value) -> thread::JoinHandle<(Value, Duration)> {
    let (addr, session_id) = (session.addr.clone(), session.id.clone());
    thread::spawn(move || {
        let started = Instant::now();
        let (status, _, body) = post(&addr, Some(&session_id), &request);
        assert_eq!(status, 200, "{body}");
        (message(&body), started.elapsed())
    })
}

/// Check that a spinning call was stopped and answered long before its
/// minute was up.
fn assert_stopped(call: thread::JoinHandle<(Value, Duration)>, id: u64) {
    let (answer, took) = call.join().unwrap();
    assert_eq!(answer["id"], id, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cancelled"), "{answer}");
    assert!(took < Duration::from_secs(30), "the guest ran on: {took:?}");
}

#[test]
fn notifications_cancelled_stops_a_call_in_a_session() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    let session = open_direct(&server.addr);
    let call = spin(&session, 9);
    server.log.wait_for("spin started", 1, PATIENCE);
    let (status, _, body) = post(
        &server.addr,
        Some(&session.id),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 9, "reason": "the user gave up"}}),
    );
    assert_eq!(status, 202, "{body}");
    assert_stopped(call, 9);
    // The session goes on.
    let answer = session.call("calc_eval", json!({"expression": "2+2"}));
    assert_eq!(answer["result"]["structuredContent"]["value"], 4.0);
}

#[test]
fn ending_a_session_stops_its_calls() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    let session = open_direct(&server.addr);
    let calls = [spin(&session, 11), spin(&session, 12)];
    server.log.wait_for("spin started", 2, PATIENCE);
    session.end();
    for (call, id) in calls.into_iter().zip([11, 12]) {
        assert_stopped(call, id);
    }
    well_behaved_visit(&server.addr);
}

/// A call with a progress token goes through rmcp's session worker, not
/// the direct path; the end of its session still answers it (with an error
/// that says it was cancelled) before the session's streams close.
#[test]
fn ending_a_session_answers_its_calls_that_went_through_rmcp() {
    let plugins = plugins();
    let server = serve(plugins.path(), &[]);
    let session = open_direct(&server.addr);
    let mut request = call_request(21, "hostile_spin", json!({}));
    request["params"]["_meta"] = json!({"progressToken": "p21"});
    let call = spin_with(&session, request);
    server.log.wait_for("spin started", 1, PATIENCE);
    session.end();
    assert_stopped(call, 21);
    well_behaved_visit(&server.addr);
}

#[test]
fn a_session_busy_with_calls_outlives_its_idle_timeout() {
    let plugins = plugins();
    let server = ServeHttp::start(
        plugins.path(),
        &["--session-idle-timeout", "1s"],
        &[("TOOLHOST_LOG", "info,toolhost::mcp::server::sessions=debug")],
    );
    let session = open_direct(&server.addr);
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(3) {
        i += 1;
        let (status, _, answer) = post_in(
            &session,
            &call_request(i, "calc_eval", json!({"expression": "1+1"})),
        );
        assert_eq!(
            status,
            200,
            "call {i} after {:?}: {answer}",
            started.elapsed()
        );
        assert_eq!(answer["result"]["structuredContent"]["value"], 2.0);
        thread::sleep(Duration::from_millis(100));
    }
    // Idle, it still expires.
    server.log.wait_for("MCP session closed", 1, PATIENCE);
    let (status, _, body) = post(
        &server.addr,
        Some(&session.id),
        &call_request(99, "calc_eval", json!({"expression": "1+1"})),
    );
    assert_eq!(status, 404, "an expired session: {body}");
}

#[test]
fn a_call_in_a_session_still_needs_the_bearer_token() {
    let plugins = plugins();
    let server = ServeHttp::start(
        plugins.path(),
        &["--token-env", "DIRECT_TEST_TOKEN"],
        &[("DIRECT_TEST_TOKEN", "s3cret")],
    );
    let addr = &server.addr;
    let post_as = |session: Option<&str>, auth: &str, body: &Value| {
        let body = body.to_string();
        let session = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default();
        exchange(
            addr,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n{session}{auth}\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let good = "Authorization: Bearer s3cret\r\n";
    let (status, head, body) = post_as(None, good, &initialize_request());
    assert_eq!(status, 200, "{body}");
    let id = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id in {head}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post_as(Some(&id), good, &initialized).0, 202);
    let call = call_request(3, "calc_eval", json!({"expression": "6*7"}));
    for bad in [
        "",
        "Authorization: Bearer wrong\r\n",
        "Authorization: s3cret\r\n",
    ] {
        let (status, _, body) = post_as(Some(&id), bad, &call);
        assert_eq!(status, 401, "{bad:?}: {body}");
    }
    let (status, _, body) = post_as(Some(&id), good, &call);
    assert_eq!(status, 200, "{body}");
    assert_eq!(message(&body)["result"]["structuredContent"]["value"], 42.0);
}

#[test]
fn with_the_fast_lane_off_every_call_is_answered_through_rmcp() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--no-fast-lane"]);
    let session = used(Session::open(&server.addr));
    // Longer than a session takes to go direct with the lane on
    // (`open_direct`), the same answers, each as rmcp's event stream.
    let until = Instant::now() + Duration::from_secs(1);
    let mut id = 3;
    while Instant::now() < until {
        let (status, content_type, answer) = post_in(
            &session,
            &call_request(id, "calc_eval", json!({"expression": "6*7"})),
        );
        assert_eq!((status, answer["id"].clone()), (200, json!(id)), "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["value"], 42.0,
            "{answer}"
        );
        assert!(
            content_type.starts_with("text/event-stream"),
            "call {id} was answered as {content_type}"
        );
        id += 1;
    }
}
