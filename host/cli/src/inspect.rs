//! `toolhost inspect`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolhost::plugin::{Inspection, Plugin};
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
    if args.json {
        print_json(&args.file, &inspection);
    } else {
        print_text(&args.file, &inspection);
    }
    Ok(if inspection.plugin.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILED)
    })
}

/// The component's imports and exports; none when it is not a component
/// this host can compile.
fn interface(inspection: &Inspection) -> (&[String], &[String]) {
    inspection
        .interface
        .as_ref()
        .map(|i| (&i.imports[..], &i.exports[..]))
        .unwrap_or_default()
}

/// `inspect --json`: one object.
fn print_json(file: &Path, inspection: &Inspection) {
    let (imports, exports) = interface(inspection);
    let mut out = json!({
        "file": file,
        "digest": inspection.digest,
        "imports": imports,
        "exports": exports,
        "cache": {"entry": inspection.cache_entry, "cached_before": inspection.cached_before},
    });
    match &inspection.plugin {
        Ok(plugin) => {
            out["plugin"] = super::list::plugin_json(plugin);
            out["tools"] = json!(plugin.tool_specs());
            out["cache"]["tools_from_cache"] = json!(plugin.tools_from_cache());
        }
        Err(e) => out["error"] = json!(ChainDisplay(e).to_string()),
    }
    println!("{}", escape_json_controls(&out.to_string()));
}

/// `inspect` for people: the component, its cache entry, and the plugin it
/// loads as (or why it does not).
fn print_text(file: &Path, inspection: &Inspection) {
    let (imports, exports) = interface(inspection);
    // Import and export names, descriptions and errors come from the
    // component: shown with control characters escaped.
    println!("file: {}", file.display());
    println!("digest: blake3:{}", inspection.digest);
    println!("imports:");
    for i in imports {
        println!("  {}", escape_controls(i));
    }
    println!("exports:");
    for e in exports {
        println!("  {}", escape_controls(e));
    }
    match &inspection.cache_entry {
        Some(path) => println!(
            "compiled cache: {} ({})",
            if inspection.cached_before {
                "cached"
            } else {
                "not cached before this run"
            },
            path.display()
        ),
        None => println!("compiled cache: disabled"),
    }
    match &inspection.plugin {
        Ok(plugin) => print_plugin(plugin),
        Err(e) => println!(
            "not loadable as a plugin: {}",
            escape_controls(&ChainDisplay(e).to_string())
        ),
    }
}

/// The plugin a component loads as, for people: its manifest, limits,
/// grants and tools.
fn print_plugin(plugin: &Plugin) {
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
