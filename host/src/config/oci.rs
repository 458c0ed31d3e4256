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
/// credential_origins = ["https://auth.docker.io"]  # token services a login may go to
/// fetch_timeout_secs = 60              # each [[oci.plugins]] fetch, start to end
/// [[oci.plugins]]
/// ref = "oci://ghcr.io/acme/calc:1.2@sha256:<64 hex digits>"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    /// Origins (`https://host[:port]`) besides a registry's own that its
    /// login may be sent to, when the registry's `401` names a token
    /// service (`realm`) there: Docker Hub's is `https://auth.docker.io`.
    /// A realm on any other origin gets no login: the pull fails and says
    /// which origin to add here. A plain-HTTP realm gets a login only on
    /// loopback, or at the registry's own origin when the registry is in
    /// `plain_http`. Default: none.
    pub credential_origins: Vec<String>,
    /// How long fetching one `[[oci.plugins]]` entry may take in all
    /// (resolving its tag, its manifest, every blob); past it the plugin is
    /// skipped with an error and the others load. Default 60.
    pub fetch_timeout_secs: u64,
    /// Plugins pulled from registries (`[[oci.plugins]]`), fetched once into
    /// `cache_dir` by digest and loaded from there, offline afterwards.
    pub plugins: Vec<OciPluginDecl>,
    /// Credentials given in code or by the CLI (never read from a file):
    /// they win over `docker_config`. `Debug` shows registries only.
    #[serde(skip)]
    pub credentials: RegistryCredentials,
}

impl Default for OciConfig {
    fn default() -> Self {
        Self {
            ca_file: None,
            plain_http: Vec::new(),
            docker_config: None,
            credential_origins: Vec::new(),
            fetch_timeout_secs: 60,
            plugins: Vec::new(),
            credentials: RegistryCredentials::default(),
        }
    }
}

impl OciConfig {
    /// Check the values; a message naming the key and what to do.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.fetch_timeout_secs == 0 {
            return Err(
                "`oci.fetch_timeout_secs` = 0 leaves no time to fetch a plugin; give at least 1"
                    .into(),
            );
        }
        for origin in &self.credential_origins {
            credential_origin(origin)?;
        }
        Ok(())
    }
}

/// An entry of `oci.credential_origins` as `(scheme, host, port)`.
///
/// # Errors
///
/// A message naming the key when it is not `http(s)://host[:port]`.
pub(crate) fn credential_origin(origin: &str) -> Result<(String, String, u16), String> {
    let bad = |why: &str| {
        format!(
            "`oci.credential_origins` entry {origin:?} {why}; give an origin such as \"https://auth.docker.io\""
        )
    };
    let url = reqwest::Url::parse(origin).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("is not http or https"));
    }
    if !matches!(url.path(), "" | "/") || url.query().is_some() || !url.username().is_empty() {
        return Err(bad("has more than scheme, host and port"));
    }
    let host = url.host_str().ok_or_else(|| bad("has no host"))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| bad("has no port"))?;
    Ok((url.scheme().to_owned(), host.to_ascii_lowercase(), port))
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
