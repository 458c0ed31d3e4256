//! The official MCP TypeScript SDK's OAuth flow, end to end against
//! `toolhost serve --http` with `[auth]` (the binary, its host config, the
//! bundled calc plugin) and a real authorization server on loopback
//! (oidc-provider, tests/auth/server.mjs).
//!
//! The client is `@modelcontextprotocol/sdk` (the TypeScript SDK's
//! `client/auth.js` `auth()` and `StreamableHTTPClientTransport` with an
//! `authProvider`, the version pinned in tests/auth/package.json), driven
//! by tests/auth/oauth_client.mjs, which is only its `OAuthClientProvider`
//! (storage in memory, and a "browser" that follows redirects). Given only
//! the server's URL, the SDK itself goes from the server's 401 to its
//! Protected Resource Metadata, the authorization server's metadata,
//! dynamic client registration, an authorization request with PKCE (S256)
//! and `resource`, and the token exchange; then lists the tools and calls
//! one. The same client asking for a token for another resource gets one
//! from the authorization server, and the server refuses it.

use std::process::{Command, Stdio};

use serde_json::Value;
use toolhost_tests::mcp::ServeHttp;
use toolhost_tests::plugins::{plugin_subset, workspace_root};
use toolhost_tests::telemetry::{free_port, host_config};

use super::AuthServer;

/// Another resource the authorization server issues tokens for.
const OTHER_RESOURCE: &str = "https://other.example/mcp";

