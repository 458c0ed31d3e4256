//! Closing stdin with calls in flight (issue 21, class 9): the calls are
//! cancelled at once and the process exits, instead of rmcp's 5 s drain.

use std::time::{Duration, Instant};

use toolhost_tests::mcp::ServeStdio;
use toolhost_tests::wait::{PATIENCE, wait_until};

use super::*;

/// Well short of rmcp's 5 s drain, with room for a busy machine.
const EXIT_WITHIN: Duration = Duration::from_millis(2500);

/// `toolhost serve --no-watch` on stdio, past its handshake.
fn start(plugins: &Path) -> ServeStdio {
    ServeStdio::start(plugins, &["--no-watch"])
}

/// Close stdin; how long until the process exited.
fn close_stdin(server: &mut ServeStdio) -> Duration {
    server.close_stdin();
    let start = Instant::now();
    wait_until("an exit after stdin closed", PATIENCE, || server.exited());
    start.elapsed()
}

/// A well-behaved exchange first: the server answers on stdio.
fn served(server: &mut ServeStdio) {
    server.call(2, "calc_eval", json!({"expression": "6*7"}));
    let answer = server.answer(2);
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 42.0,
        "{answer}"
    );
}

fn assert_prompt(took: Duration) {
    assert!(
        took < EXIT_WITHIN,
        "the process ran on for {took:?} after stdin closed: the calls in flight were not cancelled"
    );
}

#[test]
fn closing_stdin_cancels_a_call_in_flight_at_once() {
    let plugins = plugins();
    let mut server = start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_spin", json!({}));
    server.log.wait_for("spin started", 1, PATIENCE);
    assert_prompt(close_stdin(&mut server));
}

#[test]
fn closing_stdin_cancels_every_call_in_flight() {
    let plugins = plugins();
    let mut server = start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_spin", json!({}));
    server.call(4, "hostile_sleep", json!({"ms": 9000}));
    server.call(5, "hostile_spin", json!({}));
    server.log.wait_for("spin started", 2, PATIENCE);
    server.log.wait_for("sleep started", 1, PATIENCE);
    assert_prompt(close_stdin(&mut server));
}

#[test]
fn closing_stdin_mid_message_cancels_the_calls_in_flight() {
    let plugins = plugins();
    let mut server = start(plugins.path());
    served(&mut server);
    server.call(3, "hostile_sleep", json!({"ms": 9000}));
    server.log.wait_for("sleep started", 1, PATIENCE);
    server.write_raw(r#"{"jsonrpc":"2.0","id":4,"method":"tools/ca"#);
    assert_prompt(close_stdin(&mut server));
}
