//! REST endpoints as tools, declared in data (`[[rest]]` in the host
//! config, or a `NAME.rest.toml` file beside the plugins).
//!
//! A [`RestDecl`] says what the model sees (name, description, input
//! schema) and how an input becomes a request (method, URL template, query,
//! body, headers) and a response an output (a JSON pointer into the body).
//! [`RestTool::new`] checks it against a [`RestPolicy`], the operator's
//! HTTP rules, before anything is sent:
//!
//! - the URL's origin must be on the allow-list (`allow.http`, the list
//!   `--allow-http` fills), and every redirect hop is checked again;
//! - names are resolved by the host, and every address is checked:
//!   loopback, private, link-local and other non-public ranges are refused
//!   unless `allow.http_private` is set; the connection goes to a checked
//!   address (no DNS rebinding). IP literals are checked the same way;
//! - header values come from environment variables named in the
//!   declaration, read once at load, and are never shown. A declaration in
//!   a plugin directory may only name variables the operator allows
//!   (`allow.env`); the operator's own `toolhost.toml` may name any;
//! - the response body is read up to a cap, and the whole attempt ends at
//!   its deadline.
//!
//! Each `call` makes one attempt. A status that means "later" (429, 502,
//! 503, 504 by default) or a connection failure is `unavailable`, with the
//! service's `Retry-After`; the registry retries it per the tool's
//! [`ExecOptions`] ([`RestTool::exec_options`]). Any other failure status
//! is `tool_failed`, quoting the start of the body.
//!
//! ```no_run
//! use toolhost::config::HostConfig;
//! use toolhost::tools::ToolRegistry;
//! use toolhost::tools::rest::{RestDecl, RestPolicy, RestTool};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HostConfig::default()
//!     .allow_http("https://api.example.com".parse()?)
//!     .env("EXAMPLE_TOKEN", "secret");
//! let policy = RestPolicy::new(config.rest_rules())?;
//! let decl: RestDecl = toml::from_str(r#"
//!     name = "weather"
//!     description = "Today's weather in a city."
//!     url = "https://api.example.com/weather/{city}"
//!     input_schema = { type = "object", required = ["city"], properties.city.type = "string" }
//!     headers.Authorization = { env = "EXAMPLE_TOKEN", prefix = "Bearer " }
//! "#)?;
//! let registry = ToolRegistry::new();
//! RestTool::new(decl, &policy)?.register(&registry)?;
//! # Ok(()) }
//! ```

mod build;
mod call;
mod decl;
mod send;
mod template;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

pub use decl::{
    BodyMode, HeaderSpec, MAX_RESPONSE_KB, MAX_TIMEOUT_MS, ResponseFormat, RestDecl, RestMethod,
};

use super::{
    CallContext, ExecOptions, RegistryError, Tool, ToolError, ToolOrigin, ToolOutput, ToolRegistry,
    ToolSpec,
};
use crate::egress::{Egress, HttpOrigin};
use crate::environ::Environment;
use crate::tools::PluginBudget;
use build::build;
use send::{Checker, Clients};

/// The file name ending of a REST declaration in a plugin directory.
pub const REST_FILE_SUFFIX: &str = ".rest.toml";

/// Why a REST declaration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestError {
    /// The declaration is malformed or inconsistent.
    #[error("REST tool `{tool}` is not valid: {message}")]
    Invalid {
        /// The tool's name.
        tool: String,
        /// What is wrong, and what to do.
        message: String,
    },
    /// The operator's policy does not allow what it asks.
    #[error("REST tool `{tool}` is not allowed: {message}")]
    NotAllowed {
        /// The tool's name.
        tool: String,
        /// What is refused, and the key or flag that would allow it.
        message: String,
    },
    /// A header's environment variable is not set.
    #[error(
        "REST tool `{tool}` needs environment variable `{var}` (for header `{header}`), and it is not set; set it before starting toolhost"
    )]
    MissingEnv {
        /// The tool's name.
        tool: String,
        /// The variable.
        var: String,
        /// The header it is for.
        header: String,
    },
    /// A declaration file could not be read.
    #[error("cannot read REST declaration {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A declaration file is not a valid declaration.
    #[error("REST declaration {} is not valid: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A declaration in a file was refused.
    #[error("REST declaration {}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<RestError>,
    },
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client for REST tools")]
    Client(#[source] reqwest::Error),
}

impl RestError {
    /// The declaration file this error is about, if it came from one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Read { path, .. } | Self::File { path, .. } | Self::InFile { path, .. } => {
                Some(path)
            }
            _ => None,
        }
    }
}

/// What REST tools are held to: the narrow part of the operator's config
/// they use ([`HostConfig::rest_rules`](crate::config::HostConfig::rest_rules)
/// makes it from a host config).
#[derive(Debug, Clone, Default)]
pub struct RestRules {
    /// Where requests may go.
    pub egress: Egress,
    /// The variables a header may take its value from (`allow.env`).
    pub allowed_env: Vec<String>,
    /// Their values.
    pub env: Environment,
    /// Budgets for declaration files and the tool they describe.
    pub budget: PluginBudget,
    /// Plugins are pinned (a lock file) or must be signed: declaration
    /// files, which can be neither, are not loaded.
    pub pinned: bool,
}

