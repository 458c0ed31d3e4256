//! Browser clients: a page of an origin the server accepts (loopback's,
//! here the MCP Inspector's `http://localhost:6274`) gets its preflight
//! answered without a token, and may read every answer, the OAuth
//! challenge and the session id included; another origin's preflight is
//! refused and its pages read nothing.

use serde_json::json;
use toolhost::approval::ToolPattern;
use toolhost::mcp::server::ServerOptions;
use toolhost::mcp::server::auth::{Policy, Rule, Who};

use super::{Answer, http, registry, serve_registry_with};

const INSPECTOR: &str = "http://localhost:6274";

async fn preflight(addr: &str, origin: &str) -> Answer {
    http(
        addr,
        &format!(
            "OPTIONS /mcp HTTP/1.1\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: authorization,content-type,mcp-protocol-version"
        ),
        "",
    )
    .await
}

/// An `initialize` from a page of `origin`, with `token` if any.
async fn initialize(addr: &str, origin: &str, token: Option<&str>) -> Answer {
    let auth = token.map_or(String::new(), |t| format!("\r\nAuthorization: Bearer {t}"));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "browser", "version": "0"}}});
    http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nOrigin: {origin}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream{auth}"
        ),
        &init.to_string(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_accepted_origins_may_call_and_read_the_server() {
    let everyone = Policy::new().rule(Rule::new(
        "all",
        Who::Anyone,
        [ToolPattern::new("*").unwrap()],
    ));
    let (addr, uri, issuer, server) =
        serve_registry_with(registry(), everyone, ServerOptions::new()).await;

    // The preflight needs no token.
    let allowed = preflight(&addr, INSPECTOR).await;
    assert_eq!(allowed.status, 204, "{}", allowed.body);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some(INSPECTOR)
    );
    let headers = allowed
        .header("access-control-allow-headers")
        .unwrap_or_default();
    assert!(headers.contains("authorization"), "{headers}");

    // Without a token: the challenge, readable by the page.
    let challenged = initialize(&addr, INSPECTOR, None).await;
    assert_eq!(challenged.status, 401);
    assert_eq!(
        challenged.header("access-control-allow-origin"),
        Some(INSPECTOR)
    );
    let exposed = challenged
        .header("access-control-expose-headers")
        .unwrap_or_default();
    assert!(
        exposed.contains("WWW-Authenticate") && exposed.contains("Mcp-Session-Id"),
        "{exposed}"
    );
    // The metadata it leads to, readable too.
    let metadata = http(
        &addr,
        &format!("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nOrigin: {INSPECTOR}"),
        "",
    )
    .await;
    assert_eq!(metadata.status, 200);
    assert_eq!(
        metadata.header("access-control-allow-origin"),
        Some(INSPECTOR)
    );
    // With a token: a session, whose id the page can read.
    let token = issuer.token("alice", &uri).await;
    let opened = initialize(&addr, INSPECTOR, Some(&token)).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert!(opened.header("mcp-session-id").is_some());
    assert_eq!(
        opened.header("access-control-allow-origin"),
        Some(INSPECTOR)
    );

    // Another origin: refused, and given nothing to read.
    let evil = "https://evil.example";
    let refused = preflight(&addr, evil).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.header("access-control-allow-origin").is_none());
    let refused = initialize(&addr, evil, Some(&token)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.header("access-control-allow-origin").is_none());
    server.shutdown().await;
}
