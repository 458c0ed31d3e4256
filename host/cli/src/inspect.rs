//! `toolhost inspect`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::text::{escape_controls, escape_json_controls};

use super::{ChainDisplay, PluginArgs, UsageError};

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The component to inspect.
    file: PathBuf,
    #[command(flatten)]
    pub(super) plugins: PluginArgs,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub async fn run(mut args: InspectArgs) -> anyhow::Result<ExitCode> {
    args.plugins.plugins = args.file.clone();
    let config = args.plugins.host_config().map_err(UsageError)?;
    let host = toolhost::plugin::PluginHost::new(config)
        .map_err(|e| UsageError(e.into()))?
        .with_observer(super::progress::observer(false));
    let inspection = host
        .inspect(&args.file)
        .await
        .map_err(|e| UsageError(e.into()))?;
    let (imports, exports) = inspection
        .interface
        .map(|i| (i.imports, i.exports))
        .unwrap_or_default();
    let (digest, entry, cached_before) = (
        inspection.digest,
        inspection.cache_entry,
        inspection.cached_before,
    );
    let loaded = inspection.plugin.map_err(|e| ChainDisplay(&e).to_string());

    if args.json {
        let mut out = json!({
            "file": args.file,
            "digest": digest,
            "imports": imports,
            "exports": exports,
            "cache": {"entry": entry, "cached_before": cached_before},
        });
        match &loaded {
            Ok(plugin) => {
                out["plugin"] = super::list::plugin_json(plugin);
                out["tools"] = json!(plugin.tool_specs());
                out["cache"]["tools_from_cache"] = json!(plugin.tools_from_cache());
            }
            Err(message) => out["error"] = json!(message),
        }
        println!("{}", escape_json_controls(&out.to_string()));
    } else {
        // Import and export names, descriptions and errors come from the
        // component: shown with control characters escaped.
        println!("file: {}", args.file.display());
        println!("digest: blake3:{digest}");
        println!("imports:");
        for i in &imports {
            println!("  {}", escape_controls(i));
        }
        println!("exports:");
        for e in &exports {
            println!("  {}", escape_controls(e));
        }
        match &entry {
            Some(path) => println!(
                "compiled cache: {} ({})",
                if cached_before {
                    "cached"
                } else {
                    "not cached before this run"
                },
                path.display()
            ),
            None => println!("compiled cache: disabled"),
        }
        match &loaded {
            Ok(plugin) => {
                match plugin.manifest_path() {
                    Some(m) => println!("manifest: {}", m.display()),
                    None => println!("manifest: none (defaults, no grants)"),
                }
                println!("stateful: {}", plugin.is_stateful());
                super::list::print_limits_and_grants(plugin, "");
                if plugin.tools_from_cache() {
                    println!("tools (remembered in the cache; describe was not called):");
                } else {
                    println!("tools:");
                }
                for t in plugin.tool_specs() {
                    println!(
                        "  {}: {}",
                        escape_controls(&t.name),
                        escape_controls(&t.description)
                    );
                }
            }
            Err(message) => println!("not loadable as a plugin: {}", escape_controls(message)),
        }
    }
    Ok(if loaded.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILED)
    })
}
