//! `toolhost search`: what the tool index finds for a query.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::text::{escape_controls, escape_json_controls};

use super::PluginArgs;

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
    /// What the tool should do, in words (e.g. "weather forecast for Paris").
    query: String,
    /// Show at most this many tools.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print a JSON list: [{"rank", "name", "score", "description", "input_schema"}, ...].
    #[arg(long)]
    json: bool,
}

pub async fn run(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let toolbox = args.plugins.load_all().await?;
    let tools = toolbox.registry().snapshot();
    let hits = tools.index().search(&args.query, args.limit);
    if args.json {
        let list: Vec<_> = hits
            .iter()
            .enumerate()
            .filter_map(|(i, hit)| {
                let spec = tools.get(&hit.name)?.spec();
                Some(json!({
                    "rank": i + 1,
                    "name": hit.name,
                    "score": hit.score,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                }))
            })
            .collect();
        println!("{}", escape_json_controls(&json!(list).to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        eprintln!(
            "no tool matches {:?} among {} tools: try other words, or `toolhost list` to see them all",
            args.query,
            tools.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Names and descriptions come from plugins and servers: shown with
    // control characters escaped.
    for (i, hit) in hits.iter().enumerate() {
        let description = tools
            .get(&hit.name)
            .map(|t| t.spec().description.lines().next().unwrap_or("").to_owned())
            .unwrap_or_default();
        println!(
            "{:>3}  {:<32}  {:>7.3}  {}",
            i + 1,
            escape_controls(&hit.name),
            hit.score,
            escape_controls(&description)
        );
    }
    Ok(ExitCode::SUCCESS)
}
