//! The budget on what a tool source hands the host about its tools (how
//! many, how long their descriptions and schemas are), and the one check
//! of a tool list against it: for a plugin's `describe` answer, a REST
//! declaration and an MCP server's listing alike.

use std::collections::HashSet;

use serde::Deserialize;

use super::{SchemaBudget, ToolSpec, check_schema, is_valid_tool_name};
use crate::text;

/// Budgets on plugin-supplied data handled by the host, outside the
/// sandbox: a plugin over one fails to load (with a message naming the
/// key), and the others load. Each tool also goes into every model request,
/// so the tool list is held to what a model can use.
///
/// ```toml
/// [plugins]
/// max_tools = 128
/// max_description_bytes = 4096
/// max_schema_bytes = 65536
/// max_manifest_bytes = 65536
/// max_component_mb = 256
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginBudget {
    /// Tools one plugin may describe.
    pub max_tools: usize,
    /// Bytes of one tool's description.
    pub max_description_bytes: usize,
    /// Bytes of one tool's input schema (JSON text).
    pub max_schema_bytes: usize,
    /// Bytes of a manifest (`NAME.toml`).
    pub max_manifest_bytes: u64,
    /// MiB of a component (`NAME.wasm`).
    pub max_component_mb: u64,
}

impl Default for PluginBudget {
    fn default() -> Self {
        Self {
            max_tools: 128,
            max_description_bytes: 4096,
            max_schema_bytes: 64 << 10,
            max_manifest_bytes: 64 << 10,
            max_component_mb: 256,
        }
    }
}

/// Whether `tools` is a tool list this host accepts from a plugin: at least
/// one tool and at most `plugins.max_tools`, valid unique names,
/// descriptions and schemas within their budgets. The same rule for a
/// fresh `describe` answer and for one remembered in the cache.
pub(crate) fn check_tools(tools: &[ToolSpec], budget: &PluginBudget) -> Result<(), String> {
    if tools.is_empty() {
        return Err("describe() lists no tools".into());
    }
    if tools.len() > budget.max_tools {
        return Err(format!(
            "describe() lists {} tools, more than the {} allowed; split the plugin, or raise `plugins.max_tools` in the host config",
            tools.len(),
            budget.max_tools
        ));
    }
    let mut names = HashSet::with_capacity(tools.len());
    for tool in tools {
        check_tool(tool, budget)?;
        if !names.insert(tool.name.as_str()) {
            let shown = text::untrusted(&tool.name, 80);
            return Err(format!("tool `{shown}` is listed twice"));
        }
    }
    Ok(())
}

/// Whether one tool of a source's list fits this host: a valid name, a
/// description and an input schema within their budgets (bytes, and the
/// schema's shape). The one rule for every source's tools, a plugin's
/// `describe` and an `[[mcp]]` server's `tools/list`; what becomes of a
/// tool that does not fit is the source's (a plugin fails to load, a
/// server's tool is skipped). The error names the tool.
pub(crate) fn check_tool(tool: &ToolSpec, budget: &PluginBudget) -> Result<(), String> {
    let shown = text::untrusted(&tool.name, 80);
    if !is_valid_tool_name(&tool.name) {
        return Err(format!(
            "tool name `{shown}` is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`"
        ));
    }
    if tool.description.len() > budget.max_description_bytes {
        return Err(format!(
            "tool `{shown}`: the description is {} bytes, more than the {} allowed; shorten it, or raise `plugins.max_description_bytes`",
            tool.description.len(),
            budget.max_description_bytes
        ));
    }
    let schema_bytes = serde_json::to_vec(&tool.input_schema).map_or(usize::MAX, |v| v.len());
    if schema_bytes > budget.max_schema_bytes {
        return Err(format!(
            "tool `{shown}`: the input schema is {schema_bytes} bytes, more than the {} allowed; simplify it, or raise `plugins.max_schema_bytes`",
            budget.max_schema_bytes
        ));
    }
    check_schema(&tool.input_schema, &SchemaBudget::default())
        .map_err(|e| format!("tool `{shown}`: input schema over budget: {e}"))
}
