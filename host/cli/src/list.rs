//! `toolhost list`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::Toolbox;
use toolhost::mcp::McpServer;
use toolhost::plugin::Plugin;
use toolhost::text::{escape_controls, escape_json_controls};
use toolhost::tools::rest::RestTool;
use toolhost::tools::{Tool, ToolSet, ToolSpec};

use super::{ChainDisplay, PluginArgs};

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
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

/// The specs of those of `tools` that `served` serves itself.
fn served_specs<T: Tool>(served: &ToolSet, tools: &[T]) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter(|tool| is_served(served, *tool))
        .map(|tool| tool.spec().clone())
        .collect()
}

pub async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let toolbox = args.plugins.load_all().await?;
    if args.json {
        print_json(&toolbox);
    } else {
        print_text(&toolbox);
    }
    Ok(ExitCode::SUCCESS)
}

/// The REST tools that the toolbox's registry serves itself.
fn served_rest<'a>(toolbox: &'a Toolbox, served: &ToolSet) -> Vec<&'a RestTool> {
    toolbox
        .rest_report()
        .tools
        .iter()
        .filter(|tool| is_served(served, *tool))
        .collect()
}

/// `list --json`: every tool the registry serves with its source, and
/// every plugin, declaration and tool refused.
fn print_json(toolbox: &Toolbox) {
    // The very registry `call`, `run` and `serve` build: what it refused
    // is an error here, never a listed tool.
    let served = toolbox.registry().snapshot();
    let report = toolbox.plugin_report();
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
        let specs = served_specs(&served, &plugin.tools());
        tools.extend(specs.iter().map(|t| tool_json(t, &source)));
    }
    for tool in served_rest(toolbox, &served) {
        tools.push(tool_json(tool.spec(), &rest_json(tool)));
    }
    for server in toolbox.mcp_servers() {
        let source = mcp_json(server);
        let specs = served_specs(&served, &server.tools());
        tools.extend(specs.iter().map(|t| tool_json(t, &source)));
    }
    let errors: Vec<_> = report
        .errors
        .iter()
        .map(|e| json!({"path": e.path(), "message": ChainDisplay(e).to_string()}))
        .chain(
            toolbox
                .rest_report()
                .errors
                .iter()
                .map(|e| json!({"path": e.path(), "message": ChainDisplay(e).to_string()})),
        )
        .chain(
            toolbox
                .refused()
                .iter()
                .map(|e| json!({"tool": e.tool_name(), "message": ChainDisplay(e).to_string()})),
        )
        .collect();
    println!(
        "{}",
        escape_json_controls(&json!({"tools": tools, "errors": errors}).to_string())
    );
}

