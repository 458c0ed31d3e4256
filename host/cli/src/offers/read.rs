//! `toolhost read URI`: a resource's content, text to stdout, bytes to a
//! file (`--out FILE`) or a pipe, never raw bytes to a terminal.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use toolhost::runner::OpeningError;
use toolhost::text::{escape_controls, escape_controls_keep_lines, escape_json_controls};
use toolhost::tools::{ResourceContents, ResourcePart};

use super::opening_error;
use crate::PluginArgs;

/// `toolhost read URI`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The resource's URI, as `toolhost resources` lists it, or one a
    /// template matches (`demo://resource/dynamic/text/{resourceId}` ->
    /// `demo://resource/dynamic/text/3`).
    pub uri: String,
    /// Write the content to FILE (created or replaced) instead of stdout:
    /// needed for bytes when stdout is a terminal. A read of several parts
    /// writes them one after the other.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON object: {"contents": [{"uri", "mime_type", "text"}
    /// or {"uri", "mime_type", "blob"} (base64)]}.
    #[arg(long, conflicts_with = "out")]
    json: bool,
    #[command(flatten)]
    pub(crate) plugins: PluginArgs,
}

/// Run `toolhost read URI`.
///
/// # Errors
///
/// Configuration problems; an unknown URI (usage error); the source
/// failed or went over a budget; bytes meant for a terminal; the file
/// cannot be written.
pub async fn run(args: ReadArgs) -> anyhow::Result<ExitCode> {
    let toolbox = args.plugins.load_all().await?;
    let parts = toolbox
        .registry()
        .offers()
        .read(&args.uri)
        .await
        .map_err(|e| opening_error(OpeningError::from(e)))?;
    if args.json {
        let contents: Vec<_> = parts
            .iter()
            .map(|p| {
                // {"text": ...} or {"blob": base64}
                let mut part = json!(p.contents);
                part["uri"] = json!(p.uri);
                part["mime_type"] = json!(p.mime_type);
                part
            })
            .collect();
        println!(
            "{}",
            escape_json_controls(&json!({ "contents": contents }).to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.out {
        let bytes: Vec<u8> = parts
            .iter()
            .flat_map(|p| bytes(p).iter().copied())
            .collect();
        std::fs::write(path, &bytes)
            .with_context(|| format!("cannot write --out {}", path.display()))?;
        eprintln!(
            "wrote {} bytes to {}",
            bytes.len(),
            escape_controls(&path.display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let terminal = std::io::stdout().is_terminal();
    if terminal
        && let Some(blob) = parts
            .iter()
            .find(|p| matches!(p.contents, ResourceContents::Blob(_)))
    {
        anyhow::bail!(
            "`{}` is {} bytes of {}, not text: write it to a file with --out FILE (or pipe \
             stdout to a program), or see it as base64 with --json",
            escape_controls(&blob.uri),
            bytes(blob).len(),
            escape_controls(blob.mime_type.as_deref().unwrap_or("binary data"))
        );
    }
    let mut stdout = std::io::stdout().lock();
    for part in &parts {
        match &part.contents {
            // Text from a source reaches a terminal without its escape
            // sequences; a pipe gets it as it is.
            ResourceContents::Text(text) if terminal => {
                writeln!(stdout, "{}", escape_controls_keep_lines(text))?;
            }
            ResourceContents::Text(text) => {
                stdout.write_all(text.as_bytes())?;
                if !text.ends_with('\n') {
                    stdout.write_all(b"\n")?;
                }
            }
            ResourceContents::Blob(data) => stdout.write_all(data)?,
        }
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn bytes(part: &ResourcePart) -> &[u8] {
    match &part.contents {
        ResourceContents::Text(text) => text.as_bytes(),
        ResourceContents::Blob(data) => data,
    }
}
