//! `toolhost complete`: values for a prompt's argument or a resource
//! template's variable, as a client's completion box would show them.

use std::process::ExitCode;

use anyhow::anyhow;
use clap::{ArgGroup, Args};
use serde_json::json;
use toolhost::text::{escape_controls, escape_json_controls};
use toolhost::tools::{CompletionRef, CompletionRequest, OfferError};

use super::{arguments, parse_arg};
use crate::{PluginArgs, UsageError};

/// `toolhost complete (--prompt NAME | --template URI) ARGUMENT [--value V] [--arg K=V ...]`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["prompt", "template"])))]
pub struct CompleteArgs {
    /// Complete an argument of this prompt (as `toolhost prompt` lists it).
    #[arg(long, value_name = "NAME")]
    pub prompt: Option<String>,
    /// Complete a variable of this resource template, written as `toolhost
    /// resources` lists it (`notes://day/{day}`).
    #[arg(long, value_name = "URI")]
    pub template: Option<String>,
    /// The argument (or template variable) to complete.
    pub argument: String,
    /// What the user typed so far (empty: every value).
    #[arg(long, default_value = "")]
    pub value: String,
    /// An argument filled in already, KEY=VALUE (repeatable): the context
    /// a source may narrow the values by.
    #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_arg)]
    pub args: Vec<(String, String)>,
    /// Print one JSON object: {"values": [...], "total", "has_more"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) plugins: PluginArgs,
}

/// Run `toolhost complete`: one value a line, best first.
///
/// # Errors
///
/// Configuration problems; an unknown prompt or template, a `--arg` given
/// twice (usage errors); the source failed or took too long.
pub async fn run(args: CompleteArgs) -> anyhow::Result<ExitCode> {
    let context = arguments(&args.args)?;
    let reference = match (args.prompt, args.template) {
        (Some(name), _) => CompletionRef::Prompt(name),
        (None, Some(uri)) => CompletionRef::Template(uri),
        (None, None) => unreachable!("clap requires --prompt or --template"),
    };
    let toolbox = args.plugins.load_all().await?;
    let request = CompletionRequest {
        argument: args.argument,
        value: args.value,
        context,
    };
    let completion = toolbox
        .registry()
        .offers()
        .complete(&reference, request)
        .await
        .map_err(complete_error)?;
    if args.json {
        let out = json!({
            "values": completion.values,
            "total": completion.total,
            "has_more": completion.has_more,
        });
        println!("{}", escape_json_controls(&out.to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    if completion.values.is_empty() {
        eprintln!("no completions: the source has no value that fits");
    }
    for value in &completion.values {
        println!("{}", escape_controls(value));
    }
    if completion.has_more {
        let total = completion
            .total
            .map_or_else(String::new, |t| format!(" of {t}"));
        eprintln!(
            "({} shown{total}; there are more: type more of the value to narrow them)",
            completion.values.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// An unknown prompt or template is what the user typed wrong (exit 2,
/// saying where the names are); a source that failed is a failure (exit 1).
fn complete_error(error: OfferError) -> anyhow::Error {
    match error {
        OfferError::UnknownPrompt { name } => UsageError(anyhow!(
            "no prompt is named `{name}`: `toolhost prompt` lists them"
        ))
        .into(),
        OfferError::UnknownResource { uri } => UsageError(anyhow!(
            "no resource template is `{uri}`: `toolhost resources` lists them; give one as \
             listed, its {{variables}} unfilled"
        ))
        .into(),
        other => anyhow::Error::new(other),
    }
}
