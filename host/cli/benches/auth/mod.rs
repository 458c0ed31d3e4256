//! `--auth none,jwt,policy`: what checking who calls costs `toolhost serve
//! --http`, measured in one run against the same build with no `[auth]`.
//!
//! The bench is the authorization server: it makes an ES256 key pair
//! (ring), serves its key set (JWKS) on loopback from a thread of its own,
//! and signs one access token per HTTP client (its own `sub` and
//! `client_id`, scope `tools`, an hour to live). Each mode is a host config
//! the server reads (`--config`):
//!
//! - `none`: no `[auth]`; the requests are not looked at;
//! - `jwt`: `[auth]`: every request's token verified (signature, `iss`,
//!   `aud`, `exp`, the scope);
//! - `policy`: `[auth]` and one `[[auth.rules]]` that admits every call of
//!   the client's principal: a rate, a cap on calls at once and a fuel and
//!   wall-time quota, each far above what the run uses, so that every
//!   check runs (the rule matched, the tool pattern, the bucket, the cap,
//!   the quota, the charge after the call, the decision counted) and none
//!   refuses.
//!
//! The resource (the audience every token names) is a fixed URI the
//! config names, without the port: each round's server takes a free port,
//! and the server checks only that a token's `aud` is its `resource`.
//! Every client sends its `Authorization` header in every mode, `none`
//! included, so that the three servers read the same bytes.
//!
//! Issue 39's floor: the policy costs at most 5% of a plain call's server
//! CPU at 8 HTTP clients, that is (policy - jwt) / none, server CPU per
//! call.
//!
//! Each round also times both checks in this process, one at a time, on
//! one thread (its CPU clock), built from the same config text as the
//! servers': `ResourceServer::authorize` of the clients' `Authorization`
//! headers (keys fetched once from the same JWKS), and what the fast lane
//! does per call under the policy (`Policy::admit`, the decision counted,
//! the charge, the permit dropped), for the clients' principals in turn.
//! That is each check's own CPU, without loopback TCP and without the
//! server's threads and its clients taking turns on the cores, next to
//! which the servers' difference can be judged.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::json;

use toolhost::config::AuthConfig;
use toolhost::mcp::server::auth::{Policy, Principal, ResourceServer};
use toolhost::telemetry::Metrics;

use super::{
    HttpServer, McpHttpClient, Peer, Setup, Spread, TOOL, Telemetry, TelemetrySetup, fmt,
    http_round, initialize, json_rpc_in, median, verdict,
};

/// The policy's own server CPU per call with 8 HTTP clients, at most this
/// fraction of a plain call's (no `[auth]`): issue 39.
const POLICY_FLOOR: f64 = 0.05;

/// The tokens' issuer (`iss`); never contacted: the key set is at the
/// bench's own `jwks_uri`.
const ISSUER: &str = "https://login.serve-bench.example";
/// The server's canonical URI, the tokens' audience.
const RESOURCE: &str = "http://127.0.0.1/mcp";
/// The scope `[auth]` asks of every token, and the rule covers.
const SCOPE: &str = "tools";
/// The one rule of `policy`.
const RULE: &str = "serve-bench";
/// The signing key's id.
const KID: &str = "serve-bench-es256";

/// How `serve --http` checks who calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// No `[auth]`.
    None,
    /// `[auth]`: the token verified.
    Jwt,
    /// `[auth]` and `[[auth.rules]]`: the token verified, the call
    /// admitted and charged by the policy.
    Policy,
}