/// What oauth_client.mjs reported for a run against `url` (with `extra`
/// arguments), and whether it exited 0.
fn oauth_client(url: &str, extra: &[&str]) -> (Value, bool) {
    let output = Command::new("node")
        .arg("oauth_client.mjs")
        .args([url, "calc_eval", r#"{"expression":"6*7"}"#])
        .args(extra)
        .current_dir(workspace_root().join("tests/auth"))
        .stdin(Stdio::null())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .unwrap_or_else(|| {
            panic!(
                "oauth_client.mjs reported nothing ({}):\n{stdout}\n{stderr}",
                output.status
            )
        });
    (report, output.status.success())
}

/// The report's HTTP exchanges.
fn requests(report: &Value) -> &[Value] {
    report["requests"]
        .as_array()
        .unwrap_or_else(|| panic!("no requests in {report:#}"))
}

/// The index of the first exchange from `from` on that `matches`.
fn position(report: &Value, from: usize, what: &str, matches: impl Fn(&Value) -> bool) -> usize {
    requests(report)
        .iter()
        .skip(from)
        .position(matches)
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("no {what} (after exchange {from}) in {report:#}"))
}

#[test]
fn the_official_typescript_sdk_logs_in_by_oauth_and_calls_a_tool() {
    let port = free_port();
    let uri = format!("http://127.0.0.1:{port}/mcp");
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let issuer = AuthServer::start(&[&uri, OTHER_RESOURCE]);
    let dir = tempfile::tempdir().unwrap();
    let config = host_config(
        dir.path(),
        &format!(
            "[auth]\nresource = \"{uri}\"\nissuer = \"{}\"\njwks_uri = \"{}\"\n\
             scopes = [\"tools\"]\n",
            issuer.issuer, issuer.jwks_uri
        ),
    );
    let plugins = plugin_subset(&["calc"]);
    let serve = ServeHttp::start_on(
        &format!("127.0.0.1:{port}"),
        plugins.path(),
        &["--config", config.to_str().unwrap()],
        &[],
    );
    let server_log = || serve.log.lines().join("\n");

    let (report, ok) = oauth_client(&uri, &[]);
    assert!(
        ok && report["ok"] == true,
        "the flow failed: {report:#}\nserver log:\n{}",
        server_log()
    );

    // The SDK's own steps, in order. No token: 401, naming the metadata.
    let refused = 0;
    let first = &requests(&report)[refused];
    assert_eq!(first["url"], uri.as_str(), "{report:#}");
    assert_eq!(first["bearer"], false, "{report:#}");
    assert_eq!(first["status"], 401, "{report:#}");
    assert!(
        first["www_authenticate"]
            .as_str()
            .is_some_and(|c| c.contains(&format!("resource_metadata=\"{metadata_url}\""))),
        "{report:#}"
    );
    // The server's Protected Resource Metadata, then the issuer's.
    let prm = position(&report, refused, "resource metadata", |r| {
        r["url"] == metadata_url.as_str() && r["status"] == 200
    });
    let as_metadata = position(&report, prm, "authorization server metadata", |r| {
        r["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{}/.well-known/", issuer.issuer)))
            && r["status"] == 200
    });
    // Dynamic client registration.
    let registered = position(&report, as_metadata, "registration", |r| {
        r["method"] == "POST"
            && r["url"] == format!("{}/reg", issuer.issuer).as_str()
            && r["status"] == 201
    });
    let client_id = report["client_id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| panic!("no client registered: {report:#}"));
    // The authorization request: code, PKCE S256, this resource's scope
    // and indicator.
    let authorized = position(&report, registered, "authorization request", |r| {
        r["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{}/auth?", issuer.issuer)))
    });
    let authorization = &report["authorization"];
    assert_eq!(authorization["response_type"], "code", "{report:#}");
    assert_eq!(authorization["client_id"], client_id, "{report:#}");
    assert_eq!(authorization["resource"], uri.as_str(), "{report:#}");
    assert_eq!(authorization["scope"], "tools", "{report:#}");
    assert_eq!(authorization["iss"], issuer.issuer.as_str(), "{report:#}");
    assert_eq!(report["pkce"]["method"], "S256", "{report:#}");
    assert_eq!(
        report["pkce"]["challenge_matches_verifier"], true,
        "{report:#}"
    );
    assert_eq!(report["pkce"]["verifier_sent"], true, "{report:#}");
    // The token exchange: the code, its verifier, the resource.
    let token_endpoint = format!("{}/token", issuer.issuer);
    let exchanged = position(&report, authorized, "token exchange", |r| {
        r["url"] == token_endpoint.as_str() && r["status"] == 200
    });
    let body = &requests(&report)[exchanged]["body"];
    assert_eq!(body["grant_type"], "authorization_code", "{report:#}");
    assert_eq!(body["code_verifier"], "(present)", "{report:#}");
    assert_eq!(body["resource"], uri.as_str(), "{report:#}");
    let exchanges = requests(&report)
        .iter()
        .filter(|r| r["url"] == token_endpoint.as_str())
        .count();
    assert_eq!(exchanges, 1, "one token, and no refresh: {report:#}");
    // The one token, for this resource, which the server then accepted.
    let claims = &report["token"]["claims"];
    assert_eq!(claims["aud"], uri.as_str(), "{report:#}");
    assert_eq!(claims["iss"], issuer.issuer.as_str(), "{report:#}");
    assert_eq!(claims["client_id"], client_id, "{report:#}");
    assert_eq!(claims["sub"], "user-1", "{report:#}");
    assert_eq!(claims["scope"], "tools", "{report:#}");
    position(&report, exchanged, "request accepted with the token", |r| {
        r["url"] == uri.as_str() && r["bearer"] == true && r["status"] == 200
    });
    for r in requests(&report)
        .iter()
        .filter(|r| r["url"] == uri.as_str())
    {
        let status = r["status"].as_u64().unwrap_or_default();
        assert!(
            (200..300).contains(&status)
                || (r["bearer"] == false && status == 401)
                // A server need not offer the GET stream.
                || (r["method"] == "GET" && status == 405),
            "an MCP request answered {status}: {report:#}"
        );
    }
    // Served: the plugin's tools, and its answer.
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "calc_eval"), "{report:#}");
    assert_ne!(report["call"]["isError"], true, "{report:#}");
    assert!(
        report["call"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("42")),
        "{report:#}"
    );

    // The same client asking for a token for another resource: the
    // authorization server issues one (for that audience), and the server
    // refuses it, each time the SDK presents one (the code's token, then a
    // refreshed one).
    let (report, ok) = oauth_client(&uri, &["--resource", OTHER_RESOURCE]);
    assert!(
        !ok && report["ok"] == false,
        "a token for {OTHER_RESOURCE} was accepted: {report:#}"
    );
    assert_eq!(
        report["token"]["claims"]["aud"], OTHER_RESOURCE,
        "{report:#}"
    );
    let presented: Vec<&Value> = requests(&report)
        .iter()
        .filter(|r| r["url"] == uri.as_str() && r["bearer"] == true)
        .collect();
    assert!(!presented.is_empty(), "no token was presented: {report:#}");
    for r in presented {
        assert_eq!(r["status"], 401, "{report:#}");
        let challenge = r["www_authenticate"].as_str().unwrap_or_default();
        assert!(
            challenge.contains("error=\"invalid_token\"")
                && challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{report:#}"
        );
    }
    assert!(
        report["tools"].is_null() && report["call"].is_null(),
        "{report:#}"
    );
    assert!(
        report["error"].as_str().is_some_and(|e| e.contains("401")),
        "{report:#}"
    );
}
