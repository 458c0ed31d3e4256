//! Opaque access tokens, checked through the real authorization server's
//! introspection endpoint (RFC 7662): a token issued for this server is
//! served; one for another resource, a made-up one and a revoked one are
//! refused `401 invalid_token`; wrong client credentials of the resource
//! server itself are `503` (the issuer could not be asked), never an
//! accepted token; tokens never come back in an answer.

use toolhost::mcp::server::auth::{IntrospectionVerifier, ResourceServer};
use toolhost::mcp::server::{ServerOptions, ToolServer};

use super::{AuthServer, http, list, names, registry};

/// The test registry, served statelessly on loopback with tokens checked
/// by `verifier` (made for the server's URI): the address and the server.
async fn serve(
    uri_for: impl FnOnce(&str) -> IntrospectionVerifier,
    issuer: &AuthServer,
    listener: tokio::net::TcpListener,
) -> toolhost::mcp::server::HttpServer {
    let uri = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = ResourceServer::new(&uri, uri_for(&uri)).authorization_server(&issuer.issuer);
    ToolServer::new(
        registry(),
        ServerOptions::new().stateless(true).resource_server(auth),
    )
    .serve_http_on(listener)
    .expect("serves")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_checked_by_asking_their_issuer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let uri = format!("http://{addr}/mcp");
    let other = "https://other.example/mcp";
    let issuer = AuthServer::start_issuing(&[&uri, other], "opaque");
    let endpoint = issuer.introspection_endpoint.clone();
    let issuer_url = issuer.issuer.clone();
    // Every request asks (answers are not kept), so a revocation shows at
    // once.
    let server = serve(
        |uri| {
            IntrospectionVerifier::new(&endpoint, "rs", "rs-secret", uri)
                .unwrap()
                .issuer(&issuer_url)
                .keep_answers_for(std::time::Duration::ZERO)
        },
        &issuer,
        listener,
    )
    .await;

    let alice = issuer.token("alice", &uri).await;
    assert_ne!(alice.split('.').count(), 3, "not opaque: {alice}");
    let served = list(&addr, Some(&alice)).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(names(&served), ["hello", "secret"]);

    let for_other = issuer.token("bob", other).await;
    let made_up = "m4de-up-t0ken-that-no-one-issued".to_owned();
    for (what, token) in [("another audience", &for_other), ("made up", &made_up)] {
        let refused = list(&addr, Some(token)).await;
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(!refused.body.contains(token.as_str()), "{what}: echoed");
    }

    // Alice's token revoked at the issuer: refused from then on.
    let path = issuer
        .introspection_endpoint
        .strip_prefix(&issuer.issuer)
        .unwrap()
        .replace("introspection", "revocation");
    let revoked = http(
        issuer.addr(),
        &format!("POST {path} HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded"),
        &format!("token={alice}&client_id=alice&client_secret=alice-secret"),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let refused = list(&addr, Some(&alice)).await;
    assert_eq!(refused.status, 401, "a revoked token: {}", refused.body);
    assert!(refused.body.contains("not active"), "{}", refused.body);
    server.shutdown().await;

    // The resource server's own credentials refused by the issuer: no
    // token can be checked, so none is accepted (503, not 401: the
    // client's token may be fine).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let uri = format!("http://{addr}/mcp");
    let issuer = AuthServer::start_issuing(&[&uri], "opaque");
    let endpoint = issuer.introspection_endpoint.clone();
    let server = serve(
        |uri| IntrospectionVerifier::new(&endpoint, "rs", "wrong-secret", uri).unwrap(),
        &issuer,
        listener,
    )
    .await;
    let token = issuer.token("alice", &uri).await;
    let unavailable = list(&addr, Some(&token)).await;
    assert_eq!(unavailable.status, 503, "{}", unavailable.body);
    assert!(!unavailable.body.contains(&token) && !unavailable.body.contains("wrong-secret"));
    server.shutdown().await;
}
