//! `toolhost lock`, and where the lock file in force comes from.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolhost::config::HostConfig;
use toolhost::plugin::integrity::Lock;
use toolhost::text::escape_controls;

use super::{PluginArgs, UsageError};

#[derive(Debug, Args)]
pub struct LockArgs {
    /// The plugin directory to pin (every NAME.wasm, with its NAME.toml);
    /// the host config's `[[oci.plugins]]` are pinned too, at the digest
    /// each resolves to.
    dir: PathBuf,
    /// Write the lock file here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Host config, for the size budgets files are read within (see `list`).
    #[command(flatten)]
    plugins: PluginArgs,
}

pub async fn run(mut args: LockArgs) -> anyhow::Result<ExitCode> {
    args.plugins.plugins = args.dir.clone();
    let config = args.plugins.host_config().map_err(UsageError)?;
    let mut lock = Lock::of_dir(&args.dir, &config.plugins)
        .context("cannot pin the plugins")
        .map_err(UsageError)?;
    // `[[oci.plugins]]`: the digests their references resolve to now (the
    // cache keeps what was fetched, by digest).
    let (pulled, errors) =
        toolhost::oci::fetch_declared(&config.oci, config.cache_dir.as_deref(), &config.plugins)
            .await;
    if let Some(error) = errors.into_iter().next() {
        return Err(anyhow::Error::from(error).context("cannot pin the OCI plugins"));
    }
    for wasm in pulled {
        let dir = wasm.parent().unwrap_or(Path::new("."));
        let one = Lock::of_dir(dir, &config.plugins).context("cannot pin the OCI plugins")?;
        for (name, entry) in one.entries() {
            lock.insert(name, *entry);
        }
    }
    let text = lock.to_toml();
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let count = lock.entries().count();
            let shown = escape_controls(&path.display().to_string()).into_owned();
            eprintln!(
                "pinned {count} plugin{} in {shown}; load with --lock {shown} (or `integrity.lock_file` in the host config)",
                if count == 1 { "" } else { "s" }
            );
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Put the lock file in force into `config`: `--lock` (or `TOOLHOST_LOCK`)
/// over `integrity.lock_file` from the host config (which
/// [`HostConfig::from_file`] took from the file's directory). A
/// `toolhost.lock` that only happens to be in the current directory is
/// not used.
pub fn apply(config: &mut HostConfig, flag: Option<&Path>) {
    if let Some(path) = flag {
        config.integrity.lock_file = Some(path.to_owned());
    }
    let here = Path::new("toolhost.lock");
    let used = config.integrity.lock_file.as_deref();
    if here.is_file() && used.is_none_or(|p| !super::same_file(p, here)) {
        // Policy never comes from where the process happens to run.
        tracing::warn!(
            "ignoring ./toolhost.lock: a lock file is used only when --lock, TOOLHOST_LOCK or \
             `integrity.lock_file` in the host config names it (pass --lock toolhost.lock to use this one)"
        );
    }
}
