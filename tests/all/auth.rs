//! The HTTP server as an OAuth 2.1 resource server, against a real
//! authorization server: `oidc-provider` (npm, tests/auth/server.mjs) on
//! loopback issues client-credentials JWT access tokens for the server's
//! canonical URI; bad tokens (another audience, expired, an unknown key,
//! `alg: none`, HS256 keyed with the public key, another issuer) are each
//! refused with the spec's status and `WWW-Authenticate`. Under a policy,
//! principals see and call different tools, at the rate their rule allows,
//! and within the fuel their rule's quota allows a window (as the sandbox
//! counted it, on a real plugin).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost::approval::ToolPattern;
use toolhost::mcp::server::auth::{JwtVerifier, Policy, Rate, ResourceServer, Rule, Who};
use toolhost::mcp::server::{ServerOptions, ToolServer};
use toolhost::tools::{NativeTool, ToolRegistry};
use toolhost_tests::plugins::workspace_root;

/// oidc-provider on loopback, killed when dropped.
struct AuthServer {
    child: Child,
    issuer: String,
    jwks_uri: String,
    token_endpoint: String,
    introspection_endpoint: String,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl AuthServer {
    /// Issuing JWT access tokens for `resources`.
    fn start(resources: &[&str]) -> Self {
        Self::start_issuing(resources, "jwt")
    }

    /// Issuing access tokens of `format` (`jwt` or `opaque`) for
    /// `resources`.
    fn start_issuing(resources: &[&str], format: &str) -> Self {
        let dir = workspace_root().join("tests/auth");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "oidc-provider is not installed: run `npm install` in tests/auth (.ci/run does)"
        );
        let mut child = Command::new("node")
            .arg("server.mjs")
            .args(resources)
            .current_dir(&dir)
            .env("ACCESS_TOKEN_FORMAT", format)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("server.mjs did not start: {line:?}"));
        Self {
            child,
            issuer: started["issuer"].as_str().unwrap().to_owned(),
            jwks_uri: started["jwks_uri"].as_str().unwrap().to_owned(),
            token_endpoint: started["token_endpoint"].as_str().unwrap().to_owned(),
            introspection_endpoint: started["introspection_endpoint"]
                .as_str()
                .unwrap()
                .to_owned(),
        }
    }

    fn addr(&self) -> &str {
        self.issuer.strip_prefix("http://").unwrap()
    }

    /// A client-credentials access token of `client` for `resource`.
    async fn token(&self, client: &str, resource: &str) -> String {
        let body = format!(
            "grant_type=client_credentials&client_id={client}&client_secret={client}-secret\
             &scope=tools&resource={}",
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let path = self.token_endpoint.strip_prefix(&self.issuer).unwrap();
        let answer = http(
            self.addr(),
            &format!("POST {path} HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded"),
            &body,
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let json: Value = serde_json::from_str(&answer.body).unwrap();
        json["access_token"].as_str().unwrap().to_owned()
    }

    /// A bad token of `kind` (see server.mjs).
    async fn forged(&self, kind: &str) -> String {
        let answer = http(self.addr(), &format!("GET /forge?kind={kind} HTTP/1.1"), "").await;
        assert_eq!(answer.status, 200);
        answer.body
    }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One raw HTTP/1.1 request (the connection closed after it).
async fn http(addr: &str, head: &str, body: &str) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let response = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A stateless `tools/list` with `token`, if any.
async fn list(addr: &str, token: Option<&str>) -> Answer {
    rpc(addr, token, "tools/list", json!({})).await
}

/// A stateless request of `method` with `params` and `token`, if any.
async fn rpc(addr: &str, token: Option<&str>, method: &str, mut params: Value) -> Answer {
    let auth = token.map_or(String::new(), |t| format!("\r\nAuthorization: Bearer {t}"));
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    });
    let name = params["name"]
        .as_str()
        .map_or(String::new(), |n| format!("\r\nMcp-Name: {n}"));
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}{name}{auth}"
        ),
        &request.to_string(),
    )
    .await
}

