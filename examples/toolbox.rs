//! One toolbox, four kinds of tools called the same way: a sandboxed
//! plugin, a REST endpoint, an MCP server and a plain Rust function, all
//! assembled by [`Toolbox`] into one registry.
//!
//! Run it on the bundled plugins, a REST endpoint that answers
//! `GET /weather/{city}` with JSON, and PyPI's `mcp-server-time`
//! (`pip install mcp-server-time`; started with `python3`):
//!
//! ```sh
//! plugins/build.sh rust && cargo run -p toolhost-examples --example toolbox -- \
//!     target/plugins http://127.0.0.1:8000
//! ```

use std::path::PathBuf;

use serde_json::json;
use toolhost::{CallContext, Environment, HostConfig, NativeTool, Toolbox};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let plugins = PathBuf::from(args.next().unwrap_or_else(|| "target/plugins".into()));
    let rest_base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000".into());

    // The operator's config, built in code here (or read with
    // `HostConfig::from_file`). The library reads no environment: this
    // program hands it its own, so the MCP server's child finds `python3`.
    let mut config = HostConfig::default()
        .allow_http(rest_base.parse()?)
        .allow_http_private()
        .environment(Environment::from_vars(std::env::vars()));
    config.rest.push(serde_json::from_value(json!({
        "name": "weather",
        "description": "Today's weather in a city.",
        "url": format!("{rest_base}/weather/{{city}}"),
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }))?);
    config.mcp.push(serde_json::from_value(json!({
        "name": "time",
        "command": "python3",
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    }))?);

    let toolbox = Toolbox::builder(config)
        .plugins(&plugins)
        .native(NativeTool::new(
            "word_count",
            "Counts the words of a text.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }),
            |input| async move {
                let text = input["text"].as_str().unwrap_or_default();
                Ok(json!(text.split_whitespace().count()))
            },
        ))
        .build()
        .await?;
    for error in &toolbox.plugin_report().errors {
        println!("skipped: {error}");
    }

    let registry = toolbox.registry();
    let mut names: Vec<String> = registry.snapshot().keys().collect();
    names.sort();
    println!("{} tools: {}", names.len(), names.join(", "));
    for (tool, input) in [
        ("calc_eval", json!({"expression": "6 * 7"})),
        ("weather", json!({"city": "Lisbon"})),
        ("time_get_current_time", json!({"timezone": "UTC"})),
        ("word_count", json!({"text": "one toolbox, four sources"})),
    ] {
        match registry
            .call(tool, input, &CallContext::default())
            .await
            .output
        {
            Ok(output) => println!("{tool} -> {output}"),
            Err(e) => println!("{tool} failed: {e}"),
        }
    }
    Ok(())
}
