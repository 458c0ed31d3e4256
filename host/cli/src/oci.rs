//! `toolhost pull` and `toolhost push`: plugins through OCI registries
//! (the work is in `toolhost::oci`; this parses flags, passes the
//! environment's credentials in, and prints).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use toolhost::config::{HostConfig, RegistryLogin};
use toolhost::oci::{OciError, OciReference, Registry};
use toolhost::text::escape_controls;

use super::{PluginArgs, UsageError};

#[derive(Debug, Args)]
pub struct PullArgs {
    /// What to pull: oci://REGISTRY/REPOSITORY:TAG or ...@sha256:DIGEST.
    reference: String,
    /// The plugin name to write it under (NAME.wasm); default: the
    /// repository's last segment.
    #[arg(long)]
    name: Option<String>,
    /// The plugin directory to write into (`--plugins`), and the host
    /// config (`--config`: `[oci]` settings, size budgets).
    #[command(flatten)]
    plugins: PluginArgs,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The component to push (DIR/NAME.wasm); NAME.toml and NAME.wasm.sig
    /// beside it go with it when they exist.
    wasm: PathBuf,
    /// Where to: oci://REGISTRY/REPOSITORY:TAG.
    reference: String,
    /// The host config (`[oci]` settings, size budgets).
    #[arg(long, env = "TOOLHOST_CONFIG")]
    config: Option<PathBuf>,
}

/// The registry client for `reference` under `config`, with a login from
/// this process's environment for that registry only:
/// `TOOLHOST_OCI_TOKEN` (bearer) or `TOOLHOST_OCI_USERNAME` and
/// `TOOLHOST_OCI_PASSWORD` (basic).
fn registry(
    mut config: HostConfig,
    reference: &OciReference,
) -> anyhow::Result<(Registry, HostConfig)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let login = match (
        var("TOOLHOST_OCI_TOKEN"),
        var("TOOLHOST_OCI_USERNAME"),
        var("TOOLHOST_OCI_PASSWORD"),
    ) {
        (Some(token), _, _) => Some(RegistryLogin::Bearer(token)),
        (None, Some(username), Some(password)) => Some(RegistryLogin::Basic { username, password }),
        (None, Some(_), None) | (None, None, Some(_)) => {
            return Err(UsageError(anyhow::anyhow!(
                "set both TOOLHOST_OCI_USERNAME and TOOLHOST_OCI_PASSWORD (or TOOLHOST_OCI_TOKEN)"
            ))
            .into());
        }
        (None, None, None) => None,
    };
    if let Some(login) = login {
        config
            .oci
            .credentials
            .set(reference.registry().to_owned(), login);
    }
    let registry = Registry::new(&config.oci).map_err(|e| UsageError(e.into()))?;
    Ok((registry, config))
}

fn parse(reference: &str) -> anyhow::Result<OciReference> {
    reference
        .parse()
        .map_err(|e: OciError| UsageError(e.into()).into())
}

fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

pub async fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let reference = parse(&args.reference)?;
    let name = match args.name {
        Some(name) => name,
        None => reference.default_name().map_err(|e| UsageError(e.into()))?,
    };
    toolhost::oci::check_name(&name).map_err(|e| UsageError(e.into()))?;
    let config = args.plugins.host_config().map_err(UsageError)?;
    let (registry, config) = registry(config, &reference)?;
    let artifact = registry.pull(&reference, &config.plugins).await?;
    let dir = &args.plugins.plugins;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the plugin directory {}: {e}", shown(dir)))?;
    let wasm = artifact.write_to(dir, &name)?;
    let pinned = reference.at_digest(artifact.digest());
    let with = match (artifact.has_manifest(), artifact.is_signed()) {
        (true, true) => " with its manifest and signature",
        (true, false) => " with its manifest, unsigned",
        (false, true) => " with its signature, no manifest",
        (false, false) => ", no manifest, unsigned",
    };
    eprintln!(
        "pulled {} into {}{with}; component sha256 {}; pin it with `toolhost lock {}` or as ref = \"{pinned}\"",
        escape_controls(&reference.to_string()),
        shown(&wasm),
        artifact.component_digest(),
        shown(dir),
    );
    println!("{pinned}");
    Ok(ExitCode::SUCCESS)
}

pub async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let reference = parse(&args.reference)?;
    let config = match &args.config {
        Some(path) => HostConfig::from_file(path).map_err(|e| UsageError(e.into()))?,
        None => HostConfig::default(),
    };
    let mut config = config;
    super::default_docker_config(&mut config);
    let (registry, config) = registry(config, &reference)?;
    let digest = registry
        .push(&args.wasm, &reference, &config.plugins)
        .await
        .map_err(|e| match e {
            e @ OciError::Read { .. } => anyhow::Error::from(UsageError(e.into())),
            e => e.into(),
        })?;
    let pinned = reference.at_digest(&digest);
    eprintln!(
        "pushed {} as {}",
        shown(&args.wasm),
        escape_controls(&reference.to_string())
    );
    println!("{pinned}");
    Ok(ExitCode::SUCCESS)
}
