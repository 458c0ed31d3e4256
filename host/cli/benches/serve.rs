//! Serve benchmark: one `tools/call` of `text_stats` through `toolhost
//! serve` (the MCP server), over stdio and over streamable HTTP, next to
//! the same call made in process through the registry, all in one run so
//! the ratios hold on a noisy machine.
//!
//! ```sh
//! cargo bench --bench serve                  # full run, prints a table
//! cargo test  --workspace --bench serve -- --bench       # the same, in the test profile
//! cargo test  --workspace --bench serve                  # smoke run (a few calls)
//! cargo bench --bench serve -- --clients 1,8,64 --seconds 3
//! cargo bench --bench serve -- --telemetry traces
//! cargo test  --workspace --bench serve -- --bench --telemetry off,traces --seconds 5
//! cargo test  --workspace --bench serve -- --bench --auth none,jwt,policy --rounds 40 --seconds 2
//! ```
//!
//! `--telemetry MODE` sets what every `toolhost serve` records
//! (`[telemetry]`, docs/deploy.md): `off` (no metrics, no traces: the
//! call path without telemetry), `metrics` (the default: counted, served
//! at `/metrics`), `traces` (metrics, and spans exported over OTLP/HTTP to
//! a sink on loopback that takes them and drops them). A list of modes
//! (`--telemetry off,traces`) runs only the HTTP rows (8 clients unless
//! `--clients` says otherwise), for each mode in turn over `--rounds N`
//! (default 7) alternating rounds (each round starts with the next mode),
//! and prints each mode's median against the first mode's, and the median
//! of each round's ratio to the first mode's run of the same round (which
//! the machine's drift over the run moves less; a round's ratio varies by
//! ±15% on a 2-core VM, hence the many rounds), with the floor for
//! exported traces by both. Each round also
//! times 8 callers in this process on a registry that records what the
//! mode says (metrics, spans exported to the same sink): the telemetry's
//! own CPU per call, without loopback TCP and without the server's threads
//! and its clients' taking turns on the cores.
//!
//! `--auth none,jwt,policy` (module `auth`) runs only the HTTP rows (8
//! clients unless `--clients` says otherwise) for each access mode of
//! `serve --http` in alternating rounds, as a `--telemetry` list does
//! (`--rounds N`, default 7; at the one `--telemetry` mode given, default
//! metrics): `none` (no `[auth]`), `jwt` (`[auth]`: every request's ES256
//! access token verified against a JWKS the bench serves on loopback) and
//! `policy` (`[auth]` and an `[[auth.rules]]` that admits every call, its
//! rate, concurrency cap and fuel and wall-time quota far above what the
//! run uses, so that every check runs and none refuses). The bench signs
//! one token per client; every client sends its `Authorization` header in
//! every mode, so that the requests are the same bytes. Before the rounds
//! it checks that each mode's server is what it says (a request without a
//! token refused with `401` under `[auth]`, a tool outside the rule
//! refused by the rule under the policy). It prints each mode's medians,
//! the same-round ratios jwt / none (what verifying a token costs) and
//! policy / jwt (what the policy adds), and issue 39's floor: the policy
//! costs at most 5% of a plain call's server CPU at 8 clients. Each round
//! also times both checks in this process, on one thread, built from the
//! same config (each check's own CPU, without the server around it).
//!
//! The MCP client here is deliberately thin (newline-delimited JSON-RPC on
//! stdio; HTTP/1.1 keep-alive written by hand, one connection and one MCP
//! session per client) so that, on a machine where client and server share
//! the cores, the figures are the server's and not a client library's.
//!
//! It prints the floors the project holds `serve` to and whether this run
//! met them; it exits non-zero only if a call failed. Beside each floor it
//! prints what the machine allows (module `floor`): the same clients
//! served over the same transports by a server that answers with a canned
//! answer and does nothing else (the transport's own cost), and by one
//! that makes the call in a registry and answers with its output, with
//! none of `serve`'s layers between (the transport and the call): no
//! server that runs the call can go below the second. Needs the bundled
//! plugins: it runs `plugins/build.sh rust` if `text.wasm` is missing.
//!
//! `--baseline PATH` names an earlier `toolhost` binary (built from an
//! older commit): the bench then runs only the HTTP rows (8 clients unless
//! `--clients` says otherwise) and the stdio round trip, this build's
//! server and the baseline's in alternating rounds (`--rounds N`, default
//! 5) on the `text` plugin, each at its default telemetry and with a
//! compile cache of its own (this build with `--wait-for-plugins`; flags
//! for the baseline's `serve` in `--baseline-serve-flags "..."`), and prints
//! each one's median and this build's against the baseline's: issue 22's
//! "calls/s at least 3x today's", measured in one run (today's: commit
//! d7b78aa, the last before work on the issue began). A build from before
//! plugin contract 0.2 cannot load today's plugins: `--baseline-plugins
//! DIR` gives it `text.wasm` (and `text.toml`) built at its own commit
//! (`plugins/build.sh rust` in a checkout of it).
//!
//! `--wassette PATH` adds the same rows for microsoft/wassette (a peer MCP
//! server for WebAssembly components, `wassette run` / `wassette serve
//! --streamable-http`) running the very same `text.wasm`: wassette offers
//! the component's exported `call` function as the MCP tool
//! `toolhost_plugin_tool_0_1_0_call`, so both servers run the same guest
//! code for every call. Nothing of wassette is part of this repository:
//! bring your own binary (docs/benchmarks.md (beside wassette) says how this comparison was run).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CallContext, Observability, ToolRegistry};

mod auth;
#[path = "../../benches/common/mod.rs"]
mod common;
mod floor;

/// The in-process rows allocate as `toolhost serve` does (the binary runs
/// on mimalloc), so the ratios compare the transports, not the allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The tool call every row makes.
const TOOL: &str = "text_stats";
const TEXT: &str = "The quick brown fox jumps over the lazy dog. Twice!";

/// The most CPU the HTTP server may spend per call (8 clients), as a
/// multiple of the same call's CPU in process (8 callers).
const HTTP_CPU_FLOOR: f64 = 2.5;

/// Calls/s with 8 HTTP clients when issue 22 was filed (the best of its
/// five runs), and the multiple of it the server must reach.
const HTTP_8_BASELINE: f64 = 8_700.0;
/// The commit that build was made from, for `--baseline`.
const ISSUE_22_BUILD: &str = "d7b78aa";
const HTTP_RATE_FLOOR: f64 = 3.0;

/// With traces exported, calls/s and server CPU per call with 8 HTTP
/// clients within this fraction of telemetry off (issue 26).
const TRACES_FLOOR: f64 = 0.15;

