//! Observability against real peers: Prometheus scraping `toolhost serve
//! --http`, an OTLP collector receiving the spans of `toolhost run` and of
//! MCP calls, and nginx balancing two servers (the scale-out of
//! docs/deploy.md) while Prometheus scrapes both.

mod prometheus;
mod scale_out;
mod shutdown;
mod traces;

use serde_json::Value;

/// Whether a `tools/call` answer is a tool error (`isError`), and its text.
fn tool_error(answer: &Value) -> (bool, String) {
    let result = &answer["result"];
    let text = result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    (result["isError"] == Value::Bool(true), text)
}
