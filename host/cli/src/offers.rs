//! `toolhost resources`, `toolhost read URI`, `toolhost prompt [NAME]` and
//! `toolhost complete`: what the program's sources (`[[mcp]]` servers in
//! the host config, plugins) offer besides tools. The library does the work
//! ([`Offers`](toolhost::tools::Offers),
//! [`prompt_messages`](toolhost::runner::prompt_messages)); this prints.

mod complete;
mod read;

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::anyhow;
use clap::Args;
use serde_json::json;
use toolhost::llm::Message;
use toolhost::runner::{OpeningError, prompt_messages};
use toolhost::text::{escape_controls, escape_controls_keep_lines, escape_json_controls};
use toolhost::tools::{Content, ResourceSpec, ToolOrigin};

pub use complete::{CompleteArgs, run as complete};
pub use read::{ReadArgs, run as read};

use super::{PluginArgs, UsageError};

/// `toolhost resources`.
#[derive(Debug, Args)]
pub struct ResourcesArgs {
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
    /// Print one JSON object: {"resources": [...], "templates": [...]},
    /// each {"uri", "name", "description", "mime_type", "owner"}.
    #[arg(long)]
    json: bool,
}

/// `toolhost prompt [NAME] [--arg KEY=VALUE ...]`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The prompt to render (as `toolhost prompt` lists it, e.g.
    /// `everything_args-prompt`). Without it, the prompts are listed.
    pub name: Option<String>,
    /// An argument of the prompt, KEY=VALUE (repeatable).
    #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_arg, requires = "name")]
    pub args: Vec<(String, String)>,
    /// Print JSON: the list {"prompts": [...]}, or for NAME
    /// {"prompt", "messages"} where "messages" are the neutral messages a
    /// run opens with (what `toolhost run --messages FILE` reads).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
}

/// A `--arg KEY=VALUE`.
pub fn parse_arg(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!(
            "`{text}` is not KEY=VALUE; write e.g. --arg city=Warsaw"
        )),
    }
}

/// The `--arg` pairs as the prompt's arguments; a key given twice is a
/// mistake worth saying.
pub fn arguments(pairs: &[(String, String)]) -> Result<BTreeMap<String, String>, UsageError> {
    let mut args = BTreeMap::new();
    for (key, value) in pairs {
        if args.insert(key.clone(), value.clone()).is_some() {
            return Err(UsageError(anyhow!(
                "--arg {} is given twice; give each argument once",
                escape_controls(key)
            )));
        }
    }
    Ok(args)
}

/// An [`OpeningError`] for the terminal: what the user typed wrong (a
/// name, an argument, a URI, a kind of content) is a usage error (exit
/// 2); a source that failed is a failure (exit 1).
pub fn opening_error(error: OpeningError) -> anyhow::Error {
    match error {
        OpeningError::Offer(_) => anyhow::Error::new(error),
        other => UsageError(anyhow::Error::new(other)).into(),
    }
}

/// Who offers an entry, for people.
fn owner(owner: &ToolOrigin) -> String {
    match owner {
        ToolOrigin::Mcp { server } => format!("mcp:{server}"),
        ToolOrigin::Plugin { plugin, .. } => format!("plugin:{plugin}"),
        ToolOrigin::Rest { url, .. } => format!("rest:{url}"),
        _ => "native".to_owned(),
    }
}

fn spec_json(spec: &ResourceSpec, by: &ToolOrigin) -> serde_json::Value {
    json!({
        "uri": spec.uri,
        "name": spec.name,
        "description": spec.description,
        "mime_type": spec.mime_type,
        "owner": owner(by),
    })
}

/// One line for people: `URI  NAME  (MIME)  [OWNER]  DESCRIPTION`.
fn spec_line(spec: &ResourceSpec, by: &ToolOrigin) -> String {
    let mut line = format!("{}  {}", spec.uri, spec.name);
    if let Some(mime) = &spec.mime_type {
        line.push_str(&format!("  ({mime})"));
    }
    line.push_str(&format!("  [{}]", owner(by)));
    if let Some(description) = spec.description.as_deref().filter(|d| !d.is_empty()) {
        line.push_str("  ");
        line.push_str(description.lines().next().unwrap_or_default());
    }
    escape_controls(&line).into_owned()
}

