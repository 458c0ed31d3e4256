//! The metrics listener (`telemetry.metrics_addr`) under the budgets of
//! `/mcp` (issue 36, class 7): idle and surplus connections to it are
//! closed or refused, and `/mcp` answers meanwhile.

use std::thread;
use std::time::Duration;

use super::*;

/// Longer than any budget these tests set (1 s), far shorter than never.
const CUT_OFF: Duration = Duration::from_secs(8);

/// Short time budgets, everything else at its default.
const SHORT: [&str; 6] = [
    "--header-timeout",
    "1s",
    "--body-timeout",
    "1s",
    "--idle-timeout",
    "1s",
];

/// `toolhost serve` with `flags` and its metrics on an address of their
/// own; that address, once it listens.
fn serve_with_metrics(plugins: &Path, config_dir: &Path, flags: &[&str]) -> (ServeHttp, String) {
    let port = toolhost_tests::telemetry::free_port();
    let config = toolhost_tests::telemetry::host_config(
        config_dir,
        &format!("[telemetry]\nmetrics_addr = \"127.0.0.1:{port}\"\n"),
    );
    let config = config.display().to_string();
    let flags = [flags, &["--config", config.as_str()]].concat();
    let server = serve(plugins, &flags);
    let metrics = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&metrics).is_err() {
        assert!(Instant::now() < deadline, "no metrics listener");
        thread::sleep(Duration::from_millis(20));
    }
    (server, metrics)
}

fn scrape(addr: &str) -> (u16, String, String) {
    exchange(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
}

#[test]
fn idle_connections_to_the_metrics_listener_are_closed_and_mcp_answers() {
    let plugins = plugins();
    let config_dir = tempfile::tempdir().unwrap();
    let (server, metrics) = serve_with_metrics(plugins.path(), config_dir.path(), &SHORT);
    // Silent, half-sent and kept-alive connections to the metrics port...
    let silent: Vec<_> = (0..6)
        .map(|_| {
            let trickler = Trickler::open(&metrics, "");
            thread::spawn(move || trickler.wait_until_closed(CUT_OFF))
        })
        .collect();
    let slow: Vec<_> = (0..3)
        .map(|_| {
            let trickler = Trickler::open(&metrics, "GET /metrics HTTP/1.1\r\nX-Slow: ");
            thread::spawn(move || trickler.trickle_until_closed(b"a", CUT_OFF))
        })
        .collect();
    // ...while /mcp serves a whole visit.
    well_behaved_visit(&server.addr);
    for thread in silent.into_iter().chain(slow) {
        assert!(
            thread.join().unwrap().is_some(),
            "a connection to the metrics port outlived the header timeout"
        );
    }
    let (status, _, body) = scrape(&metrics);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("toolhost_tool_calls_total"), "{body}");
    well_behaved_visit(&server.addr);
}

#[test]
fn the_metrics_listener_has_a_connection_cap_and_mcp_answers_beyond_it() {
    let plugins = plugins();
    let config_dir = tempfile::tempdir().unwrap();
    // A header timeout long enough that the four silent connections stay
    // while a loaded machine gets its scrape through (1 s was a race).
    let flags = [
        "--header-timeout",
        "3s",
        "--body-timeout",
        "1s",
        "--idle-timeout",
        "3s",
        "--max-connections",
        "4",
    ];
    let (server, metrics) = serve_with_metrics(plugins.path(), config_dir.path(), &flags);
    // Four silent connections fill the metrics port's places...
    let held: Vec<_> = (0..4)
        .map(|_| {
            let trickler = Trickler::open(&metrics, "");
            thread::spawn(move || trickler.wait_until_closed(CUT_OFF))
        })
        .collect();
    // ...so a scrape is told why and closed, not queued (once the server
    // has taken all four in); /mcp has places of its own.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (status, _, body) = loop {
        let answer = scrape(&metrics);
        if answer.0 != 200 || Instant::now() > deadline {
            break answer;
        }
    };
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too many open connections"), "{body}");
    well_behaved_visit(&server.addr);
    // The header timeout frees them; a scrape is then served.
    for thread in held {
        assert!(
            thread.join().unwrap().is_some(),
            "a silent scraper kept its place"
        );
    }
    let (status, _, body) = scrape(&metrics);
    assert_eq!(status, 200, "{body}");
}
