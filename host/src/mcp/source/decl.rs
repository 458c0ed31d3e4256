//! The MCP server declaration: plain serde data, as written in
//! `toolhost.toml` (`[[mcp]]`), and its checks.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::names;
use super::{McpError, McpRules};
use crate::mcp::{Bounds, Endpoint};
use crate::tools::rest::{HeaderSpec, MAX_RESPONSE_KB, MAX_TIMEOUT_MS};
use crate::tools::secrets::Secrets;
use crate::tools::{ExecOptions, ExecOverrides};

/// One MCP server whose tools join the registry. Exactly one of `command`
/// (stdio) and `url` (streamable HTTP).
///
/// ```
/// use toolhost::mcp::McpDecl;
///
/// let decl: McpDecl = toml::from_str(r#"
///     name = "time"
///     command = "python3"
///     args = ["-m", "mcp_server_time"]
///     env = ["TZ"]
///     exec = { timeout_ms = 10000, retries = 1 }
/// "#).unwrap();
/// assert_eq!(decl.prefix(), "time_");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpDecl {
    /// The server's name, for messages and the default prefix: 1 to 32
    /// characters of `a-z A-Z 0-9 _ -`.
    pub name: String,
    /// stdio: the program to start (looked up on `PATH`).
    #[serde(default)]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: the environment variables passed to it, by name. The child
    /// gets these and `PATH`, nothing else.
    #[serde(default)]
    pub env: Vec<String>,
    /// Streamable HTTP: the endpoint, `http://` or `https://`.
    #[serde(default)]
    pub url: Option<String>,
    /// Streamable HTTP: headers sent with every request, each a constant
    /// (`value`) or an environment variable's value (`env`), as in a REST
    /// declaration. Values are never shown.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderSpec>,
    /// Put before each of its tools' names. Default: `NAME_`; `""` for
    /// none.
    #[serde(default)]
    pub prefix: Option<String>,
    /// How its tools' calls run: the `[exec]` keys of a plugin manifest
    /// (`timeout_ms`, `retries`, `retry_delay_ms`, `backoff`, `retry_on`).
    /// Default timeout: 60000 ms.
    #[serde(default)]
    pub exec: ExecOverrides,
    /// The largest tool result, in KiB (as JSON text). Default 1024, at
    /// most 16384.
    #[serde(default = "default_max_result_kb")]
    pub max_result_kb: u64,
    /// How long the server may take to answer `tools/list`, in ms; one
    /// that takes longer is down, and restarted. Default
    /// [`DEFAULT_LIST_TIMEOUT_MS`], at most [`MAX_TIMEOUT_MS`].
    #[serde(default = "default_list_timeout_ms")]
    pub list_timeout_ms: u64,
    /// How long a call the server runs as a task (the MCP tasks
    /// extension) may take in all, in seconds: its polls may go on this
    /// long, past `exec.timeout_ms`, which then bounds each request only.
    /// Default: the host config's `[tasks] deadline_secs`; never over its
    /// `max_deadline_secs`.
    #[serde(default)]
    pub task_timeout_secs: Option<u64>,
}

fn default_max_result_kb() -> u64 {
    1024
}

fn default_list_timeout_ms() -> u64 {
    DEFAULT_LIST_TIMEOUT_MS
}

/// How long a server may take to list its tools when `list_timeout_ms`
/// does not say.
pub const DEFAULT_LIST_TIMEOUT_MS: u64 = 10_000;

/// The most a tool list may take of one message: with `max_result_kb`,
/// what sets the cap on one message from the server.
const MAX_LIST_BYTES: usize = 16 << 20;

/// Room for the JSON-RPC envelope around a result of `max_result_kb`.
const ENVELOPE_BYTES: usize = 1 << 20;

/// Whether a stdio server's variable holds a credential (its value is then
/// redacted from what the server sends back). Other variables (`TZ`,
/// `LANG`, a data directory) have values that ordinary output contains.
fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "KEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

/// The outer deadline of a call when `exec.timeout_ms` does not say: a
/// remote server has no sandbox deadline of its own.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

impl McpDecl {
    /// The prefix in effect: `prefix`, or `NAME_`.
    pub fn prefix(&self) -> String {
        self.prefix
            .clone()
            .unwrap_or_else(|| format!("{}_", self.name))
    }
}

