//! The operator's config (`toolhost.toml`): defaults and ceilings for
//! every plugin, what manifests may be granted, the integrity policy, and
//! the tool sources the operator declares (`[[rest]]`, `[[mcp]]`).
//!
//! [`HostConfig::from_file`] reads one, resolving every relative path
//! against the file's directory and checking every value, with errors that
//! name the file and the key. A program can also build one in code
//! ([`HostConfig::default`] and the builder methods). Tool sources never
//! see the whole config: each gets the narrow part it uses (the egress
//! policy, the budgets, the environment).

mod auth;
mod file;
mod oci;

use std::path::PathBuf;

use serde::Deserialize;

use crate::approval::ApprovalPolicy;
use crate::egress::{Egress, HttpOrigin};
use crate::environ::Environment;
use crate::mcp::{McpDecl, McpRules};
use crate::sandbox::{HttpGrant, LimitError, Limits, LimitsSpec, MemoryInit};
use crate::signing::PublicKey;
use crate::tasks::TasksConfig;
use crate::telemetry::TelemetryConfig;
use crate::tools::PluginBudget;
use crate::tools::rest::{RestDecl, RestRules};

pub use auth::{AuthConfig, AuthRule};
pub use file::ConfigError;
pub(crate) use oci::credential_origin;
pub use oci::{OciConfig, OciPluginDecl, RegistryCredentials, RegistryLogin};

