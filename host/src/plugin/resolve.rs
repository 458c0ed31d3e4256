//! A plugin's manifest, read within its budget and checked against the
//! operator's config: the limits, grants and execution options it gets.

use std::path::{Path, PathBuf};

use super::{DirSpec, Manifest, PluginError, PluginHost, integrity};
use crate::fsread::read_regular;
use crate::sandbox::{DirGrant, EnvVar, Limits, Permissions};
use crate::text;
use crate::tools::PluginBudget;

/// What a manifest resolves to.
pub(super) struct Resolved {
    pub(super) limits: Limits,
    pub(super) permissions: Permissions,
    pub(super) exec: crate::tools::ExecOptions,
}

impl PluginHost {
    /// Check a manifest against the operator's config and resolve its paths.
    pub(super) fn resolve(
        &self,
        manifest: &Manifest,
        manifest_path: &Path,
    ) -> Result<Resolved, PluginError> {
        let limits =
            manifest
                .limits
                .apply_to(self.defaults)
                .map_err(|e| PluginError::Manifest {
                    path: manifest_path.to_owned(),
                    message: format!("[limits] {e}; lower it"),
                })?;
        limits
            .check_ceiling(&self.ceiling)
            .map_err(|over| not_allowed(manifest_path, over.to_string()))?;
        let env = self.env_grants(manifest, manifest_path)?;
        let base = manifest_path.parent().unwrap_or(Path::new("."));
        let dirs = manifest
            .permissions
            .dirs
            .iter()
            .map(|dir| self.dir_grant(dir, base, manifest_path))
            .collect::<Result<Vec<_>, _>>()?;
        let http = self
            .config
            .allow
            .http_grant(&manifest.permissions.http)
            .map_err(|message| not_allowed(manifest_path, message))?;
        let manifest_error = |message: String| PluginError::Manifest {
            path: manifest_path.to_owned(),
            message,
        };
        let exec = manifest
            .exec
            .options()
            .map_err(|e| manifest_error(e.to_string()))?;
        if let Some(version) = &manifest.version
            && !crate::tools::is_valid_version(version)
        {
            return Err(manifest_error(format!(
                "version = {:?} is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `.`, `_`, `-` and `+`, e.g. \"1.2.0\"",
                crate::text::clip(version, 80)
            )));
        }
        Ok(Resolved {
            limits,
            permissions: Permissions { dirs, env, http },
            exec,
        })
    }

    /// The environment variables the manifest asks for, each one the
    /// operator allows, with the value the program gave.
    fn env_grants(
        &self,
        manifest: &Manifest,
        manifest_path: &Path,
    ) -> Result<Vec<EnvVar>, PluginError> {
        let allow = &self.config.allow;
        let mut env = Vec::new();
        for key in &manifest.permissions.env {
            if !allow.env.contains(key) {
                return Err(not_allowed(
                    manifest_path,
                    format!(
                        "environment variable `{key}` is not allowed; add it to `allow.env` in the host config (or pass --allow-env {key})"
                    ),
                ));
            }
            // The grant is the operator's explicit decision to pass this
            // variable through, with the value the program gave (the CLI
            // gives its own environment); an unset variable is absent.
            if let Some(value) = allow.env_values.get(key) {
                env.push(EnvVar::new(key.clone(), value));
            }
        }
        Ok(env)
    }

    /// The directory `dir` asks for (relative to `base`, the manifest's
    /// directory), opened once it is inside a root the operator allows for
    /// its mode.
    fn dir_grant(
        &self,
        dir: &DirSpec,
        base: &Path,
        manifest_path: &Path,
    ) -> Result<DirGrant, PluginError> {
        let allow = &self.config.allow;
        let wanted = base.join(&dir.host);
        let host = wanted.canonicalize().map_err(|e| PluginError::Manifest {
            path: manifest_path.to_owned(),
            message: format!(
                "granted directory {} cannot be opened: {e}",
                wanted.display()
            ),
        })?;
        if !host.is_dir() {
            return Err(PluginError::Manifest {
                path: manifest_path.to_owned(),
                message: format!("granted path {} is not a directory", host.display()),
            });
        }
        if !dir.guest.starts_with('/') {
            return Err(PluginError::Manifest {
                path: manifest_path.to_owned(),
                message: format!("guest path `{}` must be absolute, like `/data`", dir.guest),
            });
        }
        let roots: Vec<&PathBuf> = if dir.rw {
            allow.rw_dirs.iter().collect()
        } else {
            allow.dirs.iter().chain(&allow.rw_dirs).collect()
        };
        let inside = roots
            .iter()
            .any(|root| root.canonicalize().is_ok_and(|root| host.starts_with(root)));
        if !inside {
            let (mode, key, flag) = if dir.rw {
                ("read-write", "allow.rw_dirs", "--allow-rw-dir")
            } else {
                ("read-only", "allow.dirs", "--allow-dir")
            };
            return Err(not_allowed(
                manifest_path,
                format!(
                    "{mode} access to {} is not allowed; add it (or a parent) to `{key}` in the host config, or pass {flag}",
                    host.display()
                ),
            ));
        }
        // Opened now, and every call maps this very directory: a
        // symlink swapped in later cannot widen the grant.
        DirGrant::open(host, dir.guest.clone(), dir.rw).map_err(|e| PluginError::Manifest {
            path: manifest_path.to_owned(),
            message: format!("granted directory cannot be opened: {e}"),
        })
    }
}

/// The manifest at `manifest_path` asks for what the operator's config
/// does not allow.
fn not_allowed(manifest_path: &Path, message: String) -> PluginError {
    PluginError::NotAllowed {
        path: manifest_path.to_owned(),
        message,
    }
}

/// The manifest beside `wasm` (`NAME.toml`), or the default one, with the
/// SHA-256 of the bytes parsed.
pub(super) fn read_manifest(
    wasm: &Path,
    budget: &PluginBudget,
) -> Result<(Manifest, Option<PathBuf>, Option<integrity::Sha256Digest>), PluginError> {
    let path = wasm.with_extension("toml");
    let bytes = match read_regular(
        &path,
        budget.max_manifest_bytes,
        "plugins.max_manifest_bytes",
    ) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Manifest::default(), None, None));
        }
        Err(error) => return Err(PluginError::Read { path, error }),
    };
    // Lines kept: a TOML error points at its column on the line below.
    let invalid = |message: String| PluginError::Manifest {
        path: path.clone(),
        message: text::untrusted_lines(&message, 1024),
    };
    let digest = integrity::Sha256Digest::of(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8 text".into()))?;
    let manifest = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    Ok((manifest, Some(path), Some(digest)))
}
