//! `[oci]`: plugins the operator declares by OCI reference, and how the
//! host talks to registries (see [`oci`](crate::oci)).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

/// How the host reaches OCI registries, and the plugins it pulls from them
/// (`[oci]` and `[[oci.plugins]]`).
///
/// ```toml
/// [oci]
/// ca_file = "registry-ca.pem"          # trusted besides the system roots
/// plain_http = ["registry.lan:5000"]   # plain HTTP besides loopback
/// docker_config = "/home/me/.docker/config.json"
/// [[oci.plugins]]
/// ref = "oci://ghcr.io/acme/calc:1.2@sha256:<64 hex digits>"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OciConfig {
    /// A PEM file of CA certificates trusted besides the system's roots
    /// (a registry with a private CA). Relative: to the host config file.
    pub ca_file: Option<PathBuf>,
    /// Registries (`host:port`) reached over plain HTTP. Loopback
    /// registries (`localhost`, `127.0.0.0/8`) always are; any other
    /// is HTTPS unless listed here.
    pub plain_http: Vec<String>,
    /// A Docker `config.json` whose `auths` give credentials per registry.
    /// Relative: to the host config file. The CLI uses
    /// `$DOCKER_CONFIG/config.json` or `~/.docker/config.json` when unset.
    pub docker_config: Option<PathBuf>,
    /// Plugins pulled from registries (`[[oci.plugins]]`), fetched once into
    /// `cache_dir` by digest and loaded from there, offline afterwards.
    pub plugins: Vec<OciPluginDecl>,
    /// Credentials given in code or by the CLI (never read from a file):
    /// they win over `docker_config`. `Debug` shows registries only.
    #[serde(skip)]
    pub credentials: RegistryCredentials,
}

/// One `[[oci.plugins]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciPluginDecl {
    /// `oci://REGISTRY/REPOSITORY:TAG`, `...@sha256:DIGEST` or both (the
    /// digest then wins: the pin).
    #[serde(rename = "ref")]
    pub reference: String,
    /// The plugin's name (its tools' owner, its lock entry); default: the
    /// repository's last segment.
    #[serde(default)]
    pub name: Option<String>,
}

/// A login at one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum RegistryLogin {
    /// HTTP basic credentials (also what a registry's token service is
    /// asked with).
    Basic {
        /// The user name.
        username: String,
        /// The password or access token.
        password: String,
    },
    /// A bearer token sent as it is.
    Bearer(String),
}

impl fmt::Debug for RegistryLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Self::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// Logins by registry (`host[:port]`): each is sent to its own registry
/// only. `Debug` never shows a secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RegistryCredentials {
    logins: BTreeMap<String, RegistryLogin>,
}

impl RegistryCredentials {
    /// Use `login` for `registry` (`host[:port]`), replacing what was there.
    pub fn set(&mut self, registry: impl Into<String>, login: RegistryLogin) {
        self.logins.insert(registry.into(), login);
    }

    /// The login for `registry`, if one is given.
    pub fn get(&self, registry: &str) -> Option<&RegistryLogin> {
        self.logins.get(registry)
    }
}

impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.logins.iter()).finish()
    }
}