/// The operator's config (`toolhost.toml`): defaults for every plugin and
/// the most any manifest may ask for.
///
/// ```toml
/// cache_dir = "/var/cache/toolhost"
/// max_instances = 1000
/// spare_instances = 2
/// session_idle_ttl_secs = 600
/// max_sessions = 500
/// [limits.default]
/// timeout_ms = 5000
/// [limits.max]
/// memory_mb = 512
/// [allow]
/// dirs = ["/srv/tool-data"]      # read-only grants must be inside one of these
/// rw_dirs = ["/srv/tool-scratch"] # read-write grants must be inside one of these
/// env = ["LANG", "TZ"]
/// [integrity]
/// lock_file = "toolhost.lock"     # relative to this file
/// require_signatures = false
/// trusted_keys = []
/// [[rest]]                        # a REST endpoint as a tool (crate::tools::rest)
/// name = "weather"
/// description = "Today's weather in a city."
/// url = "https://api.example.com/weather/{city}"
/// input_schema = { type = "object", properties.city.type = "string" }
/// [[mcp]]                         # an MCP server's tools (crate::mcp)
/// name = "time"
/// command = "python3"
/// args = ["-m", "mcp_server_time"]
/// [[oci.plugins]]                 # a plugin pulled from a registry (crate::oci)
/// ref = "oci://ghcr.io/acme/calc:1.2"
/// [approval]                      # calls a person approves first (crate::approval)
/// require = ["delete_*", "fs_write"]
/// [telemetry]                     # traces and metrics (crate::telemetry)
/// endpoint = "http://127.0.0.1:4318"
/// [tasks]                         # calls that outlive a request (crate::tasks)
/// ttl_secs = 3600
/// [auth]                          # OAuth access tokens for `serve --http` (AuthConfig)
/// resource = "https://tools.example.com/mcp"
/// issuer = "https://login.example.com"
/// jwks_uri = "https://login.example.com/jwks"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// How long a plugin file must have gone unwritten before the cache
    /// knows it by its file stamp (device, inode, size and times) instead
    /// of reading and hashing it at each load. A write within one tick of
    /// the file times' granularity can leave them as they were, so the
    /// default, 2000, is over the coarsest one (FAT's 2 s); on file
    /// systems with fine times (ext4, XFS, btrfs, tmpfs) 10 is enough, and
    /// 0 trusts a stamp taken after the file's last write. The integrity
    /// checks never use stamps.
    pub cache_stamp_settle_ms: u64,
    /// Instance slots: calls running at once, live sessions and spares.
    pub max_instances: u32,
    /// Fresh instances kept ready per plugin once it is called, so a call
    /// does not wait for instantiation and the used instance is dropped in
    /// the background. Each serves one call, as any fresh instance. Each
    /// holds an instance slot and the memory its start-up touched; 0 turns
    /// this off. Default 2 (enough for two calls at once).
    pub spare_instances: u32,
    /// How fresh instances get their initial memory: mapped copy-on-write
    /// (`cow`, the default) or copied when the instance is made (`copy`,
    /// faster calls when spare instances make them ahead of time).
    pub memory_init: MemoryInit,
    /// Default idle time after which a session's instance is dropped.
    pub session_idle_ttl_secs: u64,
    /// Live sessions of stateful plugins at most, across every plugin of
    /// the host: each holds an instance slot, so this stays below
    /// `max_instances` and a flood of conversations cannot take every slot.
    /// At the cap, a new session evicts the least recently used idle one
    /// (its state is lost); when every live session has a call in flight,
    /// the new session's call fails with `busy`. `None` (the default): half
    /// of `max_instances`, at least 1.
    pub max_sessions: Option<u32>,
    /// Default and maximum limits.
    pub limits: HostLimits,
    /// What manifests may be granted.
    pub allow: Allow,
    /// Budgets on what plugins hand the host: their files and their tool
    /// lists (`[plugins]`).
    pub plugins: PluginBudget,
    /// Which component bytes may run: the lock file and trusted signers
    /// (`[integrity]`).
    pub integrity: IntegrityPolicy,
    /// REST endpoints as tools (`[[rest]]`), the operator's own: see
    /// [`rest`](crate::tools::rest).
    pub rest: Vec<RestDecl>,
    /// MCP servers whose tools join the registry (`[[mcp]]`), the
    /// operator's own: see [`mcp`](crate::mcp).
    pub mcp: Vec<McpDecl>,
    /// Registries and the plugins pulled from them (`[oci]`,
    /// `[[oci.plugins]]`): see [`oci`](crate::oci).
    pub oci: OciConfig,
    /// Which tools' calls a person approves before they run
    /// (`[approval] require`, tool name patterns): see
    /// [`approval`](crate::approval). Default: none.
    pub approval: ApprovalPolicy,
    /// Traces and metrics (`[telemetry]`): see
    /// [`telemetry`](crate::telemetry).
    pub telemetry: TelemetryConfig,
    /// Calls that outlive a request (`[tasks]`): the store, TTL, deadline,
    /// budgets and which tools may be tasks: see [`tasks`](crate::tasks).
    pub tasks: TasksConfig,
    /// `toolhost serve --http` as an OAuth 2.1 resource server (`[auth]`):
    /// see [`AuthConfig`]. Default: none.
    pub auth: Option<AuthConfig>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            cache_stamp_settle_ms: 2000,
            max_instances: 1000,
            spare_instances: 2,
            memory_init: MemoryInit::default(),
            session_idle_ttl_secs: 600,
            max_sessions: None,
            limits: HostLimits::default(),
            allow: Allow::default(),
            plugins: PluginBudget::default(),
            integrity: IntegrityPolicy::default(),
            rest: Vec::new(),
            mcp: Vec::new(),
            oci: OciConfig::default(),
            approval: ApprovalPolicy::default(),
            telemetry: TelemetryConfig::default(),
            tasks: TasksConfig::default(),
            auth: None,
        }
    }
}

impl HostConfig {
    /// The live-session cap in effect: `max_sessions`, or half of
    /// `max_instances` (at least 1).
    pub fn effective_max_sessions(&self) -> u32 {
        self.max_sessions.unwrap_or((self.max_instances / 2).max(1))
    }
}

/// Default and maximum limits in a host config.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostLimits {
    /// Overrides of [`Limits::default`] for plugins that do not say.
    pub default: LimitsSpec,
    /// Overrides of [`Limits::default_ceiling`]: the most a manifest may ask.
    pub max: LimitsSpec,
}

impl HostLimits {
    /// The effective default limits.
    ///
    /// # Errors
    ///
    /// A value in `[limits.default]` is out of range.
    pub fn default_limits(&self) -> Result<Limits, LimitError> {
        self.default.apply_to(Limits::default())
    }

