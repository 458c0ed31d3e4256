//! Declared OCI plugins in the cache: `CACHE/oci/<digest>-<name>/NAME.wasm`
//! (with its manifest and signature), written once per digest through a
//! temporary directory and a rename, and `CACHE/oci/tags/<hash of the
//! reference>` holding the digest a tag last resolved to, for starts
//! without the network.

use std::path::{Path, PathBuf};

use super::{OciError, OciReference, Registry, reference};
use crate::config::OciPluginDecl;
use crate::signing::Sha256Digest;
use crate::tools::PluginBudget;

/// The `NAME.wasm` of the plugin `decl` declares, from the cache under
/// `cache_root`, pulled into it first when that digest is not there yet.
pub(super) async fn fetch(
    registry: &Registry,
    decl: &OciPluginDecl,
    cache_root: &Path,
    budget: &PluginBudget,
) -> Result<PathBuf, OciError> {
    let reference: OciReference = decl.reference.parse()?;
    let name = match &decl.name {
        Some(name) => {
            reference::check_name(name)?;
            name.clone()
        }
        None => reference.default_name()?,
    };
    let root = cache_root.join("oci");
    make_private_dir(&root).map_err(write_error(&root))?;
    let digest = resolve_digest(registry, &reference, &root).await?;
    let hex = digest
        .strip_prefix("sha256:")
        .and_then(|hex| hex.parse::<Sha256Digest>().ok())
        .ok_or_else(|| OciError::Layout {
            reference: reference.to_string(),
            message: format!(
                "the registry named digest `{}`; only sha256 digests are supported",
                crate::text::untrusted(&digest, 160)
            ),
        })?;
    let dir = root.join(format!("{hex}-{name}"));
    let wasm = dir.join(format!("{name}.wasm"));
    if wasm.is_file() {
        return Ok(wasm);
    }
    let artifact = registry
        .pull(&reference.at_digest(&format!("sha256:{hex}")), budget)
        .await?;
    let temp = root.join(format!(
        ".{hex}-{name}.{:016x}.partial",
        rand::random::<u64>()
    ));
    make_private_dir(&temp).map_err(write_error(&root))?;
    let written = artifact
        .write_to(&temp, &name)
        .and_then(|_| std::fs::rename(&temp, &dir).map_err(write_error(&root)));
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
        // Another process may have put the same digest there first.
        if wasm.is_file() {
            return Ok(wasm);
        }
    }
    written.map(|()| wasm)
}

/// A write under the cache directory `root` failed.
fn write_error(root: &Path) -> impl Fn(std::io::Error) -> OciError + '_ {
    move |source| OciError::Write {
        path: root.to_owned(),
        source,
    }
}

/// The digest `reference` names, or else the one its tag resolves to now
/// (remembered under `root/tags`), or, when the registry cannot be reached
/// or refuses for now, the one the tag last resolved to.
async fn resolve_digest(
    registry: &Registry,
    reference: &OciReference,
    root: &Path,
) -> Result<String, OciError> {
    if let Some(digest) = reference.digest() {
        return Ok(digest.to_owned());
    }
    let tag_file = root
        .join("tags")
        .join(Sha256Digest::of(reference.to_string().as_bytes()).to_string());
    match registry.resolve(reference).await {
        Ok(digest) => {
            make_private_dir(&root.join("tags")).map_err(write_error(root))?;
            super::files::write_atomic(&tag_file, digest.as_bytes()).map_err(write_error(root))?;
            Ok(digest)
        }
        Err(
            e @ (OciError::Registry {
                unreachable: true, ..
            }
            | OciError::TooManyRequests { .. }),
        ) => match std::fs::read_to_string(&tag_file) {
            Ok(digest) => {
                tracing::warn!(
                    "{reference}: the registry cannot be reached ({e}); using {digest}, what the tag last resolved to"
                );
                Ok(digest)
            }
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Every plugin `config` declares (`[[oci.plugins]]`), each fetched through
/// the cache under `cache_dir`: the `NAME.wasm` of those that could be,
/// and why the others could not. Each fetch has `oci.fetch_timeout_secs`
/// in all; one past it is given up ([`OciError::Deadline`]).
pub async fn fetch_declared(
    config: &crate::config::OciConfig,
    cache_dir: Option<&Path>,
    budget: &PluginBudget,
) -> (Vec<PathBuf>, Vec<OciError>) {
    if config.plugins.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let Some(cache_dir) = cache_dir else {
        return (Vec::new(), vec![OciError::NoCache]);
    };
    let registry = match Registry::new(config) {
        Ok(registry) => registry,
        Err(e) => return (Vec::new(), vec![e]),
    };
    // Each fetch on a deadline of its own: a registry that drips bytes
    // (every read on time, the whole never done) costs its plugin, not
    // the start.
    let deadline = std::time::Duration::from_secs(config.fetch_timeout_secs);
    let registry = &registry;
    let fetches = config.plugins.iter().map(|decl| async move {
        tokio::time::timeout(deadline, fetch(registry, decl, cache_dir, budget))
            .await
            .unwrap_or_else(|_| {
                Err(OciError::Deadline {
                    reference: crate::text::untrusted(&decl.reference, 256),
                    secs: config.fetch_timeout_secs,
                })
            })
    });
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for result in futures::future::join_all(fetches).await {
        match result {
            Ok(path) => found.push(path),
            Err(e) => errors.push(e),
        }
    }
    (found, errors)
}
