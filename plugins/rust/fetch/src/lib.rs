//! toolhost plugin `fetch`: `fetch_json` GETs a URL, parses the body as
//! JSON and returns the part a JSON pointer names.
//!
//! It reaches only the origins its manifest is granted (`[permissions]
//! http`); the host refuses anything else, and the call then ends as
//! `permission_denied` naming the URL. Redirects are followed here, up to
//! five, each one a new request the host checks again: a redirect to an
//! origin outside the grant is refused like a direct request.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_guest::ToolError;
use toolhost_guest::http::Request;

/// Most redirects followed for one call.
pub const MAX_REDIRECTS: usize = 5;

/// Input of `fetch_json`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchInput {
    /// The URL to GET, e.g. `https://api.github.com/repos/rust-lang/rust`.
    pub url: String,
    /// A JSON pointer into the response (RFC 6901), e.g. `/owner/login` or
    /// `/items/0`. Default: the whole document.
    #[serde(default)]
    pub pointer: Option<String>,
}

/// What `fetch_json` returns.
#[derive(Debug, Serialize, PartialEq)]
pub struct Fetched {
    /// The URL the JSON came from (after redirects).
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// The value at `pointer` (the whole document without one).
    pub value: Value,
}

fn fetch_json(input: FetchInput) -> Result<Fetched, ToolError> {
    let pointer = input.pointer.unwrap_or_default();
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(ToolError::invalid_input(format!(
            "`pointer` must be empty or start with `/` (as in /items/0), not `{pointer}`"
        )));
    }
    let mut url = input.url;
    for _ in 0..=MAX_REDIRECTS {
        let response = Request::get(&url)
            .header("accept", "application/json")
            .header("user-agent", "toolhost-fetch/0.1")
            .send()?;
        if let Some(next) = response.redirect_to() {
            url = next;
            continue;
        }
        let response = response.error_for_status()?;
        let document: Value = response.json()?;
        return Ok(Fetched {
            value: select(document, &pointer)?,
            url,
            status: response.status(),
        });
    }
    Err(ToolError::failed(format!(
        "more than {MAX_REDIRECTS} redirects, the last to {url}"
    )))
}

/// The part of `document` at `pointer`.
fn select(mut document: Value, pointer: &str) -> Result<Value, ToolError> {
    document
        .pointer_mut(pointer)
        .map(Value::take)
        .ok_or_else(|| {
            ToolError::invalid_input(format!(
                "the response has nothing at `{pointer}`; try a shorter pointer"
            ))
        })
}

toolhost_guest::export_tools! {
    fetch_json: "GET a URL that returns JSON and return the value at a JSON pointer \
                 (or the whole document). Only the origins this plugin is granted \
                 are reachable." => fetch_json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pointer_selects_part_of_the_document() {
        let doc = json!({"items": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(select(doc.clone(), "/items/1/name").unwrap(), json!("b"));
        assert_eq!(select(doc.clone(), "").unwrap(), doc);
        let e = select(doc, "/nope").unwrap_err();
        assert!(e.message().contains("/nope"), "{e:?}");
    }

    #[test]
    fn a_pointer_without_a_slash_is_invalid_input() {
        let e = fetch_json(FetchInput {
            url: "https://api.github.com/".into(),
            pointer: Some("items".into()),
        })
        .unwrap_err();
        assert_eq!(e.kind(), toolhost_guest::ToolErrorKind::InvalidInput);
    }
}