    /// The effective ceiling.
    ///
    /// # Errors
    ///
    /// A value in `[limits.max]` is out of range.
    pub fn ceiling(&self) -> Result<Limits, LimitError> {
        self.max.apply_to(Limits::default_ceiling())
    }
}

/// What the operator lets manifests grant. Empty: nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Allow {
    /// Roots under which read-only directory grants are allowed.
    pub dirs: Vec<PathBuf>,
    /// Roots under which read-write directory grants are allowed.
    pub rw_dirs: Vec<PathBuf>,
    /// Environment variable names that may be passed through.
    pub env: Vec<String>,
    /// Origin patterns bounding what a manifest's `[permissions] http` may
    /// ask for: each origin asked must be covered by one of these
    /// ([`HttpOrigin::covers`]).
    pub http: Vec<HttpOrigin>,
    /// Let plugins granted HTTP reach loopback, private, link-local and
    /// other non-public addresses (checked on the resolved address, not the
    /// name). Off by default: a name in an allowed pattern could otherwise
    /// lead to the host itself, the cloud metadata service or the LAN.
    pub http_private: bool,
    /// The values variables have: what the program (or the CLI, from its
    /// own environment) gives ([`HostConfig::env`],
    /// [`HostConfig::environment`]). The library never reads the process
    /// environment, so a granted variable without a value here is absent.
    /// Not read from config files; `Debug` never shows a value.
    #[serde(skip)]
    pub env_values: Environment,
}

impl Allow {
    /// The HTTP grant for a manifest asking for `asked`, or why not: the
    /// first origin no allowed pattern covers, with what is allowed.
    pub(crate) fn http_grant(&self, asked: &[HttpOrigin]) -> Result<HttpGrant, String> {
        for origin in asked {
            if !self.http.iter().any(|allowed| allowed.covers(origin)) {
                let allowed = if self.http.is_empty() {
                    "none".to_owned()
                } else {
                    let all: Vec<String> = self.http.iter().map(ToString::to_string).collect();
                    crate::text::clip(&all.join(", "), 1024).into_owned()
                };
                return Err(format!(
                    "`permissions.http` asks for {origin}, which `allow.http` in the host config does not cover (allowed: {allowed}); add it there, or pass --allow-http {origin}"
                ));
            }
        }
        Ok(HttpGrant {
            origins: asked.to_vec(),
            private_addresses: self.http_private && !asked.is_empty(),
        })
    }
}