/// A checked declaration: what the source runs on.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) name: String,
    pub(super) prefix: String,
    pub(super) endpoint: Endpoint,
    pub(super) options: ExecOptions,
    pub(super) max_result_bytes: usize,
    pub(super) max_tools: usize,
    pub(super) max_description_bytes: usize,
    pub(super) max_schema_bytes: usize,
    /// What to check when the server is down, for messages.
    pub(super) hint: String,
    /// How long listing its tools may take.
    pub(super) list_timeout: std::time::Duration,
    /// Its cap on one message, and the secrets sent to it.
    pub(super) bounds: Bounds,
    /// The declared `exec.timeout_ms` (or the default): what one request
    /// may take. `options.timeout` is the larger of it and `task_timeout`,
    /// so that a call run as a task is not cut at it.
    pub(super) request_timeout: Option<Duration>,
    /// How long a call run as a task may take in all.
    pub(super) task_timeout: Duration,
}

/// Check `decl` and read the values it names: variables from `rules`.
pub(super) fn plan(decl: McpDecl, rules: &McpRules) -> Result<Plan, McpError> {
    let invalid = |message: String| invalid(&decl, message);
    if !names::is_valid_server_name(&decl.name) {
        return Err(McpError::Invalid {
            server: crate::text::untrusted(&decl.name, 64),
            message: "the name must be 1 to 32 characters of a-z, A-Z, 0-9, `_` and `-`".into(),
        });
    }
    let prefix = decl.prefix();
    if !names::is_valid_prefix(&prefix) {
        return Err(invalid(format!(
            "prefix `{}` is not valid: use at most 32 characters of a-z, A-Z, 0-9, `_` and `-`",
            crate::text::untrusted(&prefix, 64)
        )));
    }
    let mut options = decl.exec.options().map_err(|e| invalid(e.to_string()))?;
    if decl.exec.timeout.is_none() {
        options.timeout = Some(Duration::from_millis(DEFAULT_TIMEOUT_MS));
    }
    if decl.task_timeout_secs == Some(0) {
        return Err(invalid(format!(
            "task_timeout_secs = 0: give 1 to {} (the host config's `[tasks] max_deadline_secs`)",
            rules.tasks.max_deadline_secs
        )));
    }
    let task_timeout = rules.tasks.deadline(decl.task_timeout_secs);
    let request_timeout = options.timeout;
    // The registry's deadline for the whole call: a call the server runs
    // as a task may poll up to `task_timeout`; each request is still held
    // to `request_timeout` (see `call.rs`).
    options.timeout = request_timeout.map(|t| t.max(task_timeout));
    if decl.max_result_kb == 0 || decl.max_result_kb > MAX_RESPONSE_KB {
        return Err(invalid(format!(
            "max_result_kb = {}: give 1 to {MAX_RESPONSE_KB}",
            decl.max_result_kb
        )));
    }
    if !(1..=MAX_TIMEOUT_MS).contains(&decl.list_timeout_ms) {
        return Err(invalid(format!(
            "list_timeout_ms = {}: give 1 to {MAX_TIMEOUT_MS}",
            decl.list_timeout_ms
        )));
    }
    let mut secret_values: Vec<String> = Vec::new();
    let (endpoint, hint) = match (&decl.command, &decl.url) {
        (Some(program), None) => stdio_endpoint(&decl, program, rules, &mut secret_values)?,
        (None, Some(url)) => http_endpoint(&decl, url, rules, &mut secret_values)?,
        _ => {
            return Err(invalid(
                "give exactly one of `command` (a stdio server) and `url` (streamable HTTP)".into(),
            ));
        }
    };
    let max_result_bytes = usize::try_from(decl.max_result_kb << 10).unwrap_or(usize::MAX);
    Ok(Plan {
        name: decl.name.clone(),
        prefix,
        endpoint,
        options,
        max_result_bytes,
        list_timeout: std::time::Duration::from_millis(decl.list_timeout_ms),
        bounds: Bounds {
            max_message_bytes: max_result_bytes
                .max(MAX_LIST_BYTES)
                .saturating_add(ENVELOPE_BYTES),
            redact: Secrets::new(secret_values.iter().map(String::as_str)),
        },
        request_timeout,
        task_timeout,
        max_tools: rules.budget.max_tools,
        max_description_bytes: rules.budget.max_description_bytes,
        max_schema_bytes: rules.budget.max_schema_bytes,
        hint,
    })
}