impl Auth {
    fn parse(name: &str) -> Self {
        match name.trim() {
            "none" => Self::None,
            "jwt" => Self::Jwt,
            "policy" => Self::Policy,
            other => panic!("--auth takes none, jwt or policy (or a list), not `{other}`"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Jwt => "jwt",
            Self::Policy => "policy",
        }
    }

    /// The host config of this mode, at `telemetry`, for keys at
    /// `jwks_uri`.
    fn config(self, telemetry: Telemetry, jwks_uri: &str) -> String {
        let mut config = String::new();
        if telemetry == Telemetry::Off {
            config.push_str("[telemetry]\nmetrics = false\n\n");
        }
        if self == Self::None {
            return config;
        }
        config.push_str(&format!(
            "[auth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_uri = \"{jwks_uri}\"\n\
             scopes = [\"{SCOPE}\"]\nalgorithms = [\"ES256\"]\n"
        ));
        if self == Self::Policy {
            // Every limit on, none near: the run makes some 10^5 calls a
            // principal, each of well under 10^8 fuel and a second.
            config.push_str(&format!(
                "\n[[auth.rules]]\nname = \"{RULE}\"\nscope = \"{SCOPE}\"\ntools = [\"text_*\"]\n\
                 per_minute = 1_000_000_000\nburst = 1_000_000_000\nmax_concurrent = 1_000\n\
                 fuel_per_window = 1_000_000_000_000_000_000\nwall_ms_per_window = 1_000_000_000_000\n\
                 window_secs = 3600\n"
            ));
        }
        config
    }
}

/// The authorization server of the run: an ES256 key, its key set served
/// on loopback, and the tokens it signs.
struct Issuer {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    jwks_uri: String,
    /// Requests for the key set so far.
    fetches: Arc<AtomicU64>,
}

impl Issuer {
    fn start() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("an ES256 key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("the key just made");
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = key.public_key().as_ref();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256", "use": "sig",
            "x": b64(&point[1..33]), "y": b64(&point[33..65]),
        }]})
        .to_string();
        let fetches = Arc::new(AtomicU64::new(0));
        let jwks_uri = serve_jwks(jwks, Arc::clone(&fetches));
        Self {
            key,
            rng,
            jwks_uri,
            fetches,
        }
    }

    /// The access token of client `i`: its own principal, for this
    /// server, valid for an hour.
    fn token(&self, i: usize) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let head = json!({"alg": "ES256", "kid": KID, "typ": "at+jwt"});
        let claims = json!({
            "iss": ISSUER, "aud": RESOURCE, "sub": format!("serve-bench-client-{i}"),
            "client_id": format!("serve-bench-{i}"), "scope": SCOPE,
            "iat": now, "exp": now + 3600,
        });
        let message = format!(
            "{}.{}",
            b64(head.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = self
            .key
            .sign(&self.rng, message.as_bytes())
            .expect("an ES256 signature");
        format!("{message}.{}", b64(signature.as_ref()))
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// An HTTP/1.1 server on loopback that answers every request with `jwks`:
/// its URL (`http://127.0.0.1:PORT/jwks`).
fn serve_jwks(jwks: String, fetches: Arc<AtomicU64>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}/jwks", listener.local_addr().unwrap());
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{jwks}",
        jwks.len()
    );
    let response: Arc<str> = response.into();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (response, fetches) = (Arc::clone(&response), Arc::clone(&fetches));
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                // GETs, one after another on a kept-alive connection.
                loop {
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line.trim_end().is_empty() {
                            break;
                        }
                    }
                    fetches.fetch_add(1, Ordering::Relaxed);
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    uri
}

