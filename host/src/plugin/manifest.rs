//! The sidecar manifest (`NAME.toml` beside `NAME.wasm`) and the operator's
//! host config that bounds it. Both are plain serde data.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::integrity::{IntegrityPolicy, Sha256Digest};
use crate::sandbox::{EnvVar, HttpGrant, HttpOrigin, LimitError, Limits, MemoryInit};
use crate::tools::mcp::McpDecl;
use crate::tools::rest::RestDecl;
use crate::tools::{Backoff, ExecOptions, ExecOverrides, MAX_RETRY_PAUSE, ToolErrorKind};

/// How the registry runs the plugin's tools by default (its tools'
/// [`ExecOptions`]); a run or a call may override them. An absent field
/// keeps [`ExecOptions::default`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// An outer deadline per attempt, in milliseconds. It never lengthens
    /// `[limits] timeout_ms`: the smaller one ends the call.
    pub timeout_ms: Option<u64>,
    /// Retries of a call that failed with a kind in `retry_on`, at most
    /// [`ExecSpec::MAX_RETRIES`].
    pub retries: Option<u32>,
    /// The pause before the first retry, in milliseconds (at most
    /// [`MAX_RETRY_PAUSE`]).
    pub retry_delay_ms: Option<u64>,
    /// `"fixed"` or `"exponential"`.
    pub backoff: Option<Backoff>,
    /// The error kinds worth a retry, e.g. `["timeout", "busy"]`.
    pub retry_on: Option<Vec<ToolErrorKind>>,
}

impl ExecSpec {
    /// The most retries a manifest may ask for: each retry is another
    /// full call.
    pub const MAX_RETRIES: u32 = 10;

    /// The options this spec describes.
    ///
    /// # Errors
    ///
    /// A value out of range, with what to do about it.
    pub fn options(&self) -> Result<ExecOptions, String> {
        if let Some(retries) = self.retries
            && retries > Self::MAX_RETRIES
        {
            return Err(format!(
                "[exec] retries = {retries}, the most allowed is {}; lower it",
                Self::MAX_RETRIES
            ));
        }
        let max_delay = u64::try_from(MAX_RETRY_PAUSE.as_millis()).unwrap_or(u64::MAX);
        if let Some(ms) = self.retry_delay_ms
            && ms > max_delay
        {
            return Err(format!(
                "[exec] retry_delay_ms = {ms}, the most allowed is {max_delay}; lower it"
            ));
        }
        if self.timeout_ms == Some(0) {
            return Err("[exec] timeout_ms = 0 would end every call at once; remove it or give a positive deadline".to_owned());
        }
        Ok(ExecOptions::default().with(&ExecOverrides {
            timeout: self.timeout_ms.map(std::time::Duration::from_millis),
            retries: self.retries,
            retry_delay: self.retry_delay_ms.map(std::time::Duration::from_millis),
            backoff: self.backoff,
            retry_on: self.retry_on.clone(),
        }))
    }
}

/// Limits as written in a manifest or host config, in friendly units. An
/// absent field means "the default".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Fuel units per call.
    pub fuel: Option<u64>,
    /// Deadline per call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Linear memory cap, in MiB.
    pub memory_mb: Option<u64>,
    /// Output cap, in KiB.
    pub output_kb: Option<u64>,
    /// HTTP requests per call.
    pub http_requests: Option<u32>,
    /// Cap on all HTTP response bodies of one call, in KiB.
    pub http_response_kb: Option<u64>,
}

impl LimitsSpec {
    /// `base` with every field this spec sets replaced.
    ///
    /// # Errors
    ///
    /// A value whose conversion to bytes or a deadline would overflow, or
    /// that is above the absolute maximum (see [`Limits::ABSOLUTE_MAX_TIMEOUT_MS`]).
    pub fn apply_to(&self, base: Limits) -> Result<Limits, LimitError> {
        Ok(Limits {
            fuel: self.fuel.unwrap_or(base.fuel),
            timeout: match self.timeout_ms {
                Some(ms) => Limits::timeout_from_ms("timeout_ms", ms)?,
                None => base.timeout,
            },
            memory_bytes: match self.memory_mb {
                Some(mb) => Limits::memory_from_mb("memory_mb", mb)?,
                None => base.memory_bytes,
            },
            output_bytes: match self.output_kb {
                Some(kb) => Limits::output_from_kb("output_kb", kb)?,
                None => base.output_bytes,
            },
            http_requests: match self.http_requests {
                Some(n) => Limits::requests_from_count("http_requests", n)?,
                None => base.http_requests,
            },
            http_response_bytes: match self.http_response_kb {
                Some(kb) => Limits::output_from_kb("http_response_kb", kb)?,
                None => base.http_response_bytes,
            },
        })
    }
}

