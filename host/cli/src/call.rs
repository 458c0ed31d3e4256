//! `toolhost call`.

mod media;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::text::{escape_controls_indented, escape_json_controls};
use toolhost::tools::{CallContext, Content, SessionId, ToolError, ToolErrorKind};

use super::{ChainDisplay, EXIT_FAILED, EXIT_USAGE, ExecArgs, PluginArgs, UsageError};

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call.
    tool: String,
    /// Input JSON. Without --input or --input-file, it is read from stdin.
    #[arg(long, short, conflicts_with = "input_file")]
    input: Option<String>,
    /// Read the input JSON from a file ("-" for stdin).
    #[arg(long)]
    input_file: Option<PathBuf>,
    /// Session id for stateful tools (state lasts as long as this process).
    #[arg(long)]
    session: Option<String>,
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
    #[command(flatten)]
    exec: ExecArgs,
    /// Print exactly one JSON object on stdout:
    /// {"ok":true,"output":...} or {"ok":false,"error":{"kind":...,"message":...}};
    /// a result's content parts (images, audio, text) come as "content",
    /// media as base64 with their media type.
    #[arg(long)]
    json: bool,
    /// Write the result's image and audio parts to files in DIR (created
    /// if missing) and print their paths. Default: a new directory in the
    /// system's temp directory, and with --json, none (the parts are in the
    /// JSON).
    #[arg(long, value_name = "DIR")]
    media_dir: Option<PathBuf>,
}

impl CallArgs {
    fn read_input(&self) -> anyhow::Result<String> {
        use anyhow::Context;
        if let Some(input) = &self.input {
            return Ok(input.clone());
        }
        let mut text = String::new();
        match &self.input_file {
            Some(path) if path.as_os_str() != "-" => {
                // A pipe is passed as `-` (stdin), not as a path.
                let max = toolhost::tools::InputBudget::default().max_bytes as u64;
                text = toolhost::fsread::read_text(path, max, None)
                    .with_context(|| format!("cannot read input file {}", path.display()))?;
            }
            _ => {
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("cannot read the input from stdin")?;
            }
        }
        Ok(text)
    }
}

pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let outcome = call(&args).await;
    // The output and error text come from the plugin: JSON keeps being
    // JSON, with every character a terminal would act on escaped; an error
    // for people is shown with its controls escaped.
    match outcome {
        Ok(Ok((output, content))) => {
            if args.json {
                // Files only where asked for: the parts are in the JSON.
                let saved = match &args.media_dir {
                    Some(dir) => media::save(dir, &args.tool, &content)?,
                    None => vec![None; content.len()],
                };
                let mut answer = json!({"ok": true, "output": output});
                if !content.is_empty() {
                    answer["content"] = media::parts_json(&content, &saved)?;
                }
                print_json(&answer.to_string());
            } else {
                print_json(&serde_json::to_string_pretty(&output)?);
                if content.iter().any(media::is_media) {
                    let dir = match &args.media_dir {
                        Some(dir) => dir.clone(),
                        None => media::temp_dir()?,
                    };
                    let saved = media::save(&dir, &args.tool, &content)?;
                    media::print_saved(&content, &saved);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(Err(e)) => {
            if args.json {
                print_json(
                    &json!({"ok": false, "error": {"kind": e.kind, "message": e.message}})
                        .to_string(),
                );
            } else {
                // A traceback (Python, JavaScript) or a panic's location
                // is read as lines: kept, indented under `error:`.
                eprintln!(
                    "error: {}: {}",
                    e.kind,
                    escape_controls_indented(&e.message, "    ")
                );
            }
            Ok(ExitCode::from(EXIT_FAILED))
        }
        Err(e) if args.json => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            let kind = if usage { "usage" } else { "host" };
            print_json(
                &json!({"ok": false, "error": {"kind": kind, "message": format!("{e:#}")}})
                    .to_string(),
            );
            Ok(ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILED }))
        }
        Err(e) => Err(e),
    }
}

fn print_json(text: &str) {
    println!("{}", escape_json_controls(text));
}

/// Outer error: the host could not be set up. Inner: the call failed.
/// A success is the output and the result's content parts.
async fn call(
    args: &CallArgs,
) -> anyhow::Result<Result<(serde_json::Value, Vec<Content>), ToolError>> {
    let input = args.read_input().map_err(UsageError)?;
    // Only the plugin that owns the tool, when the cache knows which.
    let toolbox = args.plugins.load_all_for(Some(&args.tool)).await?;
    let registry = toolbox.registry();
    let report = toolbox.plugin_report();
    if !registry.contains(&args.tool) {
        let mut message = format!("no tool named `{}`", args.tool);
        if !report.errors.is_empty() || !toolbox.rest_report().errors.is_empty() {
            // The tool may live in a plugin (or a REST declaration) that
            // failed to load: say which.
            let failed: Vec<String> = report
                .errors
                .iter()
                .map(|e| ChainDisplay(e).to_string())
                .chain(
                    toolbox
                        .rest_report()
                        .errors
                        .iter()
                        .map(|e| ChainDisplay(e).to_string()),
                )
                .collect();
            message.push_str(&format!(
                "; these plugins failed to load: {}",
                failed.join("; ")
            ));
            let kind = if report.plugins.is_empty() && toolbox.rest_report().tools.is_empty() {
                ToolErrorKind::PluginLoad
            } else {
                ToolErrorKind::UnknownTool
            };
            return Ok(Err(ToolError::new(kind, message)));
        }
        for server in toolbox.mcp_servers() {
            // Its tools are missing while it is down: say so.
            if let Some(why) = server.summary().down {
                message.push_str(&format!(
                    "; MCP server `{}` is not up ({why})",
                    server.name()
                ));
            }
        }
        let names: Vec<String> = registry.snapshot().keys().collect();
        if names.is_empty() && args.plugins.plugins.is_dir() {
            message.push_str(&format!(
                "; no tools at all: {}",
                super::list::no_plugin_hint(&args.plugins.plugins)
            ));
        } else {
            message.push_str(&format!("; available: {}", names.join(", ")));
        }
        return Ok(Err(ToolError::new(ToolErrorKind::UnknownTool, message)));
    }
    let cx = CallContext {
        session: args.session.clone().map(SessionId::new),
        overrides: args.exec.overrides(),
        ..CallContext::default()
    };
    let report = registry.call(&args.tool, &input, &cx).await;
    Ok(report.output.map(|output| (output, report.content)))
}
