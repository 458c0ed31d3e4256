//! `toolhost list`.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::json;
use toolhost::plugin::Plugin;
use toolhost::text::{escape_controls, escape_json_controls};
use toolhost::tools::mcp::McpServer;
use toolhost::tools::rest::RestTool;
use toolhost::tools::{Tool, ToolSet, ToolSpec};

use super::{ChainDisplay, PluginArgs};

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Print one JSON object: {"tools": [...], "errors": [...]}.
    #[arg(long)]
    json: bool,
}

pub fn plugin_json(plugin: &Plugin) -> serde_json::Value {
    json!({
        "plugin": plugin.name(),
        "path": plugin.path(),
        "manifest": plugin.manifest_path(),
        "stateful": plugin.is_stateful(),
        "limits": plugin.limits(),
        "permissions": plugin.permissions(),
    })
}

/// The effective limits and grants, one per line, for people.
pub fn print_limits_and_grants(plugin: &Plugin, indent: &str) {
    let l = plugin.limits();
    println!(
        "{indent}limits: fuel {}, timeout {} ms, memory {} MiB, output {} KiB",
        l.fuel,
        l.timeout.as_millis(),
        l.memory_bytes >> 20,
        l.output_bytes >> 10
    );
    let p = plugin.permissions();
    if p.dirs.is_empty() && p.env.is_empty() && p.http.is_empty() {
        println!("{indent}grants: none");
    }
    for d in &p.dirs {
        let mode = if d.writable { "rw" } else { "ro" };
        println!(
            "{indent}grants: dir {} -> {} ({mode})",
            escape_controls(&d.host.display().to_string()),
            escape_controls(&d.guest)
        );
    }
    for var in &p.env {
        println!("{indent}grants: env {}", escape_controls(var.name()));
    }
    for origin in &p.http.origins {
        let private = if p.http.private_addresses {
            " (private addresses allowed)"
        } else {
            ""
        };
        println!("{indent}grants: http {origin}{private}");
    }
    if !p.http.is_empty() {
        println!(
            "{indent}limits: http {} requests, {} KiB of responses per call",
            l.http_requests,
            l.http_response_bytes >> 10
        );
    }
}

/// A REST tool's source for `list --json`: what it calls and how, never a
/// secret (headers from the environment name the variable only).
fn rest_json(tool: &RestTool) -> serde_json::Value {
    let mut source = serde_json::to_value(tool.summary()).unwrap_or_default();
    if let Some(map) = source.as_object_mut() {
        map.insert("kind".into(), json!("rest"));
    }
    source
}

/// Whether `set` serves `tool` itself: its name (and version) resolves to
/// a tool from the same source. A tool that lost its name to another
/// source is listed among the errors instead.
fn is_served(set: &ToolSet, tool: &dyn Tool) -> bool {
    let name = &tool.spec().name;
    let key = match tool.version() {
        Some(version) => format!("{name}@{version}"),
        None => name.clone(),
    };
    set.get(&key).is_some_and(|t| t.origin() == tool.origin())
}

