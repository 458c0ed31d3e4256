//! `serve` with tool search on ([`ServerOptions::tool_search`](super::super::ServerOptions::tool_search)):
//! `tools/list` shows the always-listed tools and `tool_search`, and a
//! call of `tool_search` answers what the registry's index finds. Every
//! other call goes the one way all calls go.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

use super::Tools;
use super::wire::mcp_tool;
use crate::approval::ToolPattern;
use crate::tools::ToolSet;
use crate::tools::search::{
    TOOL_SEARCH_DEFAULT_LIMIT, TOOL_SEARCH_MAX_LIMIT, TOOL_SEARCH_NAME, tool_search_spec,
};

/// The search tool as MCP lists it.
fn search_tool() -> Tool {
    let spec = tool_search_spec();
    let schema = match spec.input_schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(spec.name, spec.description, schema)
}

/// What `tools/list` shows with tool search on: the tools `always` names,
/// then `tool_search`.
pub(super) fn listed(tools: &ToolSet, always: &[ToolPattern]) -> Vec<Tool> {
    tools
        .tools()
        .filter(|tool| {
            let name = &tool.spec().name;
            name != TOOL_SEARCH_NAME && always.iter().any(|p| p.matches(name))
        })
        .map(|tool| mcp_tool(&**tool))
        .chain(std::iter::once(search_tool()))
        .collect()
}

/// The search tool, when `name` is it and tool search is on.
pub(super) fn get_tool(tools: &Tools, name: &str) -> Option<Tool> {
    (tools.tool_search.is_some() && name == TOOL_SEARCH_NAME).then(search_tool)
}

/// The answer to a call of `tool_search` with `arguments`: the found
/// tools' names, descriptions and input schemas, as structured content
/// and as its JSON text; a bad input is a tool error the model reads.
/// Only tools `visible` takes are found (a principal's policy: a search
/// never shows what `tools/list` would hide).
pub(super) fn answer(
    tools: &ToolSet,
    arguments: Option<&JsonObject>,
    visible: impl Fn(&str) -> bool,
) -> CallToolResult {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return CallToolResult::error(vec![ContentBlock::text(
            "invalid_input: `tool_search` needs `query`, a string saying what the tool should do",
        )]);
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => TOOL_SEARCH_DEFAULT_LIMIT,
        Some(limit) => match limit.as_u64().and_then(|l| usize::try_from(l).ok()) {
            Some(l @ 1..=TOOL_SEARCH_MAX_LIMIT) => l,
            _ => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "invalid_input: `limit` must be an integer from 1 to {TOOL_SEARCH_MAX_LIMIT}"
                ))]);
            }
        },
    };
    // Ranked over every tool, then cut to `limit` of those visible.
    let index = tools.index();
    let found: Vec<Value> = index
        .search(query, index.len())
        .into_iter()
        .filter(|hit| hit.name != TOOL_SEARCH_NAME && visible(&hit.name))
        .take(limit)
        .filter_map(|hit| {
            let tool = tools.get(&hit.name)?;
            let listed = mcp_tool(&**tool);
            Some(json!({
                "name": listed.name,
                "description": listed.description,
                "inputSchema": listed.input_schema,
            }))
        })
        .collect();
    CallToolResult::structured(json!({ "tools": found }))
}
