//! Slow, idle and surplus HTTP connections (issue 21, class 1).

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

/// Open `count` hostile connections with `connect`, then run `hold` on each
/// on a thread of its own while a well-behaved client visits twice; every
/// hostile connection must be closed before [`CUT_OFF`].
///
/// The hostile connections are connected before the client's: the server
/// accepts connections in the order they were made, so the client is served
/// beside them, not before them.
fn hostile_beside_a_good_client(
    addr: &str,
    count: usize,
    connect: impl Fn(&str) -> Trickler,
    hold: impl Fn(Trickler) -> Option<Duration> + Send + Copy + 'static,
) {
    let threads: Vec<_> = (0..count)
        .map(|_| {
            let trickler = connect(addr);
            thread::spawn(move || hold(trickler))
        })
        .collect();
    well_behaved_visit(addr);
    well_behaved_visit(addr);
    for thread in threads {
        let lived = thread.join().unwrap();
        assert!(
            lived.is_some(),
            "a hostile connection was still open after {CUT_OFF:?}"
        );
    }
    well_behaved_visit(addr);
}

#[test]
fn a_request_head_sent_a_byte_at_a_time_is_cut_off() {
    let plugins = plugins();
    let server = serve(plugins.path(), &SHORT);
    hostile_beside_a_good_client(
        &server.addr,
        4,
        |addr| Trickler::open(addr, &format!("{HEAD_START}X-Slow: ")),
        |trickler| trickler.trickle_until_closed(b"a", CUT_OFF),
    );
}

#[test]
fn a_request_body_sent_a_byte_at_a_time_is_cut_off() {
    let plugins = plugins();
    let server = serve(plugins.path(), &SHORT);
    hostile_beside_a_good_client(
        &server.addr,
        4,
        |addr| Trickler::open(addr, &head_with_body()),
        |trickler| trickler.trickle_until_closed(b"a", CUT_OFF),
    );
}

#[test]
fn a_connection_that_never_sends_a_byte_is_closed() {
    let plugins = plugins();
    let server = serve(plugins.path(), &SHORT);
    hostile_beside_a_good_client(
        &server.addr,
        4,
        |addr| Trickler::open(addr, ""),
        |trickler| trickler.wait_until_closed(CUT_OFF),
    );
}

#[test]
fn a_kept_alive_connection_left_idle_is_closed() {
    let plugins = plugins();
    let server = serve(plugins.path(), &SHORT);
    hostile_beside_a_good_client(
        &server.addr,
        4,
        // One whole request, kept alive, then silence.
        |addr| {
            let mut trickler = Trickler::open(
                addr,
                &format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
            );
            let mut answer = [0u8; 512];
            let n = loop {
                match trickler.stream.read(&mut answer) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("reading the answer: {e}"),
                }
            };
            assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));
            trickler
        },
        |trickler| trickler.wait_until_closed(CUT_OFF),
    );
}

#[test]
fn a_slow_client_is_cut_off_before_its_token_is_checked() {
    let plugins = plugins();
    let server = ServeHttp::start(
        plugins.path(),
        &[&SHORT[..], &["--token-env", "SERVE_LIMITS_TOKEN"]].concat(),
        &[("SERVE_LIMITS_TOKEN", "a-long-random-token-for-the-test")],
    );
    let lived = Trickler::open(&server.addr, &format!("{HEAD_START}X-Slow: "))
        .trickle_until_closed(b"a", CUT_OFF);
    assert!(
        lived.is_some(),
        "a slow client without a token held a connection"
    );
    let (status, _, _) = post(&server.addr, None, &initialize_request());
    assert_eq!(status, 401, "no token: refused, and served at once");
}

/// `count` connections that each send a whole request (kept alive) and
/// then hold on. Each waits, as a client told 503 should, while the place
/// of a connection just closed is not free yet.
fn holders(addr: &str, count: usize) -> Vec<TcpStream> {
    (0..count)
        .map(|_| {
            for _ in 0..50 {
                let mut stream = TcpStream::connect(addr).expect("connect");
                write!(stream, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
                let mut answer = [0u8; 512];
                let n = stream.read(&mut answer).unwrap();
                let answer = String::from_utf8_lossy(&answer[..n]);
                if answer.starts_with("HTTP/1.1 200") {
                    return stream;
                }
                assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
                thread::sleep(Duration::from_millis(20));
            }
            panic!("no place was freed for a connection within a second");
        })
        .collect()
}

#[test]
fn a_connection_over_the_cap_gets_503_and_the_rest_are_served() {
    let plugins = plugins();
    let server = serve(plugins.path(), &["--max-connections", "5"]);
    // Three of five places taken: a client still gets served. (Two free:
    // its requests each take a connection of their own, and the server
    // frees the last one's place a moment after the client saw it close.)
    let mut held = holders(&server.addr, 3);
    well_behaved_visit(&server.addr);
    // All five taken: the next connection is told why, and closed.
    held.extend(holders(&server.addr, 2));
    for _ in 0..3 {
        let (status, head, body) = exchange(
            &server.addr,
            &format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr),
        );
        assert_eq!(status, 503, "{head}\n{body}");
        assert!(
            body.contains("too many open connections") && body.contains("--max-connections"),
            "{body}"
        );
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
    }
    // A place freed is a place served (the visit retries the 503 while the
    // server has not yet seen the connection close).
    drop(held.pop());
    well_behaved_visit(&server.addr);
}

#[test]
fn connections_over_the_cap_are_freed_by_the_time_budgets() {
    let plugins = plugins();
    let flags = [&SHORT[..], &["--max-connections", "3"]].concat();
    let server = serve(plugins.path(), &flags);
    // Three slow clients fill every place...
    let slow: Vec<_> = (0..3)
        .map(|_| {
            let addr = server.addr.clone();
            let trickler = Trickler::open(&addr, &format!("{HEAD_START}X-Slow: "));
            thread::spawn(move || trickler.trickle_until_closed(b"a", CUT_OFF))
        })
        .collect();
    // Connected before this one: accepted first, so the places are taken.
    let (status, _, body) = post(&server.addr, None, &initialize_request());
    assert_eq!(status, 503, "{body}");
    // ...until the header timeout closes them.
    for thread in slow {
        assert!(
            thread.join().unwrap().is_some(),
            "a slow client kept its place"
        );
    }
    well_behaved_visit(&server.addr);
}