/// A latency row stops at its number of calls or after this long, whichever
/// comes first: a server that stalls on every call (a peer's 40 ms
/// delayed-ACK wait) still gets a row, from fewer calls.
const LATENCY_BUDGET: Duration = Duration::from_secs(20);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if floor::serve_if_asked(&args) {
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let clients: Vec<usize> = flag("--clients").map_or_else(
        || vec![1, 8, 64],
        |list| {
            list.split(',')
                .map(|n| {
                    n.trim()
                        .parse()
                        .expect("--clients takes numbers like 1,8,64")
                })
                .collect()
        },
    );
    let seconds: f64 = flag("--seconds").map_or(if full { 3.0 } else { 0.3 }, |s| {
        s.parse().expect("--seconds N")
    });
    let calls = if full { 20_000 } else { 50 };
    let wassette = flag("--wassette").map(PathBuf::from);
    let telemetry = flag("--telemetry").unwrap_or_else(|| "metrics".to_owned());
    let modes: Vec<Telemetry> = telemetry
        .split(',')
        .map(|mode| match mode.trim() {
            "off" => Telemetry::Off,
            "metrics" => Telemetry::Metrics,
            "traces" => Telemetry::Traces,
            other => panic!("--telemetry takes off, metrics or traces (or a list), not `{other}`"),
        })
        .collect();
    let config = tempfile::tempdir().unwrap();
    let sink = modes.contains(&Telemetry::Traces).then(otlp_sink);
    let modes: Vec<(Telemetry, TelemetrySetup)> = modes
        .into_iter()
        .map(|mode| (mode, mode.setup(config.path(), sink.as_deref())))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_owned();
    let built = root.join("target/plugins");
    common::ensure_rust_plugins(&root, &[&built.join("text.wasm")]);
    // Only the one plugin, so that `serve` starts fast and lists one tool.
    let plugins = tempfile::tempdir().unwrap();
    for file in ["text.wasm", "text.toml"] {
        if built.join(file).is_file() {
            std::fs::copy(built.join(file), plugins.path().join(file)).unwrap();
        }
    }
    let cache = tempfile::tempdir().unwrap();
    let components = tempfile::tempdir().unwrap();
    let mut setup = Setup {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_toolhost")),
        serve_flags: vec!["--wait-for-plugins".to_owned()],
        plugins: plugins.path().to_owned(),
        cache: cache.path().to_owned(),
        telemetry: modes[0].1.clone(),
        wassette: wassette.map(|binary| {
            Wassette::install(binary, &plugins.path().join("text.wasm"), components.path())
        }),
        floor: None,
        tokens: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let window = Duration::from_secs_f64(seconds);
    if let Some(binary) = flag("--baseline") {
        let clients = flag("--clients").map_or(vec![8], |_| clients);
        let rounds = flag("--rounds").map_or(5, |n| n.parse().expect("--rounds N"));
        let baseline_cache = tempfile::tempdir().unwrap();
        let baseline_plugins = tempfile::tempdir().unwrap();
        let from = flag("--baseline-plugins").map_or_else(|| built.clone(), PathBuf::from);
        for file in ["text.wasm", "text.toml"] {
            if from.join(file).is_file() {
                std::fs::copy(from.join(file), baseline_plugins.path().join(file)).unwrap();
            }
        }
        let baseline = Setup {
            binary: PathBuf::from(binary),
            // An earlier build may not know this build's flags; one that
            // does not compiles every plugin before it answers anyway.
            serve_flags: flag("--baseline-serve-flags")
                .map(|flags| flags.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            plugins: baseline_plugins.path().to_owned(),
            cache: baseline_cache.path().to_owned(),
            telemetry: TelemetrySetup {
                otlp: None,
                config: None,
            },
            wassette: None,
            floor: None,
            tokens: Vec::new(),
        };
        rt.block_on(compare_builds(
            &setup, &baseline, &clients, rounds, window, calls,
        ));
        return;
    }
    if let Some(list) = flag("--auth") {
        assert_eq!(modes.len(), 1, "--auth takes one --telemetry mode");
        let clients = flag("--clients").map_or(vec![8], |_| clients);
        let rounds = flag("--rounds").map_or(7, |n| n.parse().expect("--rounds N"));
        rt.block_on(auth::compare(
            &mut setup,
            &list,
            &modes[0],
            config.path(),
            &clients,
            rounds,
            window,
        ));
        return;
    }
    if modes.len() > 1 {
        let clients = flag("--clients").map_or(vec![8], |_| clients);
        let rounds = flag("--rounds").map_or(7, |n| n.parse().expect("--rounds N"));
        rt.block_on(compare_telemetry(
            &mut setup, &modes, &clients, rounds, window,
        ));
        return;
    }
    println!(
        "serve bench: `{TOOL}` per call; {calls} calls (at most {} s) per latency row, {seconds} s \
         per throughput row, {} cores shared by client and server; telemetry: {telemetry}",
        LATENCY_BUDGET.as_secs(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let local = rt.block_on(in_process_rows(&setup, calls, window));
    let (in_process, in_process_8) = (&local.latencies, local.rate_8);
    let (stdio, stdio_cpu) = stdio_round_trips(&setup, Peer::Toolhost, calls);
    let http = rt.block_on(http_rows(&setup, Peer::Toolhost, &clients, calls, window));
    setup.floor = Some(rt.block_on(tool_result(&setup)));
    let floor_stdio = stdio_round_trips(&setup, Peer::Floor, calls);
    let floor_stdio_call = stdio_round_trips(&setup, Peer::FloorCall, calls);
    let floor_http = rt.block_on(http_rows(&setup, Peer::Floor, &clients, calls, window));
    let floor_call = rt.block_on(http_rows(&setup, Peer::FloorCall, &clients, calls, window));
    let peer = setup.wassette.as_ref().map(|_| {
        let stdio = stdio_round_trips(&setup, Peer::Wassette, calls);
        let http = rt.block_on(http_rows(&setup, Peer::Wassette, &clients, calls, window));
        (stdio, http)
    });

    println!();
    println!("| path | clients | p50 | p99 | calls/s | CPU per call |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let one = |d: &[Duration]| 1.0 / percentile(d, 0.5).as_secs_f64();
    let cpu = |d: Option<Duration>| d.map(fmt).unwrap_or_default();
    println!(
        "| in process (`ToolRegistry::call`) | 1 | {} | {} | {:.0} | |",
        fmt(percentile(in_process, 0.5)),
        fmt(percentile(in_process, 0.99)),
        one(in_process)
    );
    println!(
        "| in process (`ToolRegistry::call`) | 8 | | | {in_process_8:.0} | {} |",
        cpu(local.cpu)
    );
    let stdio_row = |label: &str, latencies: &[Duration], server: Option<Duration>| {
        println!(
            "| {label} | 1 | {} | {} | {:.0} | {} (server) |",
            fmt(percentile(latencies, 0.5)),
            fmt(percentile(latencies, 0.99)),
            one(latencies),
            cpu(server)
        );
    };
    stdio_row("MCP over stdio (`toolhost serve`)", &stdio, stdio_cpu);
    let http_table = |label: &str, rows: &[HttpRow]| {
        for row in rows {
            let (p50, p99) = match &row.latencies {
                Some(l) => (fmt(percentile(l, 0.5)), fmt(percentile(l, 0.99))),
                None => (String::new(), String::new()),
            };
            println!(
                "| {label} | {} | {p50} | {p99} | {:.0} | {} (server) |",
                row.clients,
                row.per_second,
                cpu(row.cpu)
            );
        }
    };
    http_table("MCP over HTTP (`toolhost serve --http`)", &http);
    stdio_row(
        "transport floor over stdio (a canned answer: no MCP, no guest)",
        &floor_stdio.0,
        floor_stdio.1,
    );
    stdio_row(
        "transport and call over stdio (the call in a registry, none of `serve` between)",
        &floor_stdio_call.0,
        floor_stdio_call.1,
    );
    http_table(
        "transport floor over HTTP (a canned answer: no HTTP library, no MCP, no guest)",
        &floor_http,
    );
    http_table(
        "transport and call over HTTP (the call in a registry, none of `serve` between)",
        &floor_call,
    );
    if let Some((peer_stdio_row, peer_http)) = &peer {
        let peer_stdio = &peer_stdio_row.0;
        stdio_row(
            "wassette over stdio (`wassette run`)",
            peer_stdio,
            peer_stdio_row.1,
        );
        http_table(
            "wassette over HTTP (`wassette serve --streamable-http`)",
            peer_http,
        );
        println!();
        println!(
            "toolhost / wassette, same component: stdio p50 {:.2}x the time",
            percentile(&stdio, 0.5).as_secs_f64() / percentile(peer_stdio, 0.5).as_secs_f64()
        );
        for (ours, theirs) in http.iter().zip(peer_http) {
            println!(
                "toolhost / wassette, same component: HTTP with {} clients {:.2}x the calls/s",
                ours.clients,
                ours.per_second / theirs.per_second
            );
        }
    }

    println!();
    let in_p50 = percentile(in_process, 0.5);
    let stdio_p50 = percentile(&stdio, 0.5);
    let stdio_floor = in_p50 * 3 + Duration::from_micros(50);
    println!(
        "floor: stdio round trip p50 <= 3 x in-process p50 + 50 us: {} <= {} -> {} ({:.2}x in process)",
        fmt(stdio_p50),
        fmt(stdio_floor),
        verdict(stdio_p50 <= stdio_floor),
        stdio_p50.as_secs_f64() / in_p50.as_secs_f64()
    );
    let pipes = percentile(&floor_stdio.0, 0.5);
    println!(
        "  the transport alone (a server answering over the same pipes without any work): p50 {}; \
         the floor leaves {} for MCP and the call{}",
        fmt(pipes),
        fmt(stdio_floor.saturating_sub(pipes)),
        if pipes >= stdio_floor {
            " (none: below what the pipes alone take on this machine)"
        } else {
            ""
        }
    );
    let bare = percentile(&floor_stdio_call.0, 0.5);
    println!(
        "  the transport and the call, with none of `serve` between: p50 {} ({}); `serve`'s own \
         layers add {}",
        fmt(bare),
        verdict(bare <= stdio_floor),
        fmt(stdio_p50.saturating_sub(bare))
    );
    if let Some(eight) = http.iter().find(|r| r.clients == 8) {
        if let (Some(server), Some(local)) = (eight.cpu, local.cpu) {
            let ratio = server.as_secs_f64() / local.as_secs_f64();
            println!(
                "floor: HTTP server CPU per call (8 clients) <= {HTTP_CPU_FLOOR} x in-process CPU \
                 per call (8 callers): {} / {} = {ratio:.2}x -> {}",
                fmt(server),
                fmt(local),
                verdict(ratio <= HTTP_CPU_FLOOR)
            );
            if let Some(transport) = floor_http
                .iter()
                .find(|r| r.clients == 8)
                .and_then(|r| r.cpu)
            {
                let allowed = local.mul_f64(HTTP_CPU_FLOOR);
                println!(
                    "  the transport alone (a server answering the same 8 clients without any work) \
                     spends {} per call ({:.2}x in process): the floor leaves {} for HTTP, MCP and \
                     the call, which takes {} in process; this server spends {} on top of the \
                     transport",
                    fmt(transport),
                    transport.as_secs_f64() / local.as_secs_f64(),
                    fmt(allowed.saturating_sub(transport)),
                    fmt(local),
                    fmt(server.saturating_sub(transport))
                );
            }
            if let Some(bare) = floor_call
                .iter()
                .find(|r| r.clients == 8)
                .and_then(|r| r.cpu)
            {
                println!(
                    "  the transport and the call, with none of `serve` between, spend {} per call \
                     ({:.2}x in process: {}): `serve`'s own layers cost {} per call",
                    fmt(bare),
                    bare.as_secs_f64() / local.as_secs_f64(),
                    verdict(bare.as_secs_f64() / local.as_secs_f64() <= HTTP_CPU_FLOOR),
                    fmt(server.saturating_sub(bare))
                );
            }
        }
        let ratio = eight.per_second / HTTP_8_BASELINE;
        println!(
            "floor: HTTP with 8 clients >= {HTTP_RATE_FLOOR} x the {HTTP_8_BASELINE:.0} calls/s \
             recorded in issue 22: {:.0} calls/s = {ratio:.2}x -> {} ({:.2}x the in-process rate \
             with 8 callers; calls/s follow the machine's load, the CPU ratio much less)",
            eight.per_second,
            verdict(ratio >= HTTP_RATE_FLOOR),
            eight.per_second / in_process_8
        );
        if let Some(transport) = floor_http.iter().find(|r| r.clients == 8) {
            println!(
                "  the transport alone answers {:.0} calls/s to the same 8 clients: {:.0} calls/s \
                 (the floor) is {:.0}% of it, this server {:.0}%",
                transport.per_second,
                HTTP_8_BASELINE * HTTP_RATE_FLOOR,
                HTTP_8_BASELINE * HTTP_RATE_FLOOR / transport.per_second * 100.0,
                eight.per_second / transport.per_second * 100.0
            );
        }
        if let Some(bare) = floor_call.iter().find(|r| r.clients == 8) {
            println!(
                "  the transport and the call, with none of `serve` between, answer {:.0} calls/s \
                 to the same 8 clients ({:.2}x the {HTTP_8_BASELINE:.0}: {})",
                bare.per_second,
                bare.per_second / HTTP_8_BASELINE,
                verdict(bare.per_second / HTTP_8_BASELINE >= HTTP_RATE_FLOOR)
            );
        }
    }
    let failed: u64 = http
        .iter()
        .chain(&floor_http)
        .chain(&floor_call)
        .chain(peer.iter().flat_map(|(_, rows)| rows))
        .map(|r| r.errors)
        .sum();
    if failed > 0 {
        eprintln!("{failed} HTTP calls failed");
        std::process::exit(1);
    }
}

struct Setup {
    /// The `toolhost` binary that serves: this build's, or `--baseline`'s.
    binary: PathBuf,
    /// Flags `serve` takes from this binary on (`--wait-for-plugins`:
    /// every row measures a server with its tools listed).
    serve_flags: Vec<String>,
    plugins: PathBuf,
    cache: PathBuf,
    /// What `serve` records, the mode of these rows.
    telemetry: TelemetrySetup,
    wassette: Option<Wassette>,
    /// The `tools/call` result the floor server answers with (the full
    /// run's, taken from a call in process).
    floor: Option<String>,
    /// Bearer tokens the HTTP clients send (client `i` the `i`-th, round
    /// robin); none: no `Authorization` header (`--auth`).
    tokens: Vec<String>,
}

/// What every `toolhost serve` of a run records (`--telemetry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Telemetry {
    /// No metrics, no traces.
    Off,
    /// Counted, served at `/metrics` (the default).
    Metrics,
    /// Metrics, and spans exported over OTLP/HTTP to a loopback sink.
    Traces,
}

impl Telemetry {
    fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Metrics => "metrics",
            Self::Traces => "traces",
        }
    }

    /// The config file and exporter endpoint `serve` gets in this mode.
    fn setup(self, dir: &Path, sink: Option<&str>) -> TelemetrySetup {
        let config = (self == Self::Off).then(|| {
            let file = dir.join("telemetry-off.toml");
            std::fs::write(&file, "[telemetry]\nmetrics = false\n").unwrap();
            file
        });
        TelemetrySetup {
            otlp: (self == Self::Traces).then(|| sink.expect("a sink for traces").to_owned()),
            config,
        }
    }
}

#[derive(Debug, Clone)]
struct TelemetrySetup {
    /// Where `serve` exports its spans (`traces`).
    otlp: Option<String>,
    /// The host config `serve` reads (`off`).
    config: Option<PathBuf>,
}

/// Telemetry modes side by side in one run: the HTTP rows of each, in
/// alternating rounds (so a machine that gets busier or quieter weighs on
/// every mode alike), each mode's median round, and each mode's cost
/// against the first one's.
async fn compare_telemetry(
    setup: &mut Setup,
    modes: &[(Telemetry, TelemetrySetup)],
    clients: &[usize],
    rounds: usize,
    window: Duration,
) {
    println!(
        "serve bench, telemetry side by side: `{TOOL}` over HTTP, {rounds} alternating rounds of \
         {} s per mode and client count, {} cores shared by client, server and trace sink",
        window.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // results[mode][client row] = (calls/s, CPU per call) of each round;
    // in_process[mode] = the same for 8 callers in this process.
    let mut results = vec![vec![Vec::new(); clients.len()]; modes.len()];
    let mut in_process = vec![Vec::new(); modes.len()];
    let mut registries = Vec::new();
    for (mode, telemetry) in modes {
        registries.push(in_process_registry(setup, *mode, telemetry).await);
    }
    for round in 0..rounds {
        // Rotate which mode goes first, so that none always runs right
        // after another's server (its exporter, its exit) or first.
        for i in 0..modes.len() {
            let m = (i + round) % modes.len();
            let (mode, telemetry) = &modes[m];
            let (rate, cpu) = eight_callers(&registries[m].0, window).await;
            eprintln!(
                "round {}: {} in process, 8 callers: {rate:.0} calls/s, {} per call",
                round + 1,
                mode.name(),
                cpu.map(fmt).unwrap_or_default()
            );
            in_process[m].push((rate, cpu.unwrap_or_default()));
            setup.telemetry = telemetry.clone();
            http_round(setup, clients, window, round, mode.name(), &mut results[m]).await;
        }
    }
    println!();
    println!(
        "| telemetry | clients | calls/s (median) | server CPU per call (median) | calls/s vs {} | CPU vs {} |",
        modes[0].0.name(),
        modes[0].0.name()
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut base = vec![(0.0, 0.0); clients.len()];
    let mut verdicts = Vec::new();
    for (m, (mode, _)) in modes.iter().enumerate() {
        for (c, &n) in clients.iter().enumerate() {
            let rate = median(results[m][c].iter().map(|r| r.0).collect());
            let cpu = median(results[m][c].iter().map(|r| r.1.as_secs_f64()).collect());
            if m == 0 {
                base[c] = (rate, cpu);
            }
            let (rate_ratio, cpu_ratio) = (rate / base[c].0, cpu / base[c].1);
            println!(
                "| {} | {n} | {rate:.0} | {} | {rate_ratio:.3}x | {cpu_ratio:.3}x |",
                mode.name(),
                fmt(Duration::from_secs_f64(cpu))
            );
            if *mode == Telemetry::Traces && n == 8 && modes[0].0 == Telemetry::Off {
                verdicts.push((
                    (rate_ratio, cpu_ratio),
                    paired(&results[m][c], &results[0][c]),
                ));
            }
        }
    }
    // Each mode's round against the first mode's in the same round (the
    // two ran minutes apart at most, on the same machine state): the
    // machine's drift over the run, which moves both, cancels out.
    if modes.len() > 1 {
        println!();
        println!(
            "| telemetry | clients | calls/s vs {0}, same round (median, min-max) | CPU vs {0}, same round (median, min-max) |",
            modes[0].0.name()
        );
        println!("| --- | ---: | ---: | ---: |");
        for (m, (mode, _)) in modes.iter().enumerate().skip(1) {
            for (c, &n) in clients.iter().enumerate() {
                let (rate, cpu) = paired(&results[m][c], &results[0][c]);
                println!("| {} | {n} | {rate} | {cpu} |", mode.name());
            }
        }
    }
    // The telemetry's own cost, without loopback TCP and without a server
    // and its clients sharing the cores (the trace sink still does).
    println!();
    println!(
        "| telemetry | in process, 8 callers | calls/s (median) | CPU per call (median) | CPU vs {} |",
        modes[0].0.name()
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut base_cpu = 0.0;
    for (m, (mode, _)) in modes.iter().enumerate() {
        let rate = median(in_process[m].iter().map(|r| r.0).collect());
        let cpu = median(in_process[m].iter().map(|r| r.1.as_secs_f64()).collect());
        if m == 0 {
            base_cpu = cpu;
        }
        println!(
            "| {} | 8 | {rate:.0} | {} | {:.3}x ({:+.1} µs) |",
            mode.name(),
            fmt(Duration::from_secs_f64(cpu)),
            cpu / base_cpu,
            (cpu - base_cpu) * 1e6
        );
    }
    drop(registries);
    println!();
    let within = |rate: f64, cpu: f64| rate >= 1.0 - TRACES_FLOOR && cpu <= 1.0 + TRACES_FLOOR;
    for ((rate, cpu), (paired_rate, paired_cpu)) in verdicts {
        let (paired_rate, paired_cpu) = (paired_rate.median, paired_cpu.median);
        println!(
            "floor: traces exported, 8 HTTP clients, within {:.0}% of telemetry off: calls/s {:+.1}%, \
             server CPU per call {:+.1}% -> {} (medians of each mode's rounds); calls/s {:+.1}%, \
             server CPU per call {:+.1}% -> {} (median of the same round's ratios)",
            TRACES_FLOOR * 100.0,
            (rate - 1.0) * 100.0,
            (cpu - 1.0) * 100.0,
            verdict(within(rate, cpu)),
            (paired_rate - 1.0) * 100.0,
            (paired_cpu - 1.0) * 100.0,
            verdict(within(paired_rate, paired_cpu))
        );
    }
}

/// A ratio over rounds: the median and the range.
#[derive(Clone, Copy)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    fn of(ratios: Vec<f64>) -> Self {
        Self {
            min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median: median(ratios),
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.3}x ({:.3}-{:.3})", self.median, self.min, self.max)
    }
}

/// The ratios of `rows` to `base`, round by round: calls/s, CPU per call.
fn paired(rows: &[(f64, Duration)], base: &[(f64, Duration)]) -> (Spread, Spread) {
    let pairs = || rows.iter().zip(base);
    (
        Spread::of(pairs().map(|(r, b)| r.0 / b.0).collect()),
        Spread::of(
            pairs()
                .map(|(r, b)| r.1.as_secs_f64() / b.1.as_secs_f64())
                .collect(),
        ),
    )
}

/// One round of `setup`'s HTTP rows: each row's calls/s and server CPU
/// per call added to `results` (a list per client count).
async fn http_round(
    setup: &Setup,
    clients: &[usize],
    window: Duration,
    round: usize,
    label: &str,
    results: &mut [Vec<(f64, Duration)>],
) {
    let rows = http_rows(setup, Peer::Toolhost, clients, 0, window).await;
    for (c, row) in rows.iter().enumerate() {
        assert_eq!(row.errors, 0, "HTTP calls failed ({label})");
        eprintln!(
            "round {}: {label}, {} clients: {:.0} calls/s, {} per call",
            round + 1,
            row.clients,
            row.per_second,
            row.cpu.map(fmt).unwrap_or_default()
        );
        results[c].push((row.per_second, row.cpu.unwrap_or_default()));
    }
}

/// The median of `values` (the upper one of an even count).
/// Each row's median calls/s and server CPU per call (seconds) over its
/// rounds: `results[row][clients]` holds one `(calls/s, CPU per call)`
/// per round.
fn medians(results: &[Vec<Vec<(f64, Duration)>>]) -> Vec<Vec<(f64, f64)>> {
    results
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|rounds| {
                    (
                        median(rounds.iter().map(|r| r.0).collect()),
                        median(rounds.iter().map(|r| r.1.as_secs_f64()).collect()),
                    )
                })
                .collect()
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// This build's server against an earlier build's (`--baseline`): the
/// HTTP rows and the stdio round trip of each in alternating rounds, each
/// one's median round, and this build's against the baseline's.
async fn compare_builds(
    ours: &Setup,
    baseline: &Setup,
    clients: &[usize],
    rounds: usize,
    window: Duration,
    calls: usize,
) {
    println!(
        "serve bench, this build against {}: `{TOOL}` over HTTP and stdio, {rounds} alternating \
         rounds of {} s per build and client count and {calls} stdio calls, {} cores shared by \
         client and server",
        baseline.binary.display(),
        window.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let builds = [("this build", ours), ("baseline", baseline)];
    // results[build][client row] = (calls/s, CPU per call) of each round.
    let mut results = vec![vec![Vec::new(); clients.len()]; builds.len()];
    // stdio[build] = (p50 round trip, CPU per call) of each round.
    let mut stdio = vec![Vec::new(); builds.len()];
    for round in 0..rounds {
        // Alternate which build goes first, so neither always runs on a
        // machine the other just warmed (or loaded).
        for b in 0..builds.len() {
            let b = (b + round) % builds.len();
            let (name, setup) = builds[b];
            http_round(setup, clients, window, round, name, &mut results[b]).await;
            let (latencies, cpu) =
                tokio::task::block_in_place(|| stdio_round_trips(setup, Peer::Toolhost, calls));
            let p50 = percentile(&latencies, 0.5);
            println!(
                "round {}, {name}: stdio p50 {}, server CPU per call {}",
                round + 1,
                fmt(p50),
                cpu.map_or_else(|| "-".to_owned(), fmt)
            );
            stdio[b].push((p50, cpu.unwrap_or_default()));
        }
    }
    println!();
    println!(
        "| build | clients | calls/s (median) | server CPU per call (median) | calls/s vs baseline | CPU vs baseline |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let medians = medians(&results);
    for (b, (name, _)) in builds.iter().enumerate() {
        for (c, &n) in clients.iter().enumerate() {
            let (rate, cpu) = medians[b][c];
            let (base_rate, base_cpu) = medians[1][c];
            println!(
                "| {name} | {n} | {rate:.0} | {} | {:.2}x | {:.2}x |",
                fmt(Duration::from_secs_f64(cpu)),
                rate / base_rate,
                cpu / base_cpu
            );
        }
    }
    println!();
    println!(
        "| build | stdio round trip p50 (median) | server CPU per call (median) | p50 vs baseline | CPU vs baseline |"
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    let stdio: Vec<(f64, f64)> = stdio
        .iter()
        .map(|rounds| {
            (
                median(rounds.iter().map(|r| r.0.as_secs_f64()).collect()),
                median(rounds.iter().map(|r| r.1.as_secs_f64()).collect()),
            )
        })
        .collect();
    for (b, (name, _)) in builds.iter().enumerate() {
        let ((p50, cpu), (base_p50, base_cpu)) = (stdio[b], stdio[1]);
        println!(
            "| {name} | {} | {} | {:.2}x | {:.2}x |",
            fmt(Duration::from_secs_f64(p50)),
            fmt(Duration::from_secs_f64(cpu)),
            p50 / base_p50,
            cpu / base_cpu
        );
    }
    println!();
    if let Some(c) = clients.iter().position(|&n| n == 8) {
        let ratio = medians[0][c].0 / medians[1][c].0;
        println!(
            "floor, if the baseline is the build issue 22 was filed against ({ISSUE_22_BUILD}): \
             HTTP with 8 clients >= {HTTP_RATE_FLOOR} x its calls/s: {ratio:.2}x -> {}",
            verdict(ratio >= HTTP_RATE_FLOOR)
        );
    }
}

/// An OTLP/HTTP endpoint on loopback that answers every export `200` and
/// drops it: `http://127.0.0.1:PORT`.
fn otlp_sink() -> String {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some(value) =
                            line.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err()
                        || writer
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                            .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    endpoint
}

/// Which MCP server a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Toolhost,
    Wassette,
    /// The transport floor (`floor`): a canned answer, no work.
    Floor,
    /// The transport and the call, with nothing of `serve` between.
    FloorCall,
}

/// A wassette binary and its component directory, holding `text.wasm`.
struct Wassette {
    binary: PathBuf,
    components: PathBuf,
}

impl Wassette {
    /// Load `component` into a component directory of its own (wassette
    /// compiles it there), before any clock starts.
    fn install(binary: PathBuf, component: &Path, components: &Path) -> Self {
        let wassette = Self {
            binary,
            components: components.to_owned(),
        };
        let status = wassette
            .command()
            .arg("component")
            .arg("load")
            .arg(format!("file://{}", component.display()))
            .arg("--component-dir")
            .arg(components)
            .stdout(Stdio::null())
            .status()
            .expect("the --wassette binary runs");
        assert!(status.success(), "wassette component load failed: {status}");
        wassette
    }

    /// The binary, logging only errors (as `serve -q` does for ours).
    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command.env("RUST_LOG", "error").stderr(Stdio::null());
        command
    }

    /// `wassette SUBCOMMAND` serving the component directory, and nothing
    /// else (no built-in tools).
    fn serve(&self, subcommand: &str) -> Command {
        let mut command = self.command();
        command
            .arg(subcommand)
            .arg("--component-dir")
            .arg(&self.components)
            .arg("--disable-builtin-tools");
        command
    }
}

impl Setup {
    /// The stdio server `peer`, not yet started.
    fn stdio_command(&self, peer: Peer) -> Command {
        let mut command = match peer {
            Peer::Toolhost => {
                let mut command = self.serve(&[]);
                command.stderr(Stdio::inherit());
                command
            }
            Peer::Wassette => self.wassette().serve("run"),
            Peer::Floor => self.floor("stdio"),
            Peer::FloorCall => self.floor("stdio-call"),
        };
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        command
    }

    /// The floor server on `transport`, answering with this run's answer.
    fn floor(&self, transport: &str) -> Command {
        let mut command = Command::new(std::env::current_exe().expect("the bench's own path"));
        command.arg(floor::FLAG).arg(transport);
        if transport.ends_with("-call") {
            command.arg(&self.plugins).arg(&self.cache);
        } else {
            command.arg(self.floor.as_deref().expect("the floor's answer"));
        }
        command
    }

    /// The bearer token HTTP client `i` sends, if any.
    fn token(&self, i: usize) -> Option<String> {
        (!self.tokens.is_empty()).then(|| self.tokens[i % self.tokens.len()].clone())
    }

    fn wassette(&self) -> &Wassette {
        self.wassette.as_ref().expect("--wassette PATH was given")
    }

    /// `toolhost serve` on these plugins, with `extra` flags.
    fn serve(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg("serve")
            .arg("--plugins")
            .arg(&self.plugins)
            .arg("--cache-dir")
            .arg(&self.cache)
            .arg("-q")
            .args(&self.serve_flags)
            .args(extra)
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("TOOLHOST_LOCK")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
        if let Some(endpoint) = &self.telemetry.otlp {
            command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
        }
        if let Some(config) = &self.telemetry.config {
            command.arg("--config").arg(config);
        }
        command
    }
}

fn input() -> Value {
    json!({ "text": TEXT })
}

/// A registry of the bundled `text` plugin, recording nothing.
async fn text_registry(setup: &Setup, observability: Observability) -> ToolRegistry {
    let host = PluginHost::new(HostConfig {
        cache_dir: Some(setup.cache.clone()),
        ..HostConfig::default()
    })
    .unwrap();
    let registry = ToolRegistry::new().observed(observability);
    common::register_plugins(&host, &setup.plugins, &["text"], &registry).await;
    registry
}

/// The MCP `tools/call` result of one call in process, for the floor
/// server to answer with: the same bytes `serve` sends, give or take.
async fn tool_result(setup: &Setup) -> String {
    let registry = text_registry(setup, Observability::new()).await;
    let output = registry
        .call(TOOL, input(), &CallContext::default())
        .await
        .output
        .unwrap();
    json!({
        "content": [{"type": "text", "text": output.to_string()}],
        "structuredContent": output,
        "isError": false
    })
    .to_string()
}

/// The same call through the library: one caller's latencies, and the
/// rate of 8 concurrent callers.
async fn in_process_rows(setup: &Setup, calls: usize, window: Duration) -> InProcess {
    let registry = text_registry(setup, Observability::new()).await;
    let registry = Arc::new(registry);
    let cx = CallContext::default();
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls + calls / 10 {
        let start = Instant::now();
        registry.call(TOOL, input(), &cx).await.output.unwrap();
        if i >= calls / 10 {
            samples.push(start.elapsed());
        }
    }
    samples.sort();
    let (rate, cpu) = eight_callers(&registry, window).await;
    InProcess {
        latencies: samples,
        rate_8: rate,
        cpu,
    }
}

/// 8 callers calling [`TOOL`] on `registry` back to back for `window`:
/// calls/s and this process's CPU per call.
async fn eight_callers(registry: &Arc<ToolRegistry>, window: Duration) -> (f64, Option<Duration>) {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (registry, done, stop) = (Arc::clone(registry), done.clone(), stop.clone());
            tokio::spawn(async move {
                let cx = CallContext::default();
                while !stop.load(Ordering::Relaxed) {
                    registry.call(TOOL, input(), &cx).await.output.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    let cpu_before = cpu_time("self");
    tokio::time::sleep(window).await;
    stop.store(true, Ordering::Relaxed);
    let counted = done.load(Ordering::Relaxed);
    let cpu = per_call(cpu_before, cpu_time("self"), counted);
    let rate = counted as f64 / start.elapsed().as_secs_f64();
    for task in tasks {
        task.await.unwrap();
    }
    (rate, cpu)
}

/// A registry of the `text` plugin for in-process rows, recording what
/// `telemetry` says `serve` records: metrics unless off, and spans
/// exported to its sink for traces (the tracer provider comes back, to
/// keep while the registry is used).
async fn in_process_registry(
    setup: &Setup,
    mode: Telemetry,
    telemetry: &TelemetrySetup,
) -> (
    Arc<ToolRegistry>,
    Option<opentelemetry_sdk::trace::SdkTracerProvider>,
) {
    use opentelemetry::trace::TracerProvider as _;
    let mut observability = Observability::new();
    if mode != Telemetry::Off {
        observability = observability.metrics(toolhost::telemetry::Metrics::new());
    }
    let provider = telemetry.otlp.as_ref().map(|endpoint| {
        let config = toolhost::telemetry::TelemetryConfig {
            endpoint: Some(endpoint.clone()),
            ..toolhost::telemetry::TelemetryConfig::default()
        };
        toolhost::telemetry::tracer_provider(&config)
            .expect("a tracer provider")
            .expect("an endpoint")
    });
    if let Some(provider) = &provider {
        observability = observability.tracer(provider.tracer("toolhost"));
    }
    let registry = text_registry(setup, observability).await;
    (Arc::new(registry), provider)
}

/// Whether call `i` of a latency row begun at `began` is past the warm-up:
/// the first tenth of its calls, or of [`LATENCY_BUDGET`].
fn warmed_up(i: usize, calls: usize, began: Instant) -> bool {
    i >= calls / 10 || began.elapsed() > LATENCY_BUDGET / 10
}

/// The in-process rows.
struct InProcess {
    latencies: Vec<Duration>,
    /// Calls/s with 8 callers.
    rate_8: f64,
    /// CPU per call with 8 callers.
    cpu: Option<Duration>,
}

/// A `toolhost serve` process on stdio; killed when dropped.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioServer {
    fn start(setup: &Setup, peer: Peer) -> Self {
        let mut child = setup
            .stdio_command(peer)
            .spawn()
            .expect("the MCP server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        };
        server.request(0, &initialize(0));
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send(&mut self, message: &str) {
        self.stdin.write_all(message.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request; its response (skipping anything else the server
    /// sends meanwhile).
    fn request(&mut self, id: u64, message: &str) -> Value {
        self.send(message);
        loop {
            self.line.clear();
            let read = self.stdout.read_line(&mut self.line).unwrap();
            assert!(read > 0, "the MCP server closed stdout");
            let value: Value = serde_json::from_str(&self.line).expect("a JSON-RPC line");
            if value["id"] == id {
                return value;
            }
        }
    }
}

fn initialize(id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "serve-bench", "version": "0"}
        }
    })
    .to_string()
}

/// The `tools/call` request for one `text_stats` call. wassette offers
/// the component's `call(name, input)` export as a tool of its own.
fn call_request(peer: Peer, id: u64) -> String {
    let params = match peer {
        Peer::Toolhost | Peer::Floor | Peer::FloorCall => {
            json!({"name": TOOL, "arguments": input()})
        }
        Peer::Wassette => json!({
            "name": "toolhost_plugin_tool_0_1_0_call",
            "arguments": {"name": TOOL, "input": input().to_string()}
        }),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// A successful `text_stats` answer, or why not.
fn check_answer(peer: Peer, response: &Value) -> Result<(), String> {
    let result = &response["result"];
    let output = match peer {
        Peer::Toolhost | Peer::Floor | Peer::FloorCall => result["structuredContent"].clone(),
        // The export's `result<string, tool-error>`: the JSON text in `ok`.
        Peer::Wassette => result["structuredContent"]["result"]["ok"]
            .as_str()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null),
    };
    let words = TEXT.split_whitespace().count();
    if result["isError"] == true || output["words"] != words {
        return Err(format!("unexpected answer: {response}"));
    }
    Ok(())
}

/// Round trips, and the server's CPU per call.
fn stdio_round_trips(setup: &Setup, peer: Peer, calls: usize) -> (Vec<Duration>, Option<Duration>) {
    let mut server = StdioServer::start(setup, peer);
    let pid = server.child.id().to_string();
    let cpu_before = cpu_time(&pid);
    let mut samples = Vec::with_capacity(calls);
    let mut made = 0;
    let began = Instant::now();
    for i in 0..calls + calls / 10 {
        if began.elapsed() > LATENCY_BUDGET {
            break;
        }
        made += 1;
        let id = i as u64 + 1;
        let message = call_request(peer, id);
        let start = Instant::now();
        let response = server.request(id, &message);
        let elapsed = start.elapsed();
        check_answer(peer, &response).unwrap();
        if warmed_up(i, calls, began) {
            samples.push(elapsed);
        }
    }
    let cpu = per_call(cpu_before, cpu_time(&pid), made);
    samples.sort();
    (samples, cpu)
}

struct HttpRow {
    clients: usize,
    per_second: f64,
    errors: u64,
    /// Round trips, for the one-client row.
    latencies: Option<Vec<Duration>>,
    /// The server's CPU per call.
    cpu: Option<Duration>,
}

/// An MCP server over HTTP (`toolhost serve --http`, `wassette serve
/// --streamable-http`); killed when dropped.
struct HttpServer {
    child: Child,
    addr: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    fn start(setup: &Setup, peer: Peer) -> Self {
        match peer {
            Peer::Wassette => return Self::start_wassette(setup.wassette()),
            Peer::Floor => return Self::start_floor(setup, "http"),
            Peer::FloorCall => return Self::start_floor(setup, "http-call"),
            Peer::Toolhost => {}
        }
        let mut child = setup
            .serve(&["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolhost serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("toolhost serve printed its address before exiting")
                .unwrap();
            if let Some(url) = line.strip_prefix("toolhost serve: listening on http://") {
                break url.trim_end_matches("/mcp").to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, addr }
    }

    /// The floor server prints its address on stdout.
    fn start_floor(setup: &Setup, transport: &str) -> Self {
        let mut child = setup
            .floor(transport)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the floor server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the floor server prints its address")
            .to_owned();
        Self { child, addr }
    }

    /// wassette prints no address: give it a free port, and wait until it
    /// accepts connections.
    fn start_wassette(wassette: &Wassette) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = wassette
            .serve("serve")
            .arg("--streamable-http")
            .arg("--bind-address")
            .arg(&addr)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("the --wassette binary runs");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "wassette did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, addr }
    }
}

async fn http_rows(
    setup: &Setup,
    peer: Peer,
    clients: &[usize],
    calls: usize,
    window: Duration,
) -> Vec<HttpRow> {
    let server = HttpServer::start(setup, peer);
    let pid = server.child.id().to_string();
    let mut rows = Vec::new();
    for &n in clients {
        // Open every client's session before the clock starts.
        let mut sessions = Vec::with_capacity(n);
        for i in 0..n {
            sessions.push(McpHttpClient::connect(&server.addr, peer, setup.token(i)).await);
        }
        if n == 1 {
            let mut client = sessions.pop().unwrap();
            let mut samples = Vec::with_capacity(calls);
            let mut errors = 0;
            let began = Instant::now();
            for i in 0..calls + calls / 10 {
                if began.elapsed() > LATENCY_BUDGET {
                    break;
                }
                let start = Instant::now();
                let answer = client.call(i as u64 + 10).await;
                let elapsed = start.elapsed();
                if let Err(e) = answer {
                    errors += 1;
                    eprintln!("HTTP call failed: {e}");
                }
                if warmed_up(i, calls, began) {
                    samples.push(elapsed);
                }
            }
            samples.sort();
            // The rate of this one client, over a window like the others.
            let mut row = drive(vec![client], window, &pid).await;
            row.errors += errors;
            row.latencies = Some(samples);
            rows.push(row);
        } else {
            rows.push(drive(sessions, window, &pid).await);
        }
    }
    rows
}

/// Every client calls back to back for `window`.
async fn drive(clients: Vec<McpHttpClient>, window: Duration, server: &str) -> HttpRow {
    let count = clients.len();
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let cpu_before = cpu_time(server);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let (done, failed, stop) = (done.clone(), failed.clone(), stop.clone());
            tokio::spawn(async move {
                let mut id = 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    id += 1;
                    match client.call(id).await {
                        Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("HTTP call failed: {e}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    tokio::time::sleep(window).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed();
    let counted = done.load(Ordering::Relaxed);
    let cpu = per_call(cpu_before, cpu_time(server), counted);
    for task in tasks {
        task.await.unwrap();
    }
    HttpRow {
        clients: count,
        per_second: counted as f64 / elapsed.as_secs_f64(),
        errors: failed.load(Ordering::Relaxed),
        latencies: None,
        cpu,
    }
}

/// One keep-alive HTTP/1.1 connection carrying one MCP session.
struct McpHttpClient {
    peer: Peer,
    stream: TcpStream,
    host: String,
    session: Option<String>,
    /// Sent as `Authorization: Bearer TOKEN` on every request.
    token: Option<String>,
    buffer: Vec<u8>,
}

/// A response: status, the `Mcp-Session-Id` header, the body.
struct HttpResponse {
    status: u16,
    session: Option<String>,
    body: Vec<u8>,
}

impl McpHttpClient {
    /// A connection to `addr`, no session yet.
    async fn open(addr: &str, peer: Peer, token: Option<String>) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect to serve");
        stream.set_nodelay(true).unwrap();
        Self {
            peer,
            stream,
            host: addr.to_owned(),
            session: None,
            token,
            buffer: Vec::new(),
        }
    }

    async fn connect(addr: &str, peer: Peer, token: Option<String>) -> Self {
        let mut client = Self::open(addr, peer, token).await;
        let response = client.post(&initialize(0)).await.expect("initialize");
        assert_eq!(
            response.status, 200,
            "initialize answered {}",
            response.status
        );
        // A server without sessions (`--stateless`) sends no id.
        client.session = response.session;
        let ack = client
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await
            .expect("initialized");
        assert_eq!(
            ack.status, 202,
            "notifications/initialized answered {}",
            ack.status
        );
        client
    }

    async fn call(&mut self, id: u64) -> Result<(), String> {
        let response = self.post(&call_request(self.peer, id)).await?;
        if response.status != 200 {
            return Err(format!("HTTP {}", response.status));
        }
        let answer = json_rpc_in(&response.body, id)
            .ok_or_else(|| format!("no response {id} in the body"))?;
        check_answer(self.peer, &answer)
    }

    async fn post(&mut self, body: &str) -> Result<HttpResponse, String> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n\
             Content-Length: {}\r\n",
            self.host,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str("Mcp-Session-Id: ");
            head.push_str(session);
            head.push_str("\r\n");
        }
        if let Some(token) = &self.token {
            head.push_str("Authorization: Bearer ");
            head.push_str(token);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head.push_str(body);
        self.stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        self.read_response().await
    }

    async fn fill(&mut self) -> Result<(), String> {
        let mut chunk = [0u8; 16 * 1024];
        let read = self
            .stream
            .read(&mut chunk)
            .await
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("the server closed the connection".into());
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(())
    }

    async fn read_response(&mut self) -> Result<HttpResponse, String> {
        let end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not an HTTP response: {head}"))?;
        let (mut length, mut chunked, mut session) = (None, false, None);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => session = Some(value.to_owned()),
                _ => {}
            }
        }
        let body = if chunked {
            self.read_chunked().await?
        } else {
            let length = length.unwrap_or(0);
            while self.buffer.len() < length {
                self.fill().await?;
            }
            self.buffer.drain(..length).collect()
        };
        Ok(HttpResponse {
            status,
            session,
            body,
        })
    }

    async fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&self.buffer, b"\r\n") {
                    break i;
                }
                self.fill().await?;
            };
            let size_text = String::from_utf8_lossy(&self.buffer[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| format!("bad chunk size {size_text:?}"))?;
            self.buffer.drain(..line_end + 2);
            while self.buffer.len() < size + 2 {
                self.fill().await?;
            }
            body.extend_from_slice(&self.buffer[..size]);
            self.buffer.drain(..size + 2);
            if size == 0 {
                return Ok(body);
            }
        }
    }
}

/// The JSON-RPC message with this id in a body that is either JSON or an
/// event stream (`data:` lines).
fn json_rpc_in(body: &[u8], id: u64) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return (value["id"] == id).then_some(value);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|v| v["id"] == id)
}

/// User + system CPU time a process has used so far (Linux `/proc`), or
/// `None` elsewhere. CPU time, unlike wall time, is what a call costs the
/// server whatever else the machine is doing.
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the rest follows its ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
}

/// CPU per call over a window, from two [`cpu_time`] readings.
fn per_call(before: Option<Duration>, after: Option<Duration>, calls: u64) -> Option<Duration> {
    let used = after?.checked_sub(before?)?;
    (calls > 0).then(|| used / calls as u32)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}