/// A plugin's manifest. Every field is optional; an absent manifest is the
/// same as an empty one: stateless, default limits, no grants.
///
/// ```toml
/// stateful = false
/// version = "1.2.0"           # its tools' version: calc@1.2.0
/// sha256 = "<64 hex digits>"  # load only this exact NAME.wasm
/// [exec]                      # how the registry runs its tools by default
/// timeout_ms = 1000           # outer deadline; never past [limits] timeout_ms
/// retries = 2
/// retry_delay_ms = 100
/// backoff = "exponential"
/// retry_on = ["timeout", "busy", "unavailable"]
/// [limits]
/// fuel = 500000000
/// timeout_ms = 2000
/// memory_mb = 32
/// output_kb = 256
/// http_requests = 4          # per call
/// http_response_kb = 512     # all response bodies of one call
/// [permissions]
/// env = ["LANG"]
/// http = ["https://api.example.com", "https://*.example.org:8443"]
/// [[permissions.dirs]]
/// host = "files.data"   # relative to this manifest's directory, or absolute
/// guest = "/data"
/// rw = false
/// [config]
/// greeting = "hello"
/// [session]
/// idle_ttl_secs = 300
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Keep one instance per session instead of a fresh one per call.
    #[serde(default)]
    pub stateful: bool,
    /// The version of the plugin's tools (see
    /// [`Tool::version`](crate::tools::Tool::version)), e.g. `"1.2.0"`.
    #[serde(default)]
    pub version: Option<String>,
    /// How the registry runs the plugin's tools by default.
    #[serde(default)]
    pub exec: ExecSpec,
    /// The SHA-256 of the one `NAME.wasm` this manifest is for: any other
    /// component is refused (see [`integrity`](super::integrity)).
    #[serde(default)]
    pub sha256: Option<Sha256Digest>,
    /// Limits that replace the operator's defaults (within the operator's max).
    #[serde(default)]
    pub limits: LimitsSpec,
    /// What the plugin asks to be granted.
    #[serde(default)]
    pub permissions: PermissionsSpec,
    /// Values the plugin reads with the `config` host import.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// Session settings for stateful plugins.
    #[serde(default)]
    pub session: SessionSpec,
}

/// Grants a manifest asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSpec {
    /// Environment variables to pass through from the host, by name.
    #[serde(default)]
    pub env: Vec<String>,
    /// Directories to map into the guest.
    #[serde(default)]
    pub dirs: Vec<DirSpec>,
    /// Origins the plugin may send HTTP requests to (through `wasi:http`),
    /// each `scheme://host[:port]` with `*.domain`, `*` and `:*` wildcards:
    /// see [`HttpOrigin`].
    #[serde(default)]
    pub http: Vec<HttpOrigin>,
}

/// One directory a manifest asks for.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirSpec {
    /// Host path, absolute or relative to the manifest's directory.
    pub host: PathBuf,
    /// Path the guest sees, e.g. `/data`.
    pub guest: String,
    /// Read-write instead of read-only.
    #[serde(default)]
    pub rw: bool,
}

/// Session settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// Drop a session's instance after this long unused. Default: the host
    /// config's `session_idle_ttl_secs`.
    pub idle_ttl_secs: Option<u64>,
}

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
/// [[mcp]]                         # an MCP server's tools (crate::tools::mcp)
/// name = "time"
/// command = "python3"
/// args = ["-m", "mcp_server_time"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
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
    /// operator's own: see [`mcp`](crate::tools::mcp).
    pub mcp: Vec<McpDecl>,
}

/// Budgets on plugin-supplied data handled by the host, outside the
/// sandbox: a plugin over one fails to load (with a message naming the
/// key), and the others load. Each tool also goes into every model request,
/// so the tool list is held to what a model can use.
///
/// ```toml
/// [plugins]
/// max_tools = 128
/// max_description_bytes = 4096
/// max_schema_bytes = 65536
/// max_manifest_bytes = 65536
/// max_component_mb = 256
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginBudget {
    /// Tools one plugin may describe.
    pub max_tools: usize,
    /// Bytes of one tool's description.
    pub max_description_bytes: usize,
    /// Bytes of one tool's input schema (JSON text).
    pub max_schema_bytes: usize,
    /// Bytes of a manifest (`NAME.toml`).
    pub max_manifest_bytes: u64,
    /// MiB of a component (`NAME.wasm`).
    pub max_component_mb: u64,
}

impl Default for PluginBudget {
    fn default() -> Self {
        Self {
            max_tools: 128,
            max_description_bytes: 4096,
            max_schema_bytes: 64 << 10,
            max_manifest_bytes: 64 << 10,
            max_component_mb: 256,
        }
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
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
    /// Values for granted variables, given by an embedder
    /// ([`HostConfig::env`]) instead of the process environment; a granted
    /// variable not listed here is read from the process environment. Not
    /// read from config files; `Debug` never shows a value.
    #[serde(skip)]
    pub env_values: Vec<EnvVar>,
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
    /// use toolhost::plugin::HostConfig;
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
        self.allow.env_values.retain(|v| v.name() != name);
        self.allow.env_values.push(EnvVar::new(name.clone(), value));
        self.allow.env.push(name);
        self
    }
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