pub async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let loaded = args.plugins.load_all().await?;
    // The very registry `call`, `run` and `serve` build: what it refused
    // is an error here, never a listed tool.
    let (registry, refused) = loaded.assemble()?;
    let served = registry.snapshot();
    let report = &loaded.report;
    let plugin_tools = |plugin: &Arc<Plugin>| -> Vec<ToolSpec> {
        plugin
            .tools()
            .iter()
            .filter(|tool| is_served(&served, *tool))
            .map(|tool| tool.spec().clone())
            .collect()
    };
    let rest_tools: Vec<&RestTool> = loaded
        .rest
        .tools
        .iter()
        .filter(|tool| is_served(&served, *tool))
        .collect();
    let mcp_tools = |server: &McpServer| -> Vec<ToolSpec> {
        server
            .tools()
            .iter()
            .filter(|tool| is_served(&served, *tool))
            .map(|tool| tool.spec().clone())
            .collect()
    };
    if args.json {
        let tool_json = |t: &ToolSpec, source: &serde_json::Value| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "source": source,
            })
        };
        let mut tools = Vec::new();
        for plugin in &report.plugins {
            let source = plugin_json(plugin);
            tools.extend(plugin_tools(plugin).iter().map(|t| tool_json(t, &source)));
        }
        for tool in &rest_tools {
            tools.push(tool_json(tool.spec(), &rest_json(tool)));
        }
        for server in &loaded.mcp {
            let source = mcp_json(server);
            tools.extend(mcp_tools(server).iter().map(|t| tool_json(t, &source)));
        }
        let errors: Vec<_> =
            report
                .errors
                .iter()
                .map(|e| json!({"path": e.path(), "message": ChainDisplay(e).to_string()}))
                .chain(
                    loaded
                        .rest
                        .errors
                        .iter()
                        .map(|e| json!({"path": e.path(), "message": ChainDisplay(e).to_string()})),
                )
                .chain(refused.iter().map(
                    |e| json!({"tool": e.tool_name(), "message": ChainDisplay(e).to_string()}),
                ))
                .collect();
        println!(
            "{}",
            escape_json_controls(&json!({"tools": tools, "errors": errors}).to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Names, paths, descriptions and schemas come from the plugin (or its
    // file name): shown with control characters escaped.
    for plugin in &report.plugins {
        println!(
            "{} ({}){}",
            escape_controls(plugin.name()),
            escape_controls(&plugin.path().display().to_string()),
            if plugin.is_stateful() {
                " [stateful]"
            } else {
                ""
            }
        );
        print_limits_and_grants(plugin, "  ");
        for tool in &plugin_tools(plugin) {
            print_tool(tool);
        }
    }
    for tool in &rest_tools {
        print_rest(tool);
    }
    for server in &loaded.mcp {
        print_mcp(server, &mcp_tools(server));
    }
    if report.plugins.is_empty()
        && report.errors.is_empty()
        && loaded.rest.tools.is_empty()
        && loaded.rest.errors.is_empty()
        && loaded.mcp.is_empty()
    {
        println!(
            "no plugins in {} (build the bundled ones with plugins/build.sh)",
            args.plugins.plugins.display()
        );
    }
    for e in &report.errors {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    for e in &loaded.rest.errors {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    for e in &refused {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    Ok(ExitCode::SUCCESS)
}

/// A REST tool for people: what it calls, its limits, where each header
/// comes from (a variable's name, never its value), and the tool.
fn print_rest(tool: &RestTool) {
    let s = tool.summary();
    let method = serde_json::to_value(s.method).unwrap_or_default();
    let file = s
        .file
        .as_ref()
        .map(|f| format!(", declared in {}", f.display()))
        .unwrap_or_default();
    println!(
        "rest: {} {}{}",
        method.as_str().unwrap_or("?"),
        escape_controls(&s.url),
        escape_controls(&file)
    );
    println!(
        "  limits: timeout {} ms, response {} KiB, {} retries",
        s.timeout_ms, s.max_response_kb, s.retries
    );
    for h in &s.headers {
        match &h.env {
            Some(var) => println!(
                "  header: {} (from env {})",
                escape_controls(&h.name),
                escape_controls(var)
            ),
            None => println!("  header: {} (constant)", escape_controls(&h.name)),
        }
    }
    print_tool(tool.spec());
}

/// One tool for people: its name, description and input schema, all
/// escaped (a plugin or a server wrote them).
fn print_tool(spec: &ToolSpec) {
    println!(
        "  - {}: {}",
        escape_controls(&spec.name),
        escape_controls(&spec.description)
    );
    println!(
        "      input: {}",
        escape_json_controls(&spec.input_schema.to_string())
    );
}

/// An MCP server's tools' source for `list --json`: the server, never a
/// secret (headers and variables are not shown).
fn mcp_json(server: &McpServer) -> serde_json::Value {
    let mut source = serde_json::to_value(server.summary()).unwrap_or_default();
    if let Some(map) = source.as_object_mut() {
        map.insert("kind".into(), json!("mcp"));
    }
    source
}

/// An MCP server for people: how it is reached, whether it is up, its
/// tools (names, descriptions and schemas come from the server: escaped).
fn print_mcp(server: &McpServer, tools: &[ToolSpec]) {
    let s = server.summary();
    let state = match &s.down {
        Some(why) => format!("down: {why}"),
        None => "up".to_owned(),
    };
    println!(
        "mcp: {} ({} {}) [{}]",
        escape_controls(&s.server),
        s.transport,
        escape_controls(&s.target),
        escape_controls(&state)
    );
    let options = server.exec_options();
    println!(
        "  limits: timeout {} ms, {} retries",
        options.timeout.map_or(0, |t| t.as_millis()),
        options.retries
    );
    for tool in tools {
        print_tool(tool);
    }
}