/// The declaration of server `decl` is malformed: what is wrong, and what
/// to do.
fn invalid(decl: &McpDecl, message: String) -> McpError {
    McpError::Invalid {
        server: decl.name.clone(),
        message,
    }
}

/// A `command` server: the program to start with its environment, and the
/// hint for when it is down. The values of its variables that hold
/// credentials go to `secrets`.
fn stdio_endpoint(
    decl: &McpDecl,
    program: &str,
    rules: &McpRules,
    secrets: &mut Vec<String>,
) -> Result<(Endpoint, String), McpError> {
    let invalid = |message: String| invalid(decl, message);
    if !decl.headers.is_empty() {
        return Err(invalid(
            "`headers` are for `url` servers; a `command` server gets `env`".into(),
        ));
    }
    if program.is_empty() {
        return Err(invalid(
            "`command` is empty; name the program to start".into(),
        ));
    }
    // The child starts with an empty environment: the named
    // variables, and PATH so that it can find its interpreter and
    // whatever it starts itself.
    let mut env = Vec::new();
    for name in decl.env.iter().chain(std::iter::once(&"PATH".to_owned())) {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(invalid(format!(
                "`env` names variable `{}`, which is not a variable name",
                crate::text::untrusted(name, 64)
            )));
        }
        if env.iter().any(|(n, _)| n == name) {
            continue;
        }
        match env_value(rules, name) {
            Some(value) => {
                if is_credential_name(name) {
                    secrets.push(value.clone());
                }
                env.push((name.clone(), value));
            }
            None => tracing::debug!(
                "MCP server `{}`: variable {name} is not set, so it is not passed",
                decl.name
            ),
        }
    }
    let shown = std::iter::once(program)
        .chain(decl.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let hint = format!(
        "check that `{}` starts and speaks MCP on stdio (`toolhost -v` logs its stderr)",
        crate::text::untrusted(&shown, 256)
    );
    let endpoint = Endpoint::Stdio {
        program: program.to_owned(),
        args: decl.args.clone(),
        env,
    };
    Ok((endpoint, hint))
}

/// A `url` server: the endpoint with the headers sent on every request,
/// and the hint for when it is down. Every header value read from the
/// environment goes to `secrets`, bare and with its prefix.
fn http_endpoint(
    decl: &McpDecl,
    url: &str,
    rules: &McpRules,
    secrets: &mut Vec<String>,
) -> Result<(Endpoint, String), McpError> {
    let invalid = |message: String| invalid(decl, message);
    if !decl.env.is_empty() || !decl.args.is_empty() {
        return Err(invalid(
            "`args` and `env` are for `command` servers; a `url` server gets `headers`".into(),
        ));
    }
    let parsed =
        reqwest::Url::parse(url).map_err(|e| invalid(format!("`url` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(invalid(format!(
            "`url` must be http:// or https:// with a host, not `{}`",
            crate::text::untrusted(url, 256)
        )));
    }
    let mut headers = Vec::new();
    for (name, spec) in &decl.headers {
        let header = http::HeaderName::try_from(name.as_str())
            .map_err(|_| invalid(format!("header `{name}` is not a valid header name")))?;
        let value = match (&spec.value, &spec.env) {
            (Some(value), None) => value.clone(),
            (None, Some(var)) => {
                let value = env_value(rules, var).ok_or_else(|| McpError::MissingEnv {
                    server: decl.name.clone(),
                    var: var.clone(),
                    header: name.clone(),
                })?;
                secrets.push(value.clone());
                secrets.push(format!("{}{value}", spec.prefix));
                value
            }
            _ => {
                return Err(invalid(format!(
                    "header `{name}` needs exactly one of `value` and `env`"
                )));
            }
        };
        let mut value =
            http::HeaderValue::from_str(&format!("{}{value}", spec.prefix)).map_err(|_| {
                invalid(format!(
                    "header `{name}` has a value that is not valid in HTTP"
                ))
            })?;
        value.set_sensitive(true);
        headers.push((header, value));
    }
    let hint = format!(
        "check that {} is up and serves MCP (streamable HTTP)",
        crate::text::untrusted(url, 256)
    );
    let endpoint = Endpoint::Http {
        url: url.to_owned(),
        headers,
    };
    Ok((endpoint, hint))
}

