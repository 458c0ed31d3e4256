//! The server over an in-memory pipe, driven by rmcp's client: the stdio
//! path (`serve_io`) and its list_changed, without a process.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;

use super::{ServerOptions, ToolServer};
use crate::tools::{NativeTool, ToolRegistry};

struct Listener(Arc<Notify>);

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.0.notify_one();
        std::future::ready(())
    }
}

fn answering(name: &'static str) -> NativeTool {
    NativeTool::new(
        name,
        "Answers.",
        json!({"type": "object"}),
        move |_| async move { Ok(json!({"said": name})) },
    )
}

#[tokio::test]
async fn serve_io_lists_calls_and_tells_of_tools_registered_and_removed_later() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(answering("first")).unwrap();
    let server = ToolServer::new(Arc::clone(&registry), ServerOptions::new());
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move {
        server
            .serve_io(server_read, server_write, std::future::pending())
            .await
    });
    let changed = Arc::new(Notify::new());
    let client = Listener(Arc::clone(&changed))
        .serve(tokio::io::split(client_end))
        .await
        .expect("handshake");
    let listed = client.list_tools(None).await.unwrap();
    assert_eq!(listed.tools.len(), 1);
    let called = client
        .call_tool(CallToolRequestParams::new("first").with_arguments(JsonObject::new()))
        .await
        .unwrap();
    assert_eq!(called.structured_content, Some(json!({"said": "first"})));

    let told = |what: &'static str| {
        let changed = Arc::clone(&changed);
        async move {
            tokio::time::timeout(Duration::from_secs(30), changed.notified())
                .await
                .unwrap_or_else(|_| panic!("no list_changed after {what}"));
        }
    };
    registry.register(answering("second")).unwrap();
    told("register").await;
    let names: Vec<_> = client
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["first", "second"]);
    registry.unregister("first").unwrap();
    told("unregister").await;
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 1);

    // The client going away ends serving.
    client.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving ends with the client")
        .unwrap()
        .unwrap();
}
