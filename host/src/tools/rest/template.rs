//! URL templates: `https://api.example.com/repos/{owner}/{repo}`, each
//! `{param}` replaced by an input value, percent-encoded so that a value can
//! never change the path's shape.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::tools::ToolError;

/// A parsed URL template. The origin (`scheme://host[:port]`) is fixed;
/// parameters may stand only after it, in the path or the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlTemplate {
    /// `scheme://authority`, as written.
    origin: String,
    /// The rest: path (and query), literal text and parameters.
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Param(String),
}

impl UrlTemplate {
    /// Parse `text`.
    ///
    /// # Errors
    ///
    /// What is wrong with it, for a message about the declaration.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let (scheme, rest) = text.split_once("://").ok_or(
            "write it as scheme://host[:port]/path, e.g. https://api.example.com/items/{id}",
        )?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains(['{', '}']) || scheme.contains(['{', '}']) {
            return Err(
                "parameters may stand only in the path or query, never in the scheme, host or port (the origin is checked against the allow-list when the tool loads)"
                    .into(),
            );
        }
        if tail.contains('#') {
            return Err("a URL template has no #fragment; remove it".into());
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = tail.chars();
        while let Some(c) = chars.next() {
            match c {
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                                name.push(c)
                            }
                            _ => {
                                return Err(
                                    "a `{` must open a parameter: `{name}`, the name made of letters, digits, `_` and `-`"
                                        .into(),
                                );
                            }
                        }
                    }
                    if name.is_empty() {
                        return Err("`{}` names no parameter; write `{name}`".into());
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Param(name));
                }
                '}' => return Err("a `}` without its `{`".into()),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Self {
            origin: format!("{scheme}://{authority}"),
            parts,
        })
    }

    /// `scheme://authority`, as written.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// The parameters' names, in order (a name may repeat).
    pub(crate) fn params(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Param(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The URL for `input`: every parameter replaced by its value,
    /// percent-encoded (see [`encode_component`]).
    ///
    /// # Errors
    ///
    /// `invalid_input`: a parameter is missing, null, an object or an
    /// array, empty, or `.`/`..` (which would change the path).
    pub(crate) fn expand(&self, input: &Map<String, Value>) -> Result<String, ToolError> {
        let mut url = self.origin.clone();
        for part in &self.parts {
            match part {
                Part::Literal(text) => url.push_str(text),
                Part::Param(name) => {
                    let value = match input.get(name) {
                        None | Some(Value::Null) => {
                            return Err(ToolError::invalid_input(format!(
                                "`{name}` is missing; the URL needs it"
                            )));
                        }
                        Some(value) => scalar_text(name, value)?,
                    };
                    if value.is_empty() || value == "." || value == ".." {
                        return Err(ToolError::invalid_input(format!(
                            "`{name}` cannot be empty, `.` or `..`: it is one segment of the URL's path"
                        )));
                    }
                    url.push_str(&encode_component(&value));
                }
            }
        }
        Ok(url)
    }
}

/// A scalar input value as text: a string as it is, a number or boolean as
/// JSON writes it.
///
/// # Errors
///
/// `invalid_input` for an object, an array or null.
pub(crate) fn scalar_text(name: &str, value: &Value) -> Result<String, ToolError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => Err(ToolError::invalid_input(format!(
            "`{name}` must be a string, a number or a boolean"
        ))),
    }
}

/// `text` with every byte outside the RFC 3986 unreserved set
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded: a `/`, `?`, `#`, `%` or space
/// in a value stays inside its segment.
pub(crate) fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expand(template: &str, input: Value) -> Result<String, ToolError> {
        let Value::Object(map) = input else {
            panic!("not an object")
        };
        UrlTemplate::parse(template).unwrap().expand(&map)
    }

    #[test]
    fn parameters_are_replaced_and_percent_encoded() {
        assert_eq!(
            expand(
                "https://api.example.com/repos/{owner}/{repo}/issues?per_page=5",
                json!({"owner": "rust-lang", "repo": "rust"})
            )
            .unwrap(),
            "https://api.example.com/repos/rust-lang/rust/issues?per_page=5"
        );
        assert_eq!(
            expand("http://h/files/{name}", json!({"name": "../admin"})).unwrap(),
            "http://h/files/..%2Fadmin"
        );
        assert_eq!(
            expand("http://h/files/{name}", json!({"name": "a/b c?d#e%f"})).unwrap(),
            "http://h/files/a%2Fb%20c%3Fd%23e%25f"
        );
        assert_eq!(
            expand("http://h/n/{n}/{b}", json!({"n": 42, "b": true})).unwrap(),
            "http://h/n/42/true"
        );
        assert_eq!(
            expand("http://h/{x}", json!({"x": "é"})).unwrap(),
            "http://h/%C3%A9"
        );
    }

    #[test]
    fn values_that_would_change_the_path_are_refused() {
        for bad in [
            json!(".."),
            json!("."),
            json!(""),
            json!(null),
            json!([1]),
            json!({}),
        ] {
            let e = expand("http://h/files/{name}", json!({ "name": bad })).unwrap_err();
            assert_eq!(e.kind, crate::tools::ToolErrorKind::InvalidInput, "{bad}");
        }
        let e = expand("http://h/files/{name}", json!({})).unwrap_err();
        assert!(e.message.contains("`name` is missing"), "{}", e.message);
    }

    #[test]
    fn templates_are_checked_when_parsed() {
        let t = UrlTemplate::parse("https://api.example.com:8443/a/{b}/c/{d}").unwrap();
        assert_eq!(t.origin(), "https://api.example.com:8443");
        assert_eq!(t.params().collect::<Vec<_>>(), ["b", "d"]);
        for bad in [
            "api.example.com/{x}",
            "https://{host}/x",
            "https://api.example.com:{port}/x",
            "https://h/{x",
            "https://h/{}",
            "https://h/x}",
            "https://h/{a b}",
            "https://h/x#frag",
        ] {
            assert!(UrlTemplate::parse(bad).is_err(), "{bad} parsed");
        }
    }
}