/// The access modes side by side in one run: the HTTP rows of each, in
/// alternating rounds, each mode's medians, the same-round ratios, and
/// issue 39's floor.
pub(super) async fn compare(
    setup: &mut Setup,
    list: &str,
    (telemetry, telemetry_setup): &(Telemetry, TelemetrySetup),
    dir: &Path,
    clients: &[usize],
    rounds: usize,
    window: Duration,
) {
    let modes: Vec<Auth> = list.split(',').map(Auth::parse).collect();
    // Every mode runs this very binary, even if a build replaces the one
    // in target/ while the rounds run.
    let binary = dir.join("toolhost");
    std::fs::copy(&setup.binary, &binary).expect("a copy of the toolhost binary");
    setup.binary = binary;
    let issuer = Issuer::start();
    let most = clients.iter().copied().max().unwrap_or(1);
    setup.tokens = (0..most).map(|i| issuer.token(i)).collect();
    let configs: Vec<TelemetrySetup> = modes
        .iter()
        .map(|mode| {
            let file = dir.join(format!("auth-{}.toml", mode.name()));
            std::fs::write(&file, mode.config(*telemetry, &issuer.jwks_uri)).unwrap();
            TelemetrySetup {
                otlp: telemetry_setup.otlp.clone(),
                config: Some(file),
            }
        })
        .collect();
    println!(
        "serve bench, access checks side by side: `{TOOL}` over HTTP, {rounds} alternating rounds \
         of {} s per mode and client count, telemetry {}, ES256 tokens (one per client), {} cores \
         shared by client and server",
        window.as_secs_f64(),
        telemetry.name(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (mode, config) in modes.iter().zip(&configs) {
        setup.telemetry = config.clone();
        check(setup, *mode).await;
    }
    // results[mode][client row] = (calls/s, CPU per call) of each round.
    let mut results = vec![vec![Vec::new(); clients.len()]; modes.len()];
    let checks = Checks::new(
        &Auth::Policy.config(*telemetry, &issuer.jwks_uri),
        *telemetry,
        &setup.tokens,
    )
    .await;
    // in_process[round] = (CPU per token verified, CPU per policy check).
    let mut in_process = Vec::with_capacity(rounds);
    for round in 0..rounds {
        // Rotate which mode goes first, so that none always runs right
        // after another's server or first.
        for i in 0..modes.len() {
            let m = (i + round) % modes.len();
            setup.telemetry = configs[m].clone();
            http_round(
                setup,
                clients,
                window,
                round,
                modes[m].name(),
                &mut results[m],
            )
            .await;
        }
        let costs = (checks.verifying(2_000).await, checks.admitting(100_000));
        eprintln!(
            "round {}: in process, one thread: {} per token verified, {} per policy check",
            round + 1,
            fmt(costs.0),
            fmt(costs.1)
        );
        in_process.push(costs);
    }
    // Each server with [auth], and the checks in this process, fetch the
    // key set once, when they first verify a token.
    let fetchers = modes.iter().filter(|m| **m != Auth::None).count() * (rounds + 1) + 1;
    eprintln!(
        "the key set was fetched {} times by {fetchers} verifiers (each fetches it once)",
        issuer.fetches.load(Ordering::Relaxed)
    );

    let base = modes[0].name();
    println!();
    println!(
        "| auth | clients | calls/s (median) | server CPU per call (median) | calls/s vs {base} | CPU vs {base} |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let medians = super::medians(&results);
    for (m, mode) in modes.iter().enumerate() {
        for (c, &n) in clients.iter().enumerate() {
            let ((rate, cpu), (base_rate, base_cpu)) = (medians[m][c], medians[0][c]);
            println!(
                "| {} | {n} | {rate:.0} | {} | {:.3}x | {:.3}x |",
                mode.name(),
                fmt(Duration::from_secs_f64(cpu)),
                rate / base_rate,
                cpu / base_cpu
            );
        }
    }

    // Each pair of modes in the same round (minutes apart at most): the
    // machine's drift over the run, which moves both, cancels out.
    let index = |mode: Auth| modes.iter().position(|m| *m == mode);
    let pairs: Vec<(usize, usize)> = [
        (Auth::Jwt, Auth::None),
        (Auth::Policy, Auth::Jwt),
        (Auth::Policy, Auth::None),
    ]
    .into_iter()
    .filter_map(|(a, b)| Some((index(a)?, index(b)?)))
    .collect();
    if !pairs.is_empty() {
        println!();
        println!(
            "| ratio | clients | calls/s, same round (median, min-max) | server CPU per call, same round (median, min-max) | CPU difference, same round (median) |"
        );
        println!("| --- | ---: | ---: | ---: | ---: |");
        for &(a, b) in &pairs {
            for (c, &n) in clients.iter().enumerate() {
                let (rows, base) = (&results[a][c], &results[b][c]);
                let (rate, cpu) = super::paired(rows, base);
                let extra = median(
                    rows.iter()
                        .zip(base)
                        .map(|(r, b)| r.1.as_secs_f64() - b.1.as_secs_f64())
                        .collect(),
                );
                println!(
                    "| {} / {} | {n} | {rate} | {cpu} | {:+.1} µs |",
                    modes[a].name(),
                    modes[b].name(),
                    extra * 1e6
                );
            }
        }
    }

    // Each check's own CPU, in this process, against a plain call's.
    let verifying = median(in_process.iter().map(|c| c.0.as_secs_f64()).collect());
    let admitting = median(in_process.iter().map(|c| c.1.as_secs_f64()).collect());
    let plain = index(Auth::None).and_then(|none| {
        let c = clients.iter().position(|&n| n == 8)?;
        Some(medians[none][c].1)
    });
    let share = |cpu: f64| plain.map_or_else(String::new, |p| format!("{:.1}%", cpu / p * 100.0));
    println!();
    println!(
        "| in process, one thread | CPU per check (median of rounds) | share of a plain call's server CPU (none, 8 clients) |"
    );
    println!("| --- | ---: | ---: |");
    println!(
        "| the token verified (`ResourceServer::authorize`) | {} | {} |",
        fmt(Duration::from_secs_f64(verifying)),
        share(verifying)
    );
    println!(
        "| the policy's checks (`Policy::admit`, the decision counted, the charge) | {} | {} |",
        fmt(Duration::from_secs_f64(admitting)),
        share(admitting)
    );

    let (Some(none), Some(jwt), Some(policy)) =
        (index(Auth::None), index(Auth::Jwt), index(Auth::Policy))
    else {
        return;
    };
    let Some(c) = clients.iter().position(|&n| n == 8) else {
        return;
    };
    println!();
    // What the policy adds to a verified call, as a share of a plain call.
    let cpu = |m: usize| medians[m][c].1;
    let of_medians = (cpu(policy) - cpu(jwt)) / cpu(none);
    let same_round = Spread::of(
        results[policy][c]
            .iter()
            .zip(&results[jwt][c])
            .zip(&results[none][c])
            .map(|((p, j), n)| (p.1.as_secs_f64() - j.1.as_secs_f64()) / n.1.as_secs_f64())
            .collect(),
    );
    let within = |share: f64| share <= POLICY_FLOOR;
    println!(
        "floor: the policy check costs <= {:.0}% of a plain call's server CPU, 8 HTTP clients: \
         (policy - jwt) / none {:+.1}% -> {} (medians of each mode's rounds); {:+.1}% ({:+.1}% to \
         {:+.1}%) -> {} (median of the same round's)",
        POLICY_FLOOR * 100.0,
        of_medians * 100.0,
        verdict(within(of_medians)),
        same_round.median * 100.0,
        same_round.min * 100.0,
        same_round.max * 100.0,
        verdict(within(same_round.median))
    );
    println!(
        "  verifying the token costs {:+.1}% of a plain call's server CPU (jwt / none, medians: \
         {:.3}x); the policy adds {:+.1}% to a verified call's (policy / jwt: {:.3}x)",
        (cpu(jwt) / cpu(none) - 1.0) * 100.0,
        cpu(jwt) / cpu(none),
        (cpu(policy) / cpu(jwt) - 1.0) * 100.0,
        cpu(policy) / cpu(jwt)
    );
}

/// Check that the server of `mode` is what it says, before any clock
/// starts: under `[auth]` a request without a token is refused (`401`),
/// and without it served; under the policy a tool outside the rule is
/// refused by the rule, and otherwise not. A plain call succeeds in
/// every mode.
async fn check(setup: &Setup, mode: Auth) {
    let server = HttpServer::start(setup, Peer::Toolhost);
    let mut anonymous = McpHttpClient::open(&server.addr, Peer::Toolhost, None).await;
    let status = anonymous
        .post(&initialize(0))
        .await
        .expect("initialize without a token")
        .status;
    let wanted = if mode == Auth::None { 200 } else { 401 };
    assert_eq!(
        status,
        wanted,
        "{}: initialize without a token answered {status}",
        mode.name()
    );
    let mut client = McpHttpClient::connect(&server.addr, Peer::Toolhost, setup.token(0)).await;
    if let Err(e) = client.call(1).await {
        panic!("{}: a call failed: {e}", mode.name());
    }
    let outside = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "serve_bench_outside_the_rule", "arguments": {}}
    });
    let response = client
        .post(&outside.to_string())
        .await
        .expect("a call of a tool outside the rule");
    let answer = json_rpc_in(&response.body, 2).unwrap_or_default();
    let refused_by_rule = answer["error"]["data"]["rule"] == RULE;
    assert_eq!(
        refused_by_rule,
        mode == Auth::Policy,
        "{}: a call of a tool outside the rule answered {} {answer}",
        mode.name(),
        response.status
    );
}