/// The value of variable `name` as `rules` give it.
fn env_value(rules: &McpRules, name: &str) -> Option<String> {
    rules.env.get(name).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostConfig;

    fn parse(text: &str) -> McpDecl {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn refused(text: &str) -> String {
        match plan(parse(text), &HostConfig::default().mcp_rules()) {
            Ok(plan) => panic!("accepted: {plan:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_stdio_server_gets_only_the_named_variables_and_path() {
        let config = HostConfig::default().env("MCP_TEST_TOKEN", "secret");
        let decl = parse(
            r#"
            name = "time"
            command = "python3"
            args = ["-m", "mcp_server_time"]
            env = ["MCP_TEST_TOKEN", "MCP_TEST_SURELY_UNSET"]
            "#,
        );
        let plan = plan(decl, &config.mcp_rules()).unwrap();
        assert_eq!(plan.prefix, "time_");
        assert_eq!(
            plan.request_timeout,
            Some(Duration::from_millis(DEFAULT_TIMEOUT_MS))
        );
        // The whole call may go on as a task for `[tasks] deadline_secs`.
        assert_eq!(plan.task_timeout, Duration::from_secs(600));
        assert_eq!(plan.options.timeout, Some(Duration::from_secs(600)));
        let Endpoint::Stdio { program, env, .. } = &plan.endpoint else {
            panic!("{plan:?}")
        };
        assert_eq!(program, "python3");
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[0], "MCP_TEST_TOKEN");
        assert!(names.iter().all(|n| ["MCP_TEST_TOKEN", "PATH"].contains(n)));
        // Debug output names variables, never values.
        assert!(!format!("{plan:?}").contains("secret"));
    }

    #[test]
    fn exec_keys_are_the_manifest_ones() {
        let decl = parse(
            r#"
            name = "t"
            url = "http://127.0.0.1:3001/mcp"
            prefix = ""
            exec = { timeout_ms = 500, retries = 2, retry_on = ["unavailable"] }
            headers.Authorization = { env = "MCP_TEST_TOKEN2", prefix = "Bearer " }
            "#,
        );
        let config = HostConfig::default().env("MCP_TEST_TOKEN2", "hunter2");
        let plan = plan(decl, &config.mcp_rules()).unwrap();
        assert_eq!(plan.prefix, "");
        assert_eq!(plan.options.retries, 2);
        assert_eq!(plan.request_timeout, Some(Duration::from_millis(500)));
        assert!(!format!("{plan:?}").contains("hunter2"));
    }

    #[test]
    fn bad_declarations_say_what_to_change() {
        for (text, expected) in [
            (r#"name = "t""#, "exactly one of `command`"),
            (
                r#"name = "t"
                   command = "x"
                   url = "http://a""#,
                "exactly one of `command`",
            ),
            (
                r#"name = "a b"
                command = "x""#,
                "1 to 32 characters",
            ),
            (
                r#"name = "t"
                   url = "file:///etc/passwd""#,
                "http:// or https://",
            ),
            (
                r#"name = "t"
                   command = "x"
                   prefix = "a.b""#,
                "prefix `a.b` is not valid",
            ),
            (
                r#"name = "t"
                   command = "x"
                   exec = { retries = 99 }"#,
                "retries = 99",
            ),
            (
                r#"name = "t"
                   url = "http://a/mcp"
                   headers.X = { env = "MCP_TEST_SURELY_UNSET" }"#,
                "needs environment variable `MCP_TEST_SURELY_UNSET`",
            ),
            (
                r#"name = "t"
                   command = "x"
                   max_result_kb = 0"#,
                "max_result_kb = 0",
            ),
            (
                r#"name = "t"
                   command = "x"
                   task_timeout_secs = 0"#,
                "task_timeout_secs = 0",
            ),
        ] {
            let message = refused(text);
            assert!(message.contains(expected), "{text}: {message}");
        }
        assert!(toml::from_str::<McpDecl>("name = \"t\"\nbogus = 1").is_err());
    }
}
