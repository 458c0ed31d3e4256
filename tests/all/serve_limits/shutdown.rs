//! SIGTERM with requests half sent or in flight (issue 21, class 2): the
//! process exits after the grace period at the latest.

use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use toolhost_tests::wait::PATIENCE;

use super::*;

/// The grace period these tests set.
const GRACE: &str = "1s";

/// Far past the grace period, far short of the header and body timeouts
/// (their defaults: 10 s and 30 s).
const EXIT_WITHIN: Duration = Duration::from_secs(6);

fn sigterm(server: &ServeHttp) {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// How long the process took to exit, and its exit code; panics past
/// `limit`.
fn exit_within(server: &mut ServeHttp, since: Instant, limit: Duration) -> (Duration, Option<i32>) {
    loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            return (since.elapsed(), status.code());
        }
        assert!(
            since.elapsed() < limit,
            "still running {limit:?} after SIGTERM (grace period {GRACE})"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM while `hostile` connections hold half-sent requests: exit 0
/// within [`EXIT_WITHIN`].
fn stops_despite(prefix: &str) {
    let plugins = plugins();
    let mut server = serve(plugins.path(), &["--shutdown-grace", GRACE]);
    let open: Vec<_> = (0..3)
        .map(|_| Trickler::open(&server.addr, prefix))
        .collect();
    // They are connected, and a well-behaved client is served beside them.
    well_behaved_visit(&server.addr);
    let start = Instant::now();
    sigterm(&server);
    let (took, code) = exit_within(&mut server, start, EXIT_WITHIN);
    assert_eq!(code, Some(0), "exited after {took:?}");
    drop(open);
}

#[test]
fn sigterm_with_a_request_head_half_sent_exits_after_the_grace_period() {
    stops_despite(&format!("{HEAD_START}X-Slow: a"));
}

#[test]
fn sigterm_with_a_request_body_half_sent_exits_after_the_grace_period() {
    stops_despite(&head_with_body());
}

#[test]
fn sigterm_with_a_connection_that_sent_nothing_exits_after_the_grace_period() {
    stops_despite("");
}

#[test]
fn sigterm_lets_a_call_in_flight_answer_within_the_grace_period() {
    let plugins = plugins();
    let mut server = serve(plugins.path(), &["--shutdown-grace", "5s"]);
    let _half_sent = Trickler::open(&server.addr, &format!("{HEAD_START}X-Slow: a"));
    let session = Session::open(&server.addr);
    let caller = thread::spawn(move || {
        let answer = session.call("hostile_sleep", json!({"ms": 1000}));
        (answer, Instant::now())
    });
    server.log.wait_for("sleep started", 1, PATIENCE);
    let start = Instant::now();
    sigterm(&server);
    let (answer, answered) = caller.join().unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["slept_ms"]
            .as_u64()
            .map(|ms| ms >= 1000),
        Some(true),
        "the call in flight was answered: {answer}"
    );
    assert!(answered > start, "answered after the signal");
    let (took, code) = exit_within(&mut server, start, Duration::from_secs(10));
    assert_eq!(code, Some(0), "exited after {took:?}");
}