/// The tool names of a `tools/list` answer.
fn names(answer: &Answer) -> Vec<String> {
    let json: Value =
        serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("not JSON: {}", answer.body));
    let mut names: Vec<String> = json["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list answer: {json}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The JSON-RPC answer of a `tools/call` of `tool`.
async fn call(addr: &str, token: &str, tool: &str) -> Value {
    let answer = rpc(
        addr,
        Some(token),
        "tools/call",
        json!({"name": tool, "arguments": {}}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("not JSON: {}", answer.body))
}

/// `registry()` served statelessly over HTTP on loopback under `policy`
/// and `options`, its tokens from a real authorization server: the
/// address, the resource URI, the issuer and the server.
/// A served registry: its address, its resource URI, the issuer of its
/// tokens, and the server.
type Served = (
    String,
    String,
    AuthServer,
    toolhost::mcp::server::HttpServer,
);

async fn serve_with(policy: Policy, options: ServerOptions) -> Served {
    serve_registry_with(registry(), policy, options.stateless(true)).await
}

/// `registry` served as [`serve_with`] serves `registry()`, statelessly
/// only if `options` says so.
async fn serve_registry_with(
    registry: Arc<ToolRegistry>,
    policy: Policy,
    options: ServerOptions,
) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let uri = format!("http://{addr}/mcp");
    let issuer = AuthServer::start(&[&uri]);
    let verifier = JwtVerifier::new(&issuer.issuer, &uri, &issuer.jwks_uri).unwrap();
    let auth = ResourceServer::new(&uri, verifier).authorization_server(&issuer.issuer);
    let options = options.resource_server(auth).policy(policy);
    let server = ToolServer::new(registry, options)
        .serve_http_on(listener)
        .expect("serves");
    (addr, uri, issuer, server)
}

/// A native tool that says hello.
fn hello() -> NativeTool {
    NativeTool::new(
        "hello",
        "Says hello.",
        json!({"type": "object"}),
        |_| async { Ok(json!({"hello": "world"})) },
    )
}

fn registry() -> Arc<ToolRegistry> {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(hello()).unwrap();
    registry
        .register(NativeTool::new(
            "secret",
            "Tells a secret.",
            json!({"type": "object"}),
            |_| async { Ok(json!({"secret": 42})) },
        ))
        .unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_of_a_real_authorization_server_are_checked_as_the_spec_says() {
    // Two servers: `tools` needs scope `tools` (which clients get),
    // `admin` needs `admin` too (which none gets).
    let tools_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tools_addr = tools_listener.local_addr().unwrap().to_string();
    let admin_addr = admin_listener.local_addr().unwrap().to_string();
    let tools_uri = format!("http://{tools_addr}/mcp");
    let admin_uri = format!("http://{admin_addr}/mcp");
    let issuer = AuthServer::start(&[&tools_uri, &admin_uri]);

    let serve = |uri: &str, scopes: &[&str], listener| {
        let verifier = JwtVerifier::new(&issuer.issuer, uri, &issuer.jwks_uri).unwrap();
        let mut auth = ResourceServer::new(uri, verifier).authorization_server(&issuer.issuer);
        for scope in scopes {
            auth = auth.scope(*scope);
        }
        let options = ServerOptions::new().stateless(true).resource_server(auth);
        ToolServer::new(registry(), options)
            .serve_http_on(listener)
            .expect("serves")
    };
    let tools = serve(&tools_uri, &["tools"], tools_listener);
    let admin = serve(&admin_uri, &["tools", "admin"], admin_listener);

    // The metadata, at the path for the resource, without a token.
    let metadata_url = format!("http://{tools_addr}/.well-known/oauth-protected-resource/mcp");
    let metadata = http(
        &tools_addr,
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1",
        "",
    )
    .await;
    assert_eq!(metadata.status, 200);
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], json!(tools_uri));
    assert_eq!(metadata["authorization_servers"], json!([issuer.issuer]));
    assert_eq!(metadata["scopes_supported"], json!(["tools"]));

    // No token: 401 naming the metadata and the scope.
    let refused = list(&tools_addr, None).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"tools\"").as_str())
    );

    // A client-credentials token for this server: served.
    let good = issuer.token("alice", &tools_uri).await;
    let served = list(&tools_addr, Some(&good)).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(names(&served), ["hello", "secret"], "{}", served.body);

    // Each bad token: 401 invalid_token, and never echoed back.
    let other_audience = issuer.token("alice", &admin_uri).await;
    let mut bad = vec![("another audience", other_audience)];
    for kind in ["expired", "wrong-issuer", "unknown-key", "none", "hs256"] {
        bad.push((kind, issuer.forged(kind).await));
    }
    // The forge signs good tokens with the issuer's key too: the refusals
    // are for what each one changes.
    let forged_good = issuer.forged("good").await;
    assert_eq!(list(&tools_addr, Some(&forged_good)).await.status, 200);
    for (what, token) in &bad {
        let refused = list(&tools_addr, Some(token)).await;
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("error=\"invalid_token\"")
                && challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{what}: {challenge}"
        );
        assert!(
            !refused.body.contains(token.as_str()),
            "{what}: the token came back"
        );
    }

    // A valid token without a needed scope: 403 insufficient_scope.
    let short = issuer.token("bob", &admin_uri).await;
    let refused = list(&admin_addr, Some(&short)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let challenge = refused.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"tools admin\""),
        "{challenge}"
    );

    tools.shutdown().await;
    admin.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_see_and_call_what_the_policy_allows_at_its_rate() {
    let any = |p: &str| ToolPattern::new(p).unwrap();
    let policy = Policy::new()
        .rule(
            Rule::new("alice-all", Who::ClientId("alice".into()), [any("*")]).rate(Rate {
                per_minute: 1,
                burst: 2,
            }),
        )
        .rule(Rule::new(
            "bob-hello",
            Who::ClientId("bob".into()),
            [any("hello")],
        ));
    let (addr, uri, issuer, server) = serve_with(policy, ServerOptions::new()).await;
    let alice = issuer.token("alice", &uri).await;
    let bob = issuer.token("bob", &uri).await;
    let carol = issuer.token("carol", &uri).await;

    // Each sees what its rule allows; carol, whom no rule covers, nothing.
    assert_eq!(names(&list(&addr, Some(&alice)).await), ["hello", "secret"]);
    assert_eq!(names(&list(&addr, Some(&bob)).await), ["hello"]);
    assert!(names(&list(&addr, Some(&carol)).await).is_empty());

    // A tool the rule does not allow: refused, naming the rule.
    let refused = call(&addr, &bob, "secret").await;
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    assert_eq!(
        refused["error"]["data"]["rule"],
        json!("bob-hello"),
        "{refused}"
    );
    let served = call(&addr, &bob, "hello").await;
    assert!(
        served["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("world")),
        "{served}"
    );

    // Alice's burst of two, then -32029 with a hint; bob is still served.
    for _ in 0..2 {
        let served = call(&addr, &alice, "secret").await;
        assert!(
            served["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("42")),
            "{served}"
        );
    }
    let limited = call(&addr, &alice, "secret").await;
    assert_eq!(limited["error"]["code"], json!(-32029), "{limited}");
    assert_eq!(
        limited["error"]["data"]["rule"],
        json!("alice-all"),
        "{limited}"
    );
    let retry = limited["error"]["data"]["retryAfterSeconds"]
        .as_f64()
        .unwrap();
    assert!((1.0..=60.0).contains(&retry), "{limited}");
    let served = call(&addr, &bob, "hello").await;
    assert!(
        served["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("world")),
        "{served}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principals_tool_search_finds_only_what_its_policy_shows() {
    let any = |p: &str| ToolPattern::new(p).unwrap();
    // Both may search; only alice may see (and call) `secret`.
    let policy = Policy::new()
        .rule(Rule::new(
            "alice-all",
            Who::ClientId("alice".into()),
            [any("*")],
        ))
        .rule(Rule::new(
            "bob-hello",
            Who::ClientId("bob".into()),
            [any("hello"), any("tool_search")],
        ));
    let options = ServerOptions::new().tool_search([]);
    let (addr, uri, issuer, server) = serve_with(policy, options).await;
    let search = |token: String| {
        let addr = addr.clone();
        async move {
            let params = json!({"name": "tool_search",
                "arguments": {"query": "says hello tells a secret", "limit": 5}});
            let answer = rpc(&addr, Some(&token), "tools/call", params).await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            let json: Value = serde_json::from_str(&answer.body).unwrap();
            let mut found: Vec<String> = json["result"]["structuredContent"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("not a search answer: {json}"))
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
            found.sort();
            found
        }
    };
    assert_eq!(
        search(issuer.token("alice", &uri).await).await,
        ["hello", "secret"]
    );
    assert_eq!(search(issuer.token("bob", &uri).await).await, ["hello"]);
    server.shutdown().await;

    // In a session (where calls take the fast lane), the same.
    let policy = Policy::new().rule(Rule::new(
        "bob-hello",
        Who::ClientId("bob".into()),
        [any("hello"), any("tool_search")],
    ));
    let options = ServerOptions::new().tool_search([]);
    let (addr, uri, issuer, server) = serve_registry_with(registry(), policy, options).await;
    let bob = Session::open(&addr, &issuer.token("bob", &uri).await).await;
    for _ in 0..20 {
        let (answer, _) = bob.call("hello", json!({})).await;
        assert!(answer["result"].is_object(), "{answer}");
        let arguments = json!({"query": "says hello tells a secret", "limit": 5});
        let (answer, _) = bob.call("tool_search", arguments).await;
        let found = answer["result"]["structuredContent"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("not a search answer: {answer}"));
        assert!(
            found.iter().all(|t| t["name"] != "secret"),
            "a search found what bob's tools/list hides: {answer}"
        );
    }
    server.shutdown().await;
}

/// A 2025-11-25 session of `token`'s principal: its calls take the fast
/// lane once the server has seen `notifications/initialized`.
struct Session {
    addr: String,
    token: String,
    id: String,
}

impl Session {
    async fn open(addr: &str, token: &str) -> Self {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}});
        let mut session = Self {
            addr: addr.to_owned(),
            token: token.to_owned(),
            id: String::new(),
        };
        let answer = session.post(&init).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        session.id = answer.header("mcp-session-id").unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post(&initialized).await.status, 202);
        session
    }

    async fn post(&self, message: &Value) -> Answer {
        let session = if self.id.is_empty() {
            String::new()
        } else {
            format!("\r\nMcp-Session-Id: {}", self.id)
        };
        http(
            &self.addr,
            &format!(
                "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n\
                 Authorization: Bearer {}{session}",
                self.token
            ),
            &message.to_string(),
        )
        .await
    }

    /// A call's answer, and whether it came directly (one JSON body, not
    /// rmcp's event stream).
    async fn call(&self, tool: &str, arguments: Value) -> (Value, bool) {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
        self.request(&request).await
    }

    /// The answer to `request` (its `id` must be 7), and whether it came
    /// directly (one JSON body, not rmcp's event stream).
    async fn request(&self, request: &Value) -> (Value, bool) {
        let answer = self.post(request).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let direct = answer
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"));
        let body = answer.body.trim();
        let json = match body.strip_prefix('{') {
            Some(_) => body.to_owned(),
            // Chunked or not, the event stream's message is one `data:` line.
            None => body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .find(|d| d.contains(r#""id":7"#))
                .unwrap_or_else(|| panic!("no answer in {body}"))
                .to_owned(),
        };
        (serde_json::from_str(&json).unwrap(), direct)
    }
}

mod cors;
mod introspection;
mod oauth_flow;
mod owners;
mod quota;
