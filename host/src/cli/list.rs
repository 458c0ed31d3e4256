//! `toolhost list`.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::plugin::Plugin;
use toolhost::text::{escape_controls, escape_json_controls};

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

pub async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let (_host, report) = args.plugins.load().await?;
    if args.json {
        let tools: Vec<_> = report
            .plugins
            .iter()
            .flat_map(|p| {
                p.tool_specs().iter().map(move |t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                        "source": plugin_json(p),
                    })
                })
            })
            .collect();
        let errors: Vec<_> = report
            .errors
            .iter()
            .map(|e| json!({"path": e.path(), "message": ChainDisplay(e).to_string()}))
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
        for tool in plugin.tool_specs() {
            println!(
                "  - {}: {}",
                escape_controls(&tool.name),
                escape_controls(&tool.description)
            );
            println!(
                "      input: {}",
                escape_json_controls(&tool.input_schema.to_string())
            );
        }
    }
    if report.plugins.is_empty() && report.errors.is_empty() {
        println!(
            "no plugins in {} (build the bundled ones with plugins/build.sh)",
            args.plugins.plugins.display()
        );
    }
    for e in &report.errors {
        println!("failed: {}", ChainDisplay(e).escaped());
    }
    Ok(ExitCode::SUCCESS)
}
