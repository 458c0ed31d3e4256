//! Checking a declaration against the policy, and building its tool.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::template::UrlTemplate;
use super::{
    BodyMode, HeaderSpec, HeaderSummary, MAX_RESPONSE_KB, MAX_TIMEOUT_MS, RestDecl, RestError,
    RestPolicy, RestSummary, RestTool, call,
};
use crate::tools::ExecOverrides;
use crate::tools::ToolSpec;
use crate::tools::secrets::Secrets;

/// Check `decl` and build its tool. `trusted`: the operator's own
/// declaration, which may name any environment variable.
pub(super) fn build(
    decl: RestDecl,
    policy: &RestPolicy,
    file: Option<PathBuf>,
    trusted: bool,
) -> Result<RestTool, RestError> {
    if !crate::tools::is_valid_tool_name(&decl.name) {
        return Err(RestError::Invalid {
            tool: crate::text::untrusted(&decl.name, 80),
            message: "the name must be 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`".into(),
        });
    }
    let tool = decl.name.clone();
    let spec = ToolSpec {
        name: decl.name.clone(),
        description: decl.description.clone(),
        input_schema: decl.input_schema.clone(),
    };
    if !trusted {
        crate::tools::check_tools(std::slice::from_ref(&spec), &policy.budget)
            .map_err(|m| invalid(&tool, m))?;
    }
    let (template, body) = check_inputs(&decl)?;
    check_response(&decl)?;
    check_origin(&decl, &template, policy)?;
    let headers = Headers::build(&decl, policy, trusted)?;
    let options = exec_options(&decl)?;
    let secret_headers = headers.summaries.iter().any(|h| h.env.is_some());
    let path_params: BTreeSet<String> = template.params().map(str::to_owned).collect();
    let request = call::Request {
        tool: tool.clone(),
        method: decl.method.to_reqwest(),
        template,
        query: decl.query.clone(),
        path_params,
        body,
        body_fields: decl.body_fields.clone(),
        headers: headers.map,
        pointer: decl.response.clone(),
        format: decl.response_format,
        retry_on_status: decl.retry_on_status.clone(),
        fail_on_status: decl.fail_on_status.clone(),
        max_bytes: decl.max_response_kb << 10,
        timeout: Duration::from_millis(decl.timeout_ms),
        checker: Arc::clone(&policy.checker),
        secrets: Secrets::new(headers.secrets.iter().map(String::as_str)),
        client: if secret_headers {
            policy.clients.same_origin.clone()
        } else {
            policy.clients.any_origin.clone()
        },
    };
    Ok(RestTool {
        spec,
        summary: Arc::new(RestSummary {
            method: decl.method,
            url: decl.url,
            file,
            headers: headers.summaries,
            timeout_ms: decl.timeout_ms,
            max_response_kb: decl.max_response_kb,
            retries: decl.retries,
        }),
        options,
        request: Arc::new(request),
    })
}

/// The declaration is malformed: what is wrong, and what to do.
fn invalid(tool: &str, message: String) -> RestError {
    RestError::Invalid {
        tool: tool.to_owned(),
        message,
    }
}

/// The declaration asks for what the policy refuses.
fn not_allowed(tool: &str, message: String) -> RestError {
    RestError::NotAllowed {
        tool: tool.to_owned(),
        message,
    }
}

/// What the request takes from the input: the parsed URL template and the
/// body mode, once every input field the declaration refers to (in the URL,
/// the query or the body) is a property of `input_schema`.
fn check_inputs(decl: &RestDecl) -> Result<(UrlTemplate, BodyMode), RestError> {
    let invalid = |message: String| invalid(&decl.name, message);
    let Value::Object(schema) = &decl.input_schema else {
        return Err(invalid(
            "`input_schema` must be a JSON Schema object, e.g. { type = \"object\" }".into(),
        ));
    };
    let properties: BTreeSet<&str> = match schema.get("properties") {
        Some(Value::Object(p)) => p.keys().map(String::as_str).collect(),
        _ => BTreeSet::new(),
    };
    let template = UrlTemplate::parse(&decl.url).map_err(|e| {
        invalid(format!(
            "`url` = {:?}: {e}",
            crate::text::clip(&decl.url, 256)
        ))
    })?;
    let body = decl.body.unwrap_or(decl.method.default_body());
    let referenced = template
        .params()
        .map(|p| ("url", p))
        .chain(decl.query.iter().map(|q| ("query", q.as_str())))
        .chain(decl.body_fields.iter().map(|b| ("body_fields", b.as_str())));
    for (key, field) in referenced {
        if !properties.contains(field) {
            return Err(invalid(format!(
                "`{key}` uses `{field}`, which is not a property in `input_schema`; add it under `input_schema.properties`, or fix the name"
            )));
        }
    }
    if (body == BodyMode::Fields) == decl.body_fields.is_empty() {
        return Err(invalid(
            "`body_fields` goes with `body = \"fields\"`, and `body = \"fields\"` needs `body_fields`".into(),
        ));
    }
    Ok((template, body))
}

