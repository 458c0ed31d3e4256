//! Serve a program's tools over MCP: a registry (here the bundled plugins
//! and one Rust function) offered on streamable HTTP by the library's
//! [`ToolServer`], with the same policy as `toolhost serve --http`
//! (loopback only, Host and Origin checked, sessions, budgets).
//!
//! Run it, then point any MCP client at the URL it prints; Enter (or the
//! end of its input) stops it:
//!
//! ```sh
//! plugins/build.sh rust && cargo run -p toolhost-examples --example serve_mcp -- target/plugins
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::json;
use tokio::io::AsyncReadExt;
use toolhost::mcp::server::{ServerOptions, ToolServer};
use toolhost::{HostConfig, NativeTool, Toolbox};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let plugins = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/plugins".into()),
    );
    let toolbox = Toolbox::builder(HostConfig::default())
        .plugins(&plugins)
        .native(NativeTool::new(
            "greet",
            "Greets someone by name.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }),
            |input| async move {
                Ok(json!(format!(
                    "Hello, {}!",
                    input["name"].as_str().unwrap_or("you")
                )))
            },
        ))
        .build()
        .await?;

    let server = ToolServer::new(toolbox.registry().clone(), ServerOptions::new());
    // Port 0: the system picks a free one; the URL says which.
    let http = server
        .serve_http(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await?;
    println!(
        "serving {} tools at {}",
        toolbox.registry().len(),
        http.url()
    );

    // Until Enter or the end of stdin; then the answers in flight finish.
    let mut byte = [0u8; 1];
    let _ = tokio::io::stdin().read(&mut byte).await;
    http.shutdown().await;
    Ok(())
}
