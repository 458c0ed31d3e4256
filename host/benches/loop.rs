//! The loop's own overhead per iteration, excluding the model and the tools.
//!
//! A minimal HTTP/1.1 server on 127.0.0.1 answers every request with K tool
//! calls to a no-op native tool, in Chat Completions JSON for the real
//! [`OpenAiProvider`] and in Responses JSON (a reasoning item, then the
//! calls) for the real [`ResponsesProvider`]; the runner runs N
//! iterations. For each
//! iteration we measure its wall time and subtract the time spent inside
//! `Provider::complete` (HTTP, JSON, the server) and the longest tool call
//! of the round; what remains is the loop: planning, invariant check, tool
//! spec assembly, spawning and collecting the calls, bookkeeping.
//!
//! `cargo bench -p toolhost --bench loop` prints p50/p99 per iteration for
//! each wire format, and the Responses/Chat ratio of the p50s; without
//! `--bench` (as `cargo test` runs benches) it does a quick smoke run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost::llm::{
    ChatRequest, ChatResponse, HttpConfig, LlmError, Message, OpenAiConfig, OpenAiProvider,
    Provider, ResponsesConfig, ResponsesProvider,
};
use toolhost::runner::{RunItem, RunnerConfig, ToolRunner};
use toolhost::tools::{NativeTool, ToolRegistry};

/// A provider wrapper that sums the time spent in `complete`.
struct Timed<P> {
    inner: P,
    spent: Mutex<Vec<Duration>>,
}

impl<P: Provider> Provider for Timed<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let started = Instant::now();
            let answer = self.inner.complete(request).await;
            if let Ok(mut spent) = self.spent.lock() {
                spent.push(started.elapsed());
            }
            answer
        })
    }
}

/// The wire format measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Chat,
    Responses,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat completions",
            Self::Responses => "responses",
        }
    }

    fn provider(self, base_url: String) -> anyhow::Result<Arc<dyn Provider>> {
        let http = HttpConfig::new(base_url);
        Ok(match self {
            Self::Chat => Arc::new(OpenAiProvider::new(OpenAiConfig::new(http, "bench"))?),
            Self::Responses => {
                Arc::new(ResponsesProvider::new(ResponsesConfig::new(http, "bench"))?)
            }
        })
    }

    fn answer_body(self, calls: usize) -> String {
        match self {
            Self::Chat => chat_body(calls),
            Self::Responses => responses_body(calls),
        }
    }
}

/// A reasoning model's answer: its reasoning item (carried back on every
/// later request) and `calls` function calls.
fn responses_body(calls: usize) -> String {
    let mut output = vec![json!({"type": "reasoning", "id": "rs_bench", "summary": [],
        "encrypted_content": "e".repeat(256)})];
    output.extend((0..calls).map(|i| {
        json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("call_{i}"),
               "name": "noop", "arguments": "{\"n\":1}", "status": "completed"})
    }));
    json!({
        "id": "resp_bench", "object": "response", "status": "completed", "model": "bench",
        "output": output, "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    })
    .to_string()
}

fn chat_body(calls: usize) -> String {
    let tool_calls: Vec<_> = (0..calls)
        .map(|i| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "noop", "arguments": "{\"n\":1}"}}))
        .collect();
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
    .to_string()
}

/// Serve one keep-alive connection: read each request (head and
/// Content-Length body) and answer with `body`.
async fn serve(mut socket: TcpStream, body: Arc<String>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let head_end = loop {
            if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos + 4;
            }
            let n = socket.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let n = socket.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.drain(..head_end + length);
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
            body.len(),
            body
        );
        socket.write_all(response.as_bytes()).await?;
    }
}

async fn start_server(wire: Wire, calls: usize) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let body = Arc::new(wire.answer_body(calls));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            tokio::spawn(serve(socket, Arc::clone(&body)));
        }
    });
    Ok(format!("http://{addr}/v1"))
}

struct Row {
    wire: Wire,
    calls: usize,
    iterations: usize,
    overhead: Vec<Duration>,
    model: Vec<Duration>,
}

async fn measure(wire: Wire, calls: usize, iterations: u32, runs: usize) -> anyhow::Result<Row> {
    let base_url = start_server(wire, calls).await?;
    let registry = ToolRegistry::new();
    registry.register(NativeTool::new(
        "noop",
        "Does nothing.",
        json!({"type": "object"}),
        |_| async { Ok(json!(null)) },
    ))?;
    let registry = Arc::new(registry);
    let mut row = Row {
        wire,
        calls,
        iterations: 0,
        overhead: Vec::new(),
        model: Vec::new(),
    };
    let provider = Arc::new(Timed {
        inner: wire.provider(base_url)?,
        spent: Mutex::new(Vec::new()),
    });
    for _ in 0..runs {
        let config = RunnerConfig {
            max_iterations: iterations,
            ..RunnerConfig::default()
        };
        let mut run = ToolRunner::new(
            provider.clone(),
            registry.clone(),
            config,
            vec![Message::user("bench")],
        );
        let mut last = Instant::now();
        while let Some(item) = run.next().await {
            let RunItem::Iteration(it) = item? else { break };
            let wall = last.elapsed();
            last = Instant::now();
            let model = provider
                .spent
                .lock()
                .ok()
                .and_then(|mut s| s.pop())
                .unwrap_or_default();
            let tools = it
                .calls
                .iter()
                .map(|c| c.duration)
                .max()
                .unwrap_or_default();
            row.overhead.push(wall.saturating_sub(model + tools));
            row.model.push(model);
            row.iterations += 1;
        }
    }
    Ok(row)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((samples.len() - 1) as f64 * p).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

fn main() -> anyhow::Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let (iterations, runs) = if full { (20, 50) } else { (3, 1) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let rows = runtime.block_on(async {
        let mut rows = Vec::new();
        for calls in [1, 4, 16] {
            for wire in [Wire::Chat, Wire::Responses] {
                rows.push(measure(wire, calls, iterations, runs).await?);
            }
        }
        anyhow::Ok(rows)
    })?;
    println!(
        "loop overhead per iteration (excluding model and tools), {} iterations x {} runs",
        iterations, runs
    );
    println!(
        "| wire | calls/response | iterations | overhead p50 | overhead p99 | model (loopback HTTP) p50 | responses/chat p50 (overhead, model) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut chat: Option<(Duration, Duration)> = None;
    for mut row in rows {
        anyhow::ensure!(
            row.iterations > 0,
            "no iteration ran for {} calls",
            row.calls
        );
        let p50 = percentile(&mut row.overhead, 0.50);
        let p99 = percentile(&mut row.overhead, 0.99);
        let model = percentile(&mut row.model, 0.50);
        let ratio = match (row.wire, chat) {
            (Wire::Chat, _) => {
                chat = Some((p50, model));
                String::new()
            }
            (Wire::Responses, Some((chat_p50, chat_model))) => format!(
                "{:.2}x, {:.2}x",
                p50.as_secs_f64() / chat_p50.as_secs_f64().max(1e-9),
                model.as_secs_f64() / chat_model.as_secs_f64().max(1e-9)
            ),
            (Wire::Responses, None) => String::new(),
        };
        println!(
            "| {} | {} | {} | {:?} | {:?} | {:?} | {} |",
            row.wire.name(),
            row.calls,
            row.iterations,
            p50,
            p99,
            model,
            ratio
        );
    }
    Ok(())
}