/// How the response is read is well formed: a JSON pointer, HTTP status
/// codes each in one list, and a size and time limit in range.
fn check_response(decl: &RestDecl) -> Result<(), RestError> {
    let invalid = |message: String| invalid(&decl.name, message);
    if !decl.response.is_empty() && !decl.response.starts_with('/') {
        return Err(invalid(format!(
            "`response` = {:?} is not a JSON pointer; write \"\" for the whole body, or one like \"/data/items\"",
            crate::text::clip(&decl.response, 256)
        )));
    }
    for status in decl.retry_on_status.iter().chain(&decl.fail_on_status) {
        if !(100..=599).contains(status) {
            return Err(invalid(format!(
                "{status} is not an HTTP status code (100 to 599)"
            )));
        }
    }
    if let Some(both) = decl
        .retry_on_status
        .iter()
        .find(|s| decl.fail_on_status.contains(s))
    {
        return Err(invalid(format!(
            "status {both} is in both `retry_on_status` and `fail_on_status`; keep it in one"
        )));
    }
    if !(1..=MAX_RESPONSE_KB).contains(&decl.max_response_kb) {
        return Err(invalid(format!(
            "`max_response_kb` = {} must be from 1 to {MAX_RESPONSE_KB}",
            decl.max_response_kb
        )));
    }
    if !(1..=MAX_TIMEOUT_MS).contains(&decl.timeout_ms) {
        return Err(invalid(format!(
            "`timeout_ms` = {} must be from 1 to {MAX_TIMEOUT_MS}",
            decl.timeout_ms
        )));
    }
    Ok(())
}

/// The URL's origin is on the allow-list, and not a refused address literal.
fn check_origin(
    decl: &RestDecl,
    template: &UrlTemplate,
    policy: &RestPolicy,
) -> Result<(), RestError> {
    let probe = template.origin().to_owned() + "/";
    let url = reqwest::Url::parse(&probe).map_err(|e| {
        invalid(
            &decl.name,
            format!(
                "`url` = {:?} is not a valid URL: {e}",
                crate::text::clip(&decl.url, 256)
            ),
        )
    })?;
    if let Some(reason) = policy.checker.refusal(&url) {
        return Err(not_allowed(
            &decl.name,
            format!("`url` = {:?}: {reason}", crate::text::clip(&decl.url, 256)),
        ));
    }
    Ok(())
}

/// The headers every call sends: constants, and secrets from the environment.
struct Headers {
    /// What is sent; a secret's value is marked sensitive.
    map: HeaderMap,
    /// What `toolhost list` shows: names, and the variable behind a secret.
    summaries: Vec<HeaderSummary>,
    /// The secrets' values as sent, to redact from what the model sees.
    secrets: Vec<String>,
}

impl Headers {
    /// Check and build the declaration's headers.
    fn build(decl: &RestDecl, policy: &RestPolicy, trusted: bool) -> Result<Self, RestError> {
        let mut headers = Headers {
            map: HeaderMap::new(),
            summaries: Vec::new(),
            secrets: Vec::new(),
        };
        for (name, spec) in &decl.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                invalid(
                    &decl.name,
                    format!(
                        "`{}` is not a valid header name",
                        crate::text::untrusted(name, 80)
                    ),
                )
            })?;
            if [
                reqwest::header::HOST,
                reqwest::header::CONTENT_LENGTH,
                reqwest::header::TRANSFER_ENCODING,
                reqwest::header::CONNECTION,
            ]
            .contains(&header)
            {
                return Err(invalid(
                    &decl.name,
                    format!("header `{name}` is set by the HTTP client; remove it"),
                ));
            }
            let (value, env) = header_value(&decl.name, name, spec, policy, trusted)?;
            let mut value =
                HeaderValue::from_str(&format!("{}{value}", spec.prefix)).map_err(|_| {
                    // The value may be a secret: never quoted.
                    invalid(&decl.name, format!(
                        "the value of header `{name}` is not a valid header value (it holds a line break or another control character)"
                    ))
                })?;
            value.set_sensitive(env.is_some());
            if env.is_some()
                && let Ok(sent) = value.to_str()
            {
                headers.secrets.push(sent.to_owned());
            }
            headers.map.insert(header, value);
            headers.summaries.push(HeaderSummary {
                name: name.clone(),
                env,
            });
        }
        Ok(headers)
    }
}

/// The value of header `name` (before its prefix), and the environment
/// variable it came from when it is a secret. A declaration that is not
/// `trusted` may read only the variables the policy allows.
fn header_value(
    tool: &str,
    name: &str,
    spec: &HeaderSpec,
    policy: &RestPolicy,
    trusted: bool,
) -> Result<(String, Option<String>), RestError> {
    match (&spec.value, &spec.env) {
        (Some(value), None) => Ok((value.clone(), None)),
        (None, Some(var)) => {
            if !trusted && !policy.allowed_env.contains(var) {
                return Err(not_allowed(
                    tool,
                    format!(
                        "header `{name}` reads environment variable `{var}`, which is not allowed for declarations in a plugin directory; add it to `allow.env` in the host config (or pass --allow-env {var})"
                    ),
                ));
            }
            let value = policy.env_value(var).ok_or_else(|| RestError::MissingEnv {
                tool: tool.to_owned(),
                var: var.clone(),
                header: name.to_owned(),
            })?;
            Ok((value, Some(var.clone())))
        }
        _ => Err(invalid(
            tool,
            format!(
                "header `{name}` needs exactly one of `value` (a constant) and `env` (the variable holding a secret)"
            ),
        )),
    }
}

/// The retry and approval options, under the same keys, bounds and messages
/// as a plugin manifest's `[exec]`.
fn exec_options(decl: &RestDecl) -> Result<crate::tools::ExecOptions, RestError> {
    ExecOverrides {
        timeout: Some(std::time::Duration::from_millis(decl.timeout_ms)),
        retries: Some(decl.retries),
        retry_delay: Some(std::time::Duration::from_millis(decl.retry_delay_ms)),
        backoff: Some(decl.backoff),
        retry_on: Some(decl.retry_on.clone()),
        needs_approval: Some(decl.needs_approval),
    }
    .options()
    .map_err(|e| invalid(&decl.name, e.to_string().replace("[exec] ", "")))
}
