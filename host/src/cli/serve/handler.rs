//! The MCP side of `toolhost serve`: every registry tool as an MCP tool.
//!
//! One [`McpTools`] serves one MCP connection (a stdio process, an HTTP
//! `Mcp-Session-Id` session) and owns one plugin [`SessionId`], so a
//! stateful plugin keeps one instance per connection and never shares it.
//! The session ends when the handler is dropped: rmcp drops it when the
//! connection closes or the HTTP session is deleted or expires.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use toolhost::tools::{CallContext, ExecOverrides, SessionId, ToolRegistry, ToolSpec};

/// The tools of one registry, for one MCP connection.
#[derive(Debug)]
pub struct McpTools {
    registry: Arc<ToolRegistry>,
    cx: CallContext,
    _session: SessionGuard,
}

impl McpTools {
    /// A handler with a fresh plugin session.
    pub fn new(registry: Arc<ToolRegistry>, overrides: ExecOverrides) -> Self {
        let session = SessionId::random();
        Self {
            cx: CallContext::in_session(session.clone()).with_overrides(overrides),
            _session: SessionGuard {
                registry: Arc::clone(&registry),
                id: session,
            },
            registry,
        }
    }
}

/// Ends the plugin session when the connection's handler goes away.
#[derive(Debug)]
struct SessionGuard {
    registry: Arc<ToolRegistry>,
    id: SessionId,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        tracing::debug!(session = %self.id, "MCP connection closed: ending its plugin session");
        self.registry.end_session(&self.id);
    }
}

/// A registry tool as MCP describes it.
fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        // MCP requires an object schema; the registry's are (it checks
        // them), but never send a client something it must reject.
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    };
    Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    )
}

impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools that run as sandboxed WebAssembly plugins (and REST endpoints) \
                 under toolhost's limits.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.registry.snapshot().specs().map(mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry
            .snapshot()
            .get(name)
            .map(|tool| mcp_tool(tool.spec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        // An unknown tool is a protocol error (JSON-RPC invalid params), as
        // the MCP spec says; everything the tool itself does is a result.
        if !self.registry.contains(name) {
            return Err(McpError::invalid_params(
                format!("no tool named `{name}`; tools/list names the tools this server has"),
                None,
            ));
        }
        let input = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let result = match self.registry.call(name, &input, &self.cx).await {
            // structuredContent must be an object; other outputs are text.
            Ok(output @ Value::Object(_)) => CallToolResult::structured(output),
            Ok(output) => CallToolResult::success(vec![ContentBlock::text(output.to_string())]),
            // Exactly the text the tool loop sends a model: "kind: message",
            // control characters escaped.
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        Ok(result.into())
    }
}