/// The operator's rules for REST tools, and the HTTP clients that enforce
/// them (made once, shared by every tool built with this policy, so
/// connections are pooled).
#[derive(Clone)]
pub struct RestPolicy {
    checker: Arc<Checker>,
    allowed_env: Vec<String>,
    env: Environment,
    budget: PluginBudget,
    pinned: bool,
    clients: Clients,
}

impl std::fmt::Debug for RestPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestPolicy")
            .field("http", &self.checker.origins)
            .field("http_private", &self.checker.private_ok)
            .field("allowed_env", &self.allowed_env)
            .finish_non_exhaustive()
    }
}

impl RestPolicy {
    /// The policy `rules` describe.
    ///
    /// # Errors
    ///
    /// The HTTP client could not be set up (its TLS backend).
    pub fn new(rules: RestRules) -> Result<Self, RestError> {
        let checker = Arc::new(Checker {
            origins: rules.egress.origins,
            private_ok: rules.egress.private_addresses,
        });
        let clients = Clients::new(&checker).map_err(RestError::Client)?;
        Ok(Self {
            checker,
            allowed_env: rules.allowed_env,
            env: rules.env,
            budget: rules.budget,
            pinned: rules.pinned,
            clients,
        })
    }

    /// The origins REST URLs must be within.
    pub fn allowed_origins(&self) -> &[HttpOrigin] {
        &self.checker.origins
    }

    /// The value of variable `name`, as the program gave it.
    fn env_value(&self, name: &str) -> Option<String> {
        self.env.get(name).map(str::to_owned)
    }
}

/// A REST endpoint as a [`Tool`]. Cheap to clone.
#[derive(Clone)]
pub struct RestTool {
    spec: ToolSpec,
    summary: Arc<RestSummary>,
    options: ExecOptions,
    request: Arc<call::Request>,
}

/// What a REST tool does, for listings: never a secret (headers from the
/// environment show the variable's name only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestSummary {
    /// The HTTP method.
    pub method: RestMethod,
    /// The URL template.
    pub url: String,
    /// The file it was declared in, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Each header: its name and where its value comes from.
    pub headers: Vec<HeaderSummary>,
    /// Deadline of one attempt, in ms.
    pub timeout_ms: u64,
    /// Largest response body, in KiB.
    pub max_response_kb: u64,
    /// Retries of a transient failure.
    pub retries: u32,
}

/// One header of a [`RestSummary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderSummary {
    /// The header's name.
    pub name: String,
    /// The environment variable its value comes from (`None`: a constant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
}

impl std::fmt::Debug for RestTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values stay out: the summary names variables only.
        f.debug_struct("RestTool")
            .field("spec", &self.spec)
            .field("summary", &self.summary)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RestTool {
    /// A tool from `decl`, checked against `policy`. The declaration is
    /// trusted to name any environment variable (it is the operator's or
    /// the embedder's own); use [`load_dir`] for declaration files from a
    /// plugin directory.
    ///
    /// # Errors
    ///
    /// The declaration is invalid (a name, schema, template, header or
    /// limit), its origin is not on the allow-list (or is a private
    /// address the policy does not allow), or a header's variable is unset.
    pub fn new(decl: RestDecl, policy: &RestPolicy) -> Result<Self, RestError> {
        build(decl, policy, None, true)
    }

    /// The same tool, naming `file` as where it was declared (listings
    /// and duplicate-name errors show it).
    #[must_use]
    pub fn declared_in(mut self, file: impl Into<PathBuf>) -> Self {
        let mut summary = (*self.summary).clone();
        summary.file = Some(file.into());
        self.summary = Arc::new(summary);
        self
    }

    /// How the registry should run it: the declaration's timeout, retries
    /// and backoff.
    pub fn exec_options(&self) -> ExecOptions {
        self.options.clone()
    }

    /// What it does, for listings (no secrets).
    pub fn summary(&self) -> &RestSummary {
        &self.summary
    }

    /// Register it in `registry` with its [`exec_options`](Self::exec_options).
    ///
    /// # Errors
    ///
    /// As [`ToolRegistry::register_with`]: the name is taken, or the
    /// schema does not compile.
    pub fn register(self, registry: &ToolRegistry) -> Result<(), RegistryError> {
        let options = self.exec_options();
        registry.register_with(Arc::new(self), options)
    }
}

impl Tool for RestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        input: Value,
        _cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let request = Arc::clone(&self.request);
        Box::pin(async move { request.run(input).await.map(ToolOutput::from) })
    }

    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Rest {
            url: self.summary.url.clone(),
            file: self.summary.file.clone(),
        }
    }
}

