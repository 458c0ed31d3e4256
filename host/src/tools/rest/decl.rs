//! The REST declaration: plain serde data, as written in `toolhost.toml`
//! (`[[rest]]`) or a `NAME.rest.toml` file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{Backoff, ToolErrorKind};

/// One REST endpoint as a tool. Every key but `name`, `description` and
/// `url` has a default; see `docs/rest.md` for each key and where its
/// default comes from.
///
/// ```
/// use toolhost::tools::rest::RestDecl;
///
/// let decl: RestDecl = toml::from_str(r#"
///     name = "get_issue"
///     description = "One issue of a GitHub repository."
///     url = "https://api.github.com/repos/{owner}/{repo}/issues/{number}"
///     response = "/title"
///     [input_schema]
///     type = "object"
///     required = ["owner", "repo", "number"]
///     properties.owner.type = "string"
///     properties.repo.type = "string"
///     properties.number.type = "integer"
///     [headers.Authorization]
///     env = "GITHUB_TOKEN"
///     prefix = "Bearer "
/// "#).unwrap();
/// assert_eq!(decl.timeout_ms, 30_000);
/// assert_eq!(decl.retry_on_status, [429, 502, 503, 504]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RestDecl {
    /// The tool's name (`a-z A-Z 0-9 _ -`, 1 to 64 characters).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input object. Default: `{"type": "object"}`.
    #[serde(default = "default_schema")]
    pub input_schema: Value,
    /// `GET` (default), `POST`, `PUT`, `PATCH` or `DELETE`.
    #[serde(default)]
    pub method: RestMethod,
    /// The URL, with `{param}` for input values in the path or query; the
    /// origin (`scheme://host[:port]`) is fixed.
    pub url: String,
    /// Input fields sent as query parameters (an array value repeats the
    /// parameter; an absent or null field is left out).
    #[serde(default)]
    pub query: Vec<String>,
    /// What the JSON request body holds. Default: `rest` for `POST`,
    /// `PUT` and `PATCH`, `none` for `GET` and `DELETE`.
    #[serde(default)]
    pub body: Option<BodyMode>,
    /// The input fields in the body when `body = "fields"`.
    #[serde(default)]
    pub body_fields: Vec<String>,
    /// Request headers, by name: a constant (`value`) or the value of an
    /// environment variable (`env`), never a secret written in the file.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderSpec>,
    /// A JSON pointer (`/data/items`) to the part of the response that is
    /// the output. Default: `""`, the whole body.
    #[serde(default)]
    pub response: String,
    /// How the response body is read: `json` (default) or `text` (the
    /// body as one JSON string).
    #[serde(default)]
    pub response_format: ResponseFormat,
    /// Statuses that mean "try again later": `unavailable`, retried.
    /// Default: 429, 502, 503, 504.
    #[serde(default = "default_retry_on_status")]
    pub retry_on_status: Vec<u16>,
    /// Statuses that count as `tool_failed` even though they are 2xx
    /// (every status outside 200-299 fails anyway). Default: none.
    #[serde(default)]
    pub fail_on_status: Vec<u16>,
    /// The largest response body read, in KiB. Default 1024 (1 MiB), at
    /// most [`MAX_RESPONSE_KB`].
    #[serde(default = "default_max_response_kb")]
    pub max_response_kb: u64,
    /// Deadline of one attempt (connect, headers and body), in ms.
    /// Default 30000.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Retries after a failure whose kind is in `retry_on`. Default 2.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// The pause before the first retry, in ms. Default 500.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
    /// How the pause grows: `exponential` (default, with jitter) or
    /// `fixed`.
    #[serde(default)]
    pub backoff: Backoff,
    /// Error kinds retried. Default: `timeout`, `busy`, `unavailable`.
    #[serde(default = "default_retry_on")]
    pub retry_on: Vec<ToolErrorKind>,
    /// Whether a person approves each call before it runs
    /// ([`approval`](crate::approval)). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_approval: bool,
}

/// The largest `max_response_kb` a declaration may ask for (16 MiB).
pub const MAX_RESPONSE_KB: u64 = 16 << 10;

/// The longest `timeout_ms` a declaration may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 10 * 60 * 1000;

fn default_schema() -> Value {
    serde_json::json!({"type": "object"})
}
fn default_retry_on_status() -> Vec<u16> {
    vec![429, 502, 503, 504]
}
fn default_max_response_kb() -> u64 {
    1024
}
fn default_timeout_ms() -> u64 {
    30_000
}
fn default_retries() -> u32 {
    2
}
fn default_retry_delay_ms() -> u64 {
    500
}
fn default_retry_on() -> Vec<ToolErrorKind> {
    ToolErrorKind::ALL
        .into_iter()
        .filter(|k| k.is_transient())
        .collect()
}

/// The HTTP method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RestMethod {
    /// `GET` (the default).
    #[default]
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl RestMethod {
    pub(crate) fn to_reqwest(self) -> reqwest::Method {
        match self {
            Self::Get => reqwest::Method::GET,
            Self::Post => reqwest::Method::POST,
            Self::Put => reqwest::Method::PUT,
            Self::Patch => reqwest::Method::PATCH,
            Self::Delete => reqwest::Method::DELETE,
        }
    }

    /// The body a request of this method carries when the declaration
    /// does not say.
    pub(crate) fn default_body(self) -> BodyMode {
        match self {
            Self::Get | Self::Delete => BodyMode::None,
            Self::Post | Self::Put | Self::Patch => BodyMode::Rest,
        }
    }
}

/// What the JSON request body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyMode {
    /// No body.
    None,
    /// Every input field not used in the URL or the query, as an object.
    Rest,
    /// The whole input object.
    Input,
    /// The fields named in `body_fields`, as an object.
    Fields,
}

/// How the response body becomes the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// JSON; anything else is `invalid_output`.
    #[default]
    Json,
    /// Text (UTF-8), returned as one JSON string.
    Text,
}

/// One request header: exactly one of `value` (a constant, written in the
/// file) and `env` (the name of an environment variable holding the value,
/// for secrets), with an optional `prefix` before it (`"Bearer "`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderSpec {
    /// A constant value (not a secret: it is shown by `toolhost list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The environment variable whose value is sent. The value is never
    /// shown: not in listings, errors, logs or `Debug` output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// Text put before the value, e.g. `"Bearer "`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}
