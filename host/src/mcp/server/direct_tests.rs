use axum::http::HeaderValue;

use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                header::HeaderName::from_static(k),
                HeaderValue::from_static(v),
            )
        })
        .collect()
}

const PLAIN: [(&str, &str); 4] = [
    ("host", "127.0.0.1:8080"),
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2025-11-25"),
];

fn sessions() -> DirectSessions {
    let hosts = ["localhost", "127.0.0.1", "::1", "example.com:443"];
    DirectSessions::new(
        hosts.iter().map(|h| (*h).to_owned()).collect(),
        Duration::from_secs(60),
    )
}

#[test]
fn a_plain_call_post_is_answered_directly() {
    assert!(sessions().plain(&headers(&PLAIN)));
    let mut no_version = headers(&PLAIN);
    no_version.remove("mcp-protocol-version");
    assert!(sessions().plain(&no_version));
    let mut v6 = headers(&PLAIN);
    v6.insert(header::HOST, HeaderValue::from_static("[::1]:9"));
    assert!(sessions().plain(&v6));
    let mut with_port = headers(&PLAIN);
    with_port.insert(header::HOST, HeaderValue::from_static("example.com:443"));
    assert!(sessions().plain(&with_port));
}

#[test]
fn anything_rmcp_must_check_goes_to_rmcp() {
    let s = sessions();
    let with = |name: &'static str, value: &'static str| {
        let mut h = headers(&PLAIN);
        h.insert(name, HeaderValue::from_static(value));
        s.plain(&h)
    };
    assert!(!with("origin", "http://localhost:1"), "Origin is rmcp's");
    assert!(!with("host", "evil.example"), "a foreign Host");
    assert!(
        !with("host", "example.com:80"),
        "an accepted name, another port"
    );
    assert!(!with("content-type", "text/plain"));
    assert!(!with("accept", "application/json"), "no event streams");
    assert!(!with("accept", "application/json, text/event-stream;q=0"));
    assert!(!with("mcp-protocol-version", "2026-07-28"), "sessionless");
    assert!(!with("mcp-protocol-version", "1999-01-01"), "unknown");
    let mut no_host = headers(&PLAIN);
    no_host.remove(header::HOST);
    assert!(!s.plain(&no_host));
}