/// How the registry names a REST tool's origin in messages.
pub(crate) fn describe_origin(url: &str, file: Option<&Path>) -> String {
    match file {
        Some(file) => format!("REST tool {url} declared in {}", file.display()),
        None => format!("REST tool {url}"),
    }
}

/// Every REST declaration in `dir`: each `NAME.rest.toml` file (not
/// recursive, in file-name order).
#[derive(Debug, Default)]
pub struct RestLoadReport {
    /// The tools that loaded.
    pub tools: Vec<RestTool>,
    /// The files that did not, and why.
    pub errors: Vec<RestError>,
}

/// Load every `NAME.rest.toml` in `dir`. A file holds one declaration (the
/// keys of one `[[rest]]` table); its `name` may be left out, and is then
/// `NAME`; if given, it must be `NAME`. Files are read like plugin
/// manifests: regular files only, at most `plugins.max_manifest_bytes`.
/// Such a file is the plugin directory's, not the operator's: its headers
/// may only name variables in `allow.env`, and its description and schema
/// are held to the `plugins` budgets. A broken file is reported in the
/// report and the others load. When the host pins its plugins (a lock
/// file, or signatures required), no declaration file loads: each is
/// reported, and the operator declares the tool in `[[rest]]` instead.
///
/// # Errors
///
/// The directory cannot be read.
pub fn load_dir(dir: &Path, policy: &RestPolicy) -> std::io::Result<RestLoadReport> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let is_rest = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.len() > REST_FILE_SUFFIX.len() && n.ends_with(REST_FILE_SUFFIX));
        if is_rest {
            files.push(path);
        }
    }
    files.sort();
    let mut report = RestLoadReport::default();
    for path in files {
        match load_file(&path, policy) {
            Ok(tool) => report.tools.push(tool),
            Err(e) => report.errors.push(e),
        }
    }
    Ok(report)
}

/// The tool declared in the file `path` (`NAME.rest.toml`), under the
/// rules of [`load_dir`].
///
/// # Errors
///
/// The file cannot be read, is not a valid declaration, or is refused by
/// `policy`.
pub fn load_file(path: &Path, policy: &RestPolicy) -> Result<RestTool, RestError> {
    let file_error = |message: String| RestError::File {
        path: path.to_owned(),
        message: crate::text::untrusted(&message, 1024),
    };
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(REST_FILE_SUFFIX))
        .ok_or_else(|| file_error(format!("the file name must be NAME{REST_FILE_SUFFIX}")))?;
    if policy.pinned {
        return Err(file_error(
            "not loaded: this host loads only pinned or signed plugins (`integrity.lock_file` or `integrity.require_signatures`), and a REST declaration file can be neither; declare the tool in the host config (`[[rest]]`) instead".into(),
        ));
    }
    let bytes = crate::fsread::read_regular(
        path,
        policy.budget.max_manifest_bytes,
        "plugins.max_manifest_bytes",
    )
    .map_err(|source| RestError::Read {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| file_error("not UTF-8 text".into()))?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| file_error(e.to_string()))?;
    match table.get("name") {
        None => {
            table.insert("name".into(), toml::Value::String(stem.to_owned()));
        }
        Some(toml::Value::String(name)) if name == stem => {}
        Some(other) => {
            return Err(file_error(format!(
                "`name` is {other}, but the file is named for `{stem}`; make them the same (or leave `name` out)"
            )));
        }
    }
    let decl: RestDecl = table.try_into().map_err(|e| file_error(e.to_string()))?;
    build(decl, policy, Some(path.to_owned()), false).map_err(|e| RestError::InFile {
        path: path.to_owned(),
        source: Box::new(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostConfig;

    /// The ```toml blocks of a Markdown file.
    fn toml_blocks(doc: &str) -> Vec<&str> {
        doc.split("```toml\n")
            .skip(1)
            .filter_map(|rest| rest.split_once("```").map(|(block, _)| block))
            .collect()
    }

    #[test]
    fn the_documented_declarations_parse_and_load() {
        let rest_md = toml_blocks(include_str!("../../../../docs/rest.md"));
        let cli_md = toml_blocks(include_str!("../../../../docs/cli.md"));
        let host_config = cli_md
            .iter()
            .find(|b| b.contains("[[rest]]"))
            .expect("cli.md shows [[rest]]");
        for (block, var) in [(rest_md[0], "GITHUB_TOKEN"), (host_config, "WEATHER_TOKEN")] {
            let config: HostConfig = toml::from_str(block).unwrap_or_else(|e| panic!("{e}"));
            let config = config.env(var, "secret");
            let policy = RestPolicy::new(config.rest_rules()).unwrap();
            assert_eq!(config.rest.len(), 1);
            let tool =
                RestTool::new(config.rest[0].clone(), &policy).unwrap_or_else(|e| panic!("{e}"));
            assert!(!format!("{tool:?}").contains("secret"));
        }
    }
}