/// `list` for people: each plugin with its limits, grants and tools, each
/// REST tool, each MCP server with its tools, then what failed.
fn print_text(toolbox: &Toolbox) {
    // The very registry `call`, `run` and `serve` build: what it refused
    // is an error here, never a listed tool.
    let served = toolbox.registry().snapshot();
    let report = toolbox.plugin_report();
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
        for tool in &served_specs(&served, &plugin.tools()) {
            print_tool(tool);
        }
    }
    for tool in served_rest(toolbox, &served) {
        print_rest(tool);
    }
    for server in toolbox.mcp_servers() {
        print_mcp(server, &served_specs(&served, &server.tools()));
    }
    // An empty directory was reported on stderr (with where the plugins
    // likely are) when it loaded: nothing to print here.
    for e in &report.errors {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    for e in &toolbox.rest_report().errors {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    for e in toolbox.refused() {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
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

/// Why `dir` (a `--plugins` directory) gave no plugin, and where the
/// plugins likely are: a `dist/` or `target/plugins` holding `*.wasm`
/// beside it, else the project's own `build.sh` when `dir` is (or is in)
/// a scaffolded project (`build.sh` with `plugin.toml`).
pub fn no_plugin_hint(dir: &Path) -> String {
    let exists = dir.is_dir();
    let what = if exists {
        format!(
            "{} holds no plugin (no NAME.wasm file)",
            escape_controls(&dir.display().to_string())
        )
    } else {
        format!(
            "{} does not exist",
            escape_controls(&dir.display().to_string())
        )
    };
    // Where the build of the project the user stands in would be: in the
    // directory itself, or beside it when it is missing (`--plugins dist`
    // before the first build) or is the checkout's plugin sources.
    let mut bases = Vec::new();
    if exists {
        bases.push(dir.to_path_buf());
    }
    if !exists || (dir.join("build.sh").is_file() && !dir.join("plugin.toml").is_file()) {
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
        bases.push(parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf));
    }
    let built = bases
        .iter()
        .flat_map(|base| [base.join("dist"), base.join("target").join("plugins")])
        .find(|candidate| candidate != dir && holds_wasm(candidate));
    let todo = if let Some(built) = built {
        format!(
            "the built plugins are in {0}: pass --plugins {0}",
            escape_controls(&built.display().to_string())
        )
    } else if let Some(project) = bases.iter().find(|b| is_project(b)) {
        format!(
            "this is a plugin project: build it with {} (it writes {}), then pass --plugins {}",
            escape_controls(&project.join("build.sh").display().to_string()),
            escape_controls(&project.join("dist").display().to_string()),
            escape_controls(&project.join("dist").display().to_string()),
        )
    } else if let Some(checkout) = bases
        .iter()
        .find(|b| b.join("build.sh").is_file() && b.join("rust").is_dir())
    {
        format!(
            "build the bundled plugins with {} (they go to target/plugins), then pass --plugins target/plugins",
            escape_controls(&checkout.join("build.sh").display().to_string())
        )
    } else {
        "pass --plugins DIR with a directory of NAME.wasm plugins (a project made with \
         `toolhost new` builds them into its dist/ with ./build.sh)"
            .to_owned()
    };
    format!("{what}; {todo}")
}

/// A project `toolhost new` made: its build script beside its manifest.
fn is_project(dir: &Path) -> bool {
    dir.join("build.sh").is_file() && dir.join("plugin.toml").is_file()
}

fn holds_wasm(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let path = e.path();
            path.extension().is_some_and(|x| x == "wasm") && path.is_file()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::no_plugin_hint;

    #[test]
    fn an_empty_plugin_dir_points_at_the_build_beside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(project.join("build.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(project.join("plugin.toml"), "").unwrap();
        // Not built yet: the project's own build script.
        let hint = no_plugin_hint(&project);
        assert!(hint.contains("holds no plugin"), "{hint}");
        assert!(
            hint.contains(&project.join("build.sh").display().to_string()),
            "{hint}"
        );
        assert!(!hint.contains("plugins/build.sh"), "{hint}");
        // `--plugins dist` before the first build: the same.
        let hint = no_plugin_hint(&project.join("dist"));
        assert!(hint.contains("does not exist"), "{hint}");
        assert!(
            hint.contains(&project.join("build.sh").display().to_string()),
            "{hint}"
        );
        // Built: the directory that holds it.
        std::fs::create_dir(project.join("dist")).unwrap();
        std::fs::write(project.join("dist").join("proj.wasm"), "").unwrap();
        let hint = no_plugin_hint(&project);
        assert!(
            hint.contains(&format!("--plugins {}", project.join("dist").display())),
            "{hint}"
        );
        // A cargo-style build: target/plugins.
        let other = tmp.path().join("other");
        std::fs::create_dir_all(other.join("target").join("plugins")).unwrap();
        std::fs::write(other.join("target").join("plugins").join("a.wasm"), "").unwrap();
        let hint = no_plugin_hint(&other);
        assert!(
            hint.contains(&format!(
                "--plugins {}",
                other.join("target").join("plugins").display()
            )),
            "{hint}"
        );
        // Nothing anywhere: how to get plugins at all.
        let hint = no_plugin_hint(&tmp.path().join("nowhere").join("deeper"));
        assert!(
            hint.contains("does not exist") && hint.contains("toolhost new"),
            "{hint}"
        );
    }
}