/// Run `toolhost resources`: the resources, then the templates, one per
/// line.
///
/// # Errors
///
/// Configuration problems.
pub async fn resources(args: ResourcesArgs) -> anyhow::Result<ExitCode> {
    let toolbox = args.plugins.load_all().await?;
    let offers = toolbox.registry().offers();
    let resources = offers.resources();
    let templates = offers.templates();
    if args.json {
        let out = json!({
            "resources": resources.iter().map(|e| spec_json(&e.spec, &e.owner)).collect::<Vec<_>>(),
            "templates": templates.iter().map(|e| spec_json(&e.spec, &e.owner)).collect::<Vec<_>>(),
        });
        println!("{}", escape_json_controls(&out.to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    if resources.is_empty() && templates.is_empty() {
        eprintln!(
            "no resources: none of the sources offers any (add an `[[mcp]]` server that has \
             some to the host config, --config FILE)"
        );
    }
    for entry in &resources {
        println!("{}", spec_line(&entry.spec, &entry.owner));
    }
    if !templates.is_empty() {
        println!("templates (read with `toolhost read URI`, the {{variables}} filled in):");
        for entry in &templates {
            println!("  {}", spec_line(&entry.spec, &entry.owner));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `toolhost prompt`: list the prompts, or print NAME's messages.
///
/// # Errors
///
/// Configuration problems; an unknown prompt, a missing or unknown
/// argument (usage errors); the source failed.
pub async fn prompt(args: PromptArgs) -> anyhow::Result<ExitCode> {
    let arguments = arguments(&args.args)?;
    let toolbox = args.plugins.load_all().await?;
    let offers = toolbox.registry().offers();
    let Some(name) = &args.name else {
        list_prompts(&offers.prompts(), args.json);
        return Ok(ExitCode::SUCCESS);
    };
    let messages = prompt_messages(offers, name, arguments)
        .await
        .map_err(opening_error)?;
    if args.json {
        let out = json!({"prompt": name, "messages": messages});
        println!("{}", escape_json_controls(&out.to_string()));
    } else {
        for message in &messages {
            print_message(message);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list_prompts(prompts: &[toolhost::tools::PromptEntry], json: bool) {
    if json {
        let list: Vec<_> = prompts
            .iter()
            .map(|e| {
                json!({
                    "name": e.spec.name,
                    "description": e.spec.description,
                    "arguments": e.spec.arguments,
                    "owner": owner(&e.owner),
                })
            })
            .collect();
        println!(
            "{}",
            escape_json_controls(&json!({ "prompts": list }).to_string())
        );
        return;
    }
    if prompts.is_empty() {
        eprintln!(
            "no prompts: none of the sources offers any (add an `[[mcp]]` server that has \
             some to the host config, --config FILE)"
        );
    }
    for entry in prompts {
        let mut line = format!("{}  [{}]", entry.spec.name, owner(&entry.owner));
        if let Some(d) = entry.spec.description.as_deref().filter(|d| !d.is_empty()) {
            line.push_str("  ");
            line.push_str(d.lines().next().unwrap_or_default());
        }
        println!("{}", escape_controls(&line));
        for arg in &entry.spec.arguments {
            let mut line = format!(
                "    --arg {}=...{}",
                arg.name,
                if arg.required { " (required)" } else { "" }
            );
            if let Some(d) = arg.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str("  ");
                line.push_str(d.lines().next().unwrap_or_default());
            }
            println!("{}", escape_controls(&line));
        }
    }
}

/// `ROLE: TEXT`, then a line per image or audio part.
fn print_message(message: &Message) {
    let (role, text, parts): (&str, &str, &[Content]) = match message {
        Message::System { content } => ("system", content, &[]),
        Message::User { content, parts } => ("user", content, parts),
        Message::Assistant(a) => ("assistant", &a.content, &[]),
        Message::Tool(r) => ("tool", &r.content, &r.parts),
    };
    println!("{role}: {}", escape_controls_keep_lines(text));
    for part in parts {
        let (kind, media_type, bytes) = match part {
            Content::Image { media_type, data } => ("image", media_type.as_str(), data.len()),
            Content::Audio { media_type, data } => ("audio", media_type.as_str(), data.len()),
            other => ("part", "", other.size()),
        };
        println!("  [{kind} {}, {bytes} bytes]", escape_controls(media_type));
    }
}
