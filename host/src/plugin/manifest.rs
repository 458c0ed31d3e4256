//! The sidecar manifest (`NAME.toml` beside `NAME.wasm`): plain serde data,
//! bounded by the operator's [`HostConfig`](crate::config::HostConfig).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::egress::HttpOrigin;
use crate::sandbox::LimitsSpec;
use crate::signing::Sha256Digest;
use crate::tasks::TaskSupport;
use crate::tools::ExecOverrides;

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
/// resource_schemes = ["notes"] # its resources' URI schemes (contract 0.3)
/// [ui]                      # MCP Apps: a tool's interactive view
/// chart_draw = "ui://chart/view.html"  # one of its own resources
/// [task]                    # its tools as MCP tasks (crate::tasks)
/// support = "optional"      # forbidden (default) | optional | required
/// deadline_secs = 1800      # how long a task may run; default and max: the host's [tasks]
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
    pub exec: ExecOverrides,
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
    /// Whether its tools run as tasks, and for how long.
    #[serde(default)]
    pub task: TaskSpec,
    /// The URI schemes of the resources and templates it offers (contract
    /// 0.3), besides its own name (`_` as `-`): a URI of any other scheme
    /// is refused, so that each URI names its plugin (docs/resources.md,
    /// "From a plugin").
    #[serde(default)]
    pub resource_schemes: Vec<String>,
    /// MCP Apps: per tool, the `ui://` resource that shows it (tool name
    /// to URI). Each URI must be one the plugin lists among its resources,
    /// with the Apps MIME type, under its own authority (`ui://NAME/...`,
    /// its name with `_` as `-`); the load fails otherwise (docs/resources.md,
    /// "MCP Apps").
    #[serde(default)]
    pub ui: BTreeMap<String, String>,
}

/// How a plugin's tools run as tasks (calls that outlive a request): see
/// [`tasks`](crate::tasks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Whether a call may (`optional`) or must (`required`) be a task.
    /// Default `forbidden`; the operator's `[tasks.support]` overrides it.
    #[serde(default)]
    pub support: TaskSupport,
    /// How long one of its tasks may run. Default: the host's
    /// `[tasks] deadline_secs`; never past `[tasks] max_deadline_secs`.
    #[serde(default)]
    pub deadline_secs: Option<u64>,
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