/// The checks a request under the policy goes through, built from the
/// policy mode's config text as `serve` builds them, for timing in this
/// process.
struct Checks {
    server: ResourceServer,
    policy: Arc<Policy>,
    metrics: Option<Metrics>,
    /// Each client's `Authorization` header.
    headers: Vec<String>,
    /// Each client's principal, as verified.
    principals: Vec<Principal>,
}

impl Checks {
    async fn new(config: &str, telemetry: Telemetry, tokens: &[String]) -> Self {
        let table: toml::Table = toml::from_str(config).expect("the policy mode's config");
        let auth: AuthConfig = table["auth"]
            .clone()
            .try_into()
            .expect("the policy mode's [auth]");
        let server = auth.resource_server().expect("a resource server");
        let policy = Arc::new(auth.policy().expect("a policy").expect("rules"));
        let headers: Vec<String> = tokens.iter().map(|t| format!("Bearer {t}")).collect();
        let mut principals = Vec::with_capacity(headers.len());
        for header in &headers {
            principals.push(server.authorize(Some(header)).await.expect("a good token"));
        }
        Self {
            server,
            policy,
            metrics: (telemetry != Telemetry::Off).then(Metrics::new),
            headers,
            principals,
        }
    }

    /// CPU per token verified, over `n` requests of the clients in turn.
    async fn verifying(&self, n: usize) -> Duration {
        let before = thread_cpu();
        for i in 0..n {
            let header = &self.headers[i % self.headers.len()];
            let principal = self.server.authorize(Some(header)).await;
            assert!(principal.is_ok(), "a token refused in process");
        }
        (thread_cpu() - before) / n as u32
    }

    /// CPU per policy check of a call, over `n` calls of the clients'
    /// principals in turn: what the fast lane does around a call it
    /// admits (`direct.rs`).
    fn admitting(&self, n: usize) -> Duration {
        let before = thread_cpu();
        for i in 0..n {
            let principal = &self.principals[i % self.principals.len()];
            let permit = self
                .policy
                .admit(principal, TOOL)
                .expect("admitted in process");
            if let Some(metrics) = &self.metrics {
                metrics.record_policy(self.policy.rule_name(principal).unwrap_or(""), "allowed");
            }
            permit.charge(1_000_000, Duration::from_micros(50));
            drop(permit);
        }
        (thread_cpu() - before) / n as u32
    }
}

/// The CPU time this thread has used so far.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write to.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(done, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