impl HostConfig {
    /// Cache compiled components in `dir` (it must be private to the user).
    #[must_use]
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Trust a plugin file's stamp once it has gone unwritten for `settle`
    /// ([`cache_stamp_settle_ms`](Self::cache_stamp_settle_ms)).
    #[must_use]
    pub fn cache_stamp_settle(mut self, settle: std::time::Duration) -> Self {
        self.cache_stamp_settle_ms = u64::try_from(settle.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Allow read-only directory grants inside `root`.
    #[must_use]
    pub fn allow_dir(mut self, root: impl Into<PathBuf>) -> Self {
        self.allow.dirs.push(root.into());
        self
    }

    /// Allow read-write (and read-only) directory grants inside `root`.
    #[must_use]
    pub fn allow_rw_dir(mut self, root: impl Into<PathBuf>) -> Self {
        self.allow.rw_dirs.push(root.into());
        self
    }

    /// Allow manifests to be granted the process's variable `name`.
    #[must_use]
    pub fn allow_env(mut self, name: impl Into<String>) -> Self {
        self.allow.env.push(name.into());
        self
    }

    /// Allow manifests to ask for HTTP origins within `pattern`.
    ///
    /// ```
    /// use toolhost::config::HostConfig;
    ///
    /// let config = HostConfig::default().allow_http("https://*.example.org".parse().unwrap());
    /// assert_eq!(config.allow.http[0].to_string(), "https://*.example.org");
    /// ```
    #[must_use]
    pub fn allow_http(mut self, pattern: HttpOrigin) -> Self {
        self.allow.http.push(pattern);
        self
    }

    /// Let HTTP requests reach loopback, private and link-local addresses
    /// (`allow.http_private`): for servers on this machine or the LAN.
    #[must_use]
    pub fn allow_http_private(mut self) -> Self {
        self.allow.http_private = true;
        self
    }

    /// Allow manifests to be granted variable `name`, with `value` (not the
    /// process's): how an embedder hands a plugin a setting or a secret
    /// without touching its own environment.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.allow.env_values.set(name.clone(), value);
        self.allow.env.push(name);
        self
    }

    /// Take variable values from `env` (e.g. the program's own,
    /// `Environment::from_vars(std::env::vars())`), without granting any:
    /// the names a manifest, a REST header or an MCP server may use are
    /// still only those `allow.env` (or the declaration) names. A value
    /// given with [`env`](Self::env) wins.
    #[must_use]
    pub fn environment(mut self, env: Environment) -> Self {
        let given = std::mem::take(&mut self.allow.env_values);
        self.allow.env_values = env;
        for name in &self.allow.env {
            if let Some(value) = given.get(name) {
                self.allow.env_values.set(name.clone(), value);
            }
        }
        self
    }

    /// The part of this config REST tools are held to.
    pub fn rest_rules(&self) -> RestRules {
        RestRules {
            egress: self.egress(),
            allowed_env: self.allow.env.clone(),
            env: self.allow.env_values.clone(),
            budget: self.plugins,
            pinned: self.integrity.lock_file.is_some() || self.integrity.require_signatures,
        }
    }

    /// The part of this config MCP servers (`[[mcp]]`) are held to.
    pub fn mcp_rules(&self) -> McpRules {
        McpRules {
            env: self.allow.env_values.clone(),
            budget: self.plugins,
            tasks: self.tasks.clone(),
        }
    }

    /// The egress policy of REST tools and plugins' HTTP grants.
    pub fn egress(&self) -> Egress {
        Egress {
            origins: self.allow.http.clone(),
            private_addresses: self.allow.http_private,
        }
    }
}

/// The operator's integrity policy (`[integrity]` in the host config). The
/// default checks nothing but the pins manifests carry.
///
/// ```toml
/// [integrity]
/// lock_file = "/etc/toolhost/toolhost.lock"  # relative: to the host config's directory
/// require_signatures = true
/// trusted_keys = ["ed25519:<64 hex digits>"]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntegrityPolicy {
    /// The lock file ([`Lock`](crate::plugin::integrity::Lock)): only the plugins it lists load, and only
    /// with the component and manifest it pins. Read once, when the
    /// [`PluginHost`](crate::plugin::PluginHost) is made, from this path as given
    /// ([`HostConfig::from_file`] resolves a relative path in the file
    /// against the file's directory). `None`: no lock.
    pub lock_file: Option<PathBuf>,
    /// Refuse every plugin without a valid signature by one of
    /// `trusted_keys`. Off: a signature by a trusted key is still checked
    /// (a bad one refuses the plugin), and a plugin without one loads.
    pub require_signatures: bool,
    /// Keys whose signatures are trusted (`ed25519:<hex>`).
    pub trusted_keys: Vec<PublicKey>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_settings_parse_and_the_cap_defaults_to_half_the_instances() {
        let config: HostConfig =
            toml::from_str("max_instances = 40\nsession_idle_ttl_secs = 5\nmax_sessions = 8")
                .expect("valid host config");
        assert_eq!(config.max_sessions, Some(8));
        assert_eq!(config.effective_max_sessions(), 8);
        let config: HostConfig = toml::from_str("max_instances = 40").expect("valid host config");
        assert_eq!(config.effective_max_sessions(), 20);
        let config: HostConfig = toml::from_str("max_instances = 1").expect("valid host config");
        assert_eq!(config.effective_max_sessions(), 1);
        let e = toml::from_str::<HostConfig>("max_session = 8").expect_err("a typo is refused");
        assert!(e.to_string().contains("max_session"), "{e}");
    }
}
