//! Outbound HTTP from a tool, through `wasi:http`.
//!
//! A plugin reaches only the origins its manifest asks for and the operator
//! allows:
//!
//! ```toml
//! [permissions]
//! http = ["https://api.example.com"]
//! ```
//!
//! The host checks every request before it leaves (scheme, host, port, the
//! address the name resolves to), caps the requests and response bytes of
//! one call, and ends them at the call's deadline. A refused request is an
//! [`HttpError`] of kind [`HttpErrorKind::Denied`]; `?` turns it into a
//! [`ToolError`] of kind `Denied`, and the host reports the call as
//! `permission_denied` with the URL and the reason.
//!
//! Calls block until the response is in: a tool is one synchronous
//! function, and the host's deadline bounds the wait. Redirects are not
//! followed (the response is the 3xx, see [`Response::redirect_to`]); a
//! request to the new location is checked like any other.
//!
//! # Examples
//!
//! ```no_run
//! use serde::Deserialize;
//! use toolhost_guest::{ToolError, http};
//!
//! #[derive(Deserialize)]
//! struct Release {
//!     tag_name: String,
//! }
//!
//! fn latest(repo: &str) -> Result<String, ToolError> {
//!     let url = format!("https://api.github.com/repos/{repo}/releases/latest");
//!     let release: Release = http::Request::get(&url)
//!         .header("user-agent", "toolhost-plugin")
//!         .send()?
//!         .error_for_status()?
//!         .json()?;
//!     Ok(release.tag_name)
//! }
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

use crate::ToolError;

/// `GET url`, the response whatever its status.
///
/// # Errors
///
/// See [`Request::send`].
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}

/// An HTTP request to send with [`Request::send`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Request {
    /// A request with `method` (`GET`, `POST`, ...) to `url`.
    pub fn new(method: &str, url: &str) -> Self {
        Self {
            method: method.to_owned(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `GET url`.
    pub fn get(url: &str) -> Self {
        Self::new("GET", url)
    }

    /// `POST url`.
    pub fn post(url: &str) -> Self {
        Self::new("POST", url)
    }

    /// Add a header (names are case-insensitive; `host` and hop-by-hop
    /// headers are set by the host and refused here).
    #[must_use]
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.as_ref().to_vec()));
        self
    }

    /// The body to send.
    #[must_use]
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// `value` as a JSON body, with `content-type: application/json`.
    ///
    /// # Errors
    ///
    /// `value` cannot be serialized (a map with non-string keys, say).
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self, HttpError> {
        let body = serde_json::to_vec(value)
            .map_err(|e| HttpError::new(HttpErrorKind::InvalidRequest, &self.url, e))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// Send the request and read the whole response.
    ///
    /// # Errors
    ///
    /// The URL or a header is malformed ([`HttpErrorKind::InvalidRequest`]),
    /// the host refused the request ([`HttpErrorKind::Denied`]), the
    /// response passed the call's byte cap ([`HttpErrorKind::TooLarge`]),
    /// the deadline passed ([`HttpErrorKind::Timeout`]), or the network
    /// failed ([`HttpErrorKind::Network`]). A 4xx or 5xx status is not an
    /// error here: see [`Response::error_for_status`].
    pub fn send(self) -> Result<Response, HttpError> {
        let url = self.url.as_str();
        let invalid = |why: String| HttpError::new(HttpErrorKind::InvalidRequest, url, why);
        let parts = UrlParts::split(url).map_err(|why| invalid(why.to_owned()))?;
        let headers = Fields::from_list(&self.headers)
            .map_err(|e| invalid(format!("a header was refused: {e:?}")))?;
        let request = OutgoingRequest::new(headers);
        let method = method(&self.method);
        request
            .set_method(&method)
            .map_err(|()| invalid(format!("`{}` is not a valid method", self.method)))?;
        request
            .set_scheme(Some(&parts.scheme))
            .map_err(|()| invalid("the scheme is not valid".to_owned()))?;
        request
            .set_authority(Some(parts.authority))
            .map_err(|()| invalid("the host is not valid".to_owned()))?;
        request
            .set_path_with_query(Some(&parts.path_with_query))
            .map_err(|()| invalid("the path is not valid".to_owned()))?;
        let body = request
            .body()
            .map_err(|()| invalid("the body was taken".to_owned()))?;
        let future = outgoing_handler::handle(request, None)
            .map_err(|code| HttpError::from_code(url, code))?;
        // Written after `handle`: the host reads the body while it sends, so
        // a body larger than its buffer does not wait on itself. A failed
        // write is reported by the response (a refused request has no
        // reader); the body is finished either way.
        let _ = write_body(&body, &self.body);
        let _ = OutgoingBody::finish(body, None);
        let response = loop {
            match future.get() {
                Some(response) => break response,
                None => future.subscribe().block(),
            }
        };
        let response = response
            .map_err(|()| HttpError::new(HttpErrorKind::Network, url, "the response was taken"))?
            .map_err(|code| HttpError::from_code(url, code))?;
        let status = response.status();
        let headers = response.headers().entries();
        let incoming = response
            .consume()
            .map_err(|()| HttpError::new(HttpErrorKind::Network, url, "the body was taken"))?;
        let body = read_body(&incoming).map_err(|code| HttpError::from_code(url, code))?;
        drop(IncomingBody::finish(incoming));
        Ok(Response {
            url: self.url,
            status,
            headers,
            body,
        })
    }
}

fn method(name: &str) -> Method {
    match name.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        _ => Method::Other(name.to_owned()),
    }
}

fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), StreamError> {
    if bytes.is_empty() {
        return Ok(());
    }
    let stream = body.write().map_err(|()| StreamError::Closed)?;
    // `blocking_write_and_flush` takes at most 4096 bytes at a time.
    for chunk in bytes.chunks(4096) {
        stream.blocking_write_and_flush(chunk)?;
    }
    Ok(())
}

fn read_body(incoming: &IncomingBody) -> Result<Vec<u8>, ErrorCode> {
    let stream = incoming
        .stream()
        .map_err(|()| ErrorCode::InternalError(Some("the body stream was taken".into())))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => return Ok(body),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(wasip2::http::types::http_error_code(&e)
                    .unwrap_or_else(|| ErrorCode::InternalError(Some(e.to_debug_string()))));
            }
        }
    }
}

/// A URL cut into what `wasi:http` takes.
struct UrlParts<'a> {
    scheme: Scheme,
    authority: &'a str,
    path_with_query: String,
}

impl<'a> UrlParts<'a> {
    fn split(url: &'a str) -> Result<Self, &'static str> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("write the URL in full, as https://host/path")?;
        let scheme = if scheme.eq_ignore_ascii_case("https") {
            Scheme::Https
        } else if scheme.eq_ignore_ascii_case("http") {
            Scheme::Http
        } else {
            Scheme::Other(scheme.to_owned())
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.is_empty() {
            return Err("the URL has no host");
        }
        let tail = tail.split('#').next().unwrap_or_default();
        let path_with_query = match tail.chars().next() {
            None => "/".to_owned(),
            Some('?') => format!("/{tail}"),
            Some(_) => tail.to_owned(),
        };
        Ok(Self {
            scheme,
            authority,
            path_with_query,
        })
    }
}

/// A whole response: status, headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    url: String,
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Response {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The URL this is the response to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The first value of header `name` (case-insensitive), if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The body's bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as UTF-8 text.
    ///
    /// # Errors
    ///
    /// The body is not UTF-8 ([`HttpErrorKind::Decode`]).
    pub fn text(&self) -> Result<&str, HttpError> {
        std::str::from_utf8(&self.body).map_err(|e| {
            HttpError::new(
                HttpErrorKind::Decode,
                &self.url,
                format!("the body is not UTF-8 text: {e}"),
            )
        })
    }

    /// The body parsed as JSON into `T`.
    ///
    /// # Errors
    ///
    /// The body is not JSON of that shape ([`HttpErrorKind::Decode`]).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            HttpError::new(
                HttpErrorKind::Decode,
                &self.url,
                format!("the body is not the JSON expected: {e}"),
            )
        })
    }

    /// `self` if the status is below 400.
    ///
    /// # Errors
    ///
    /// A 4xx or 5xx status ([`HttpErrorKind::Status`]), with the start of
    /// the body in the message.
    pub fn error_for_status(self) -> Result<Self, HttpError> {
        if self.status < 400 {
            return Ok(self);
        }
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(200)]).into_owned();
        Err(HttpError::new(
            HttpErrorKind::Status(self.status),
            &self.url,
            format!("the server answered {}: {body}", self.status),
        ))
    }

    /// Where a redirect (301, 302, 303, 307, 308) points, as an absolute
    /// URL; `None` for any other response. Following it is a new request,
    /// which the host checks like the first.
    pub fn redirect_to(&self) -> Option<String> {
        if !matches!(self.status, 301 | 302 | 303 | 307 | 308) {
            return None;
        }
        let location = self.header("location")?;
        if location.contains("://") {
            return Some(location.to_owned());
        }
        let (scheme, rest) = self.url.split_once("://")?;
        let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..host_end];
        if let Some(path) = location.strip_prefix("//") {
            return Some(format!("{scheme}://{path}"));
        }
        if location.starts_with('/') {
            return Some(format!("{scheme}://{authority}{location}"));
        }
        // Relative to the current path's directory.
        let path = rest[host_end..].split(['?', '#']).next().unwrap_or("");
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        Some(format!("{scheme}://{authority}{dir}{location}"))
    }
}

/// What kind of failure an HTTP request met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpErrorKind {
    /// The URL, a header or the method is malformed.
    InvalidRequest,
    /// The host refused the request: outside this plugin's grant, a private
    /// address, or too many requests in this call.
    Denied,
    /// The responses of this call passed the host's byte cap.
    TooLarge,
    /// The call's deadline passed while waiting on the network.
    Timeout,
    /// The server answered with this 4xx or 5xx status
    /// ([`Response::error_for_status`]).
    Status(u16),
    /// The body is not what was expected (not UTF-8, not the JSON shape).
    Decode,
    /// Name resolution, connection, TLS or the protocol failed.
    Network,
}

/// A failed HTTP request, with the URL. `?` in a tool turns it into a
/// [`ToolError`]: `Denied` for a refused request, `InvalidInput` for a
/// malformed one, `Failed` for the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    kind: HttpErrorKind,
    url: String,
    message: String,
}

impl HttpError {
    fn new(kind: HttpErrorKind, url: &str, message: impl fmt::Display) -> Self {
        Self {
            kind,
            url: url.to_owned(),
            message: message.to_string(),
        }
    }

    fn from_code(url: &str, code: ErrorCode) -> Self {
        let (kind, message) = match code {
            ErrorCode::HttpRequestDenied => (
                HttpErrorKind::Denied,
                "the host refused the request (outside this plugin's `[permissions] http`, a private address, or too many requests in one call)".to_owned(),
            ),
            ErrorCode::HttpResponseBodySize(cap) => (
                HttpErrorKind::TooLarge,
                format!(
                    "the response is larger than this call may read ({} bytes for all responses)",
                    cap.map_or_else(|| "a cap".to_owned(), |c| c.to_string())
                ),
            ),
            ErrorCode::DnsTimeout
            | ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::ConnectionWriteTimeout
            | ErrorCode::HttpResponseTimeout => (
                HttpErrorKind::Timeout,
                format!("the call's deadline passed ({code:?})"),
            ),
            ErrorCode::HttpRequestUriInvalid | ErrorCode::HttpRequestMethodInvalid => (
                HttpErrorKind::InvalidRequest,
                format!("the request is malformed ({code:?})"),
            ),
            ErrorCode::DnsError(_) | ErrorCode::DestinationNotFound => (
                HttpErrorKind::Network,
                "the host name could not be resolved".to_owned(),
            ),
            ErrorCode::ConnectionRefused => {
                (HttpErrorKind::Network, "the connection was refused".to_owned())
            }
            ErrorCode::TlsCertificateError => (
                HttpErrorKind::Network,
                "the server's TLS certificate is not trusted".to_owned(),
            ),
            other => (HttpErrorKind::Network, format!("{other:?}")),
        };
        Self::new(kind, url, message)
    }

    /// The kind of failure.
    pub fn kind(&self) -> HttpErrorKind {
        self.kind
    }

    /// The URL of the request.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request to {}: {}", self.url, self.message)
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for ToolError {
    fn from(e: HttpError) -> Self {
        match e.kind {
            HttpErrorKind::Denied => ToolError::denied(e),
            HttpErrorKind::InvalidRequest => ToolError::invalid_input(e),
            _ => ToolError::failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_what_wasi_http_takes() {
        let p = UrlParts::split("https://api.example.com:8443/v1/x?q=1#frag").unwrap();
        assert!(matches!(p.scheme, Scheme::Https));
        assert_eq!(p.authority, "api.example.com:8443");
        assert_eq!(p.path_with_query, "/v1/x?q=1");
        let p = UrlParts::split("http://[::1]?q").unwrap();
        assert_eq!(p.authority, "[::1]");
        assert_eq!(p.path_with_query, "/?q");
        assert_eq!(
            UrlParts::split("https://x.test").unwrap().path_with_query,
            "/"
        );
        assert!(UrlParts::split("example.com/x").is_err());
        assert!(UrlParts::split("https:///x").is_err());
    }

    fn redirect(url: &str, location: &str) -> Option<String> {
        Response {
            url: url.to_owned(),
            status: 302,
            headers: vec![("location".into(), location.as_bytes().to_vec())],
            body: Vec::new(),
        }
        .redirect_to()
    }

    #[test]
    fn redirects_resolve_against_the_request_url() {
        let base = "http://a.test:8080/dir/page?x=1";
        assert_eq!(
            redirect(base, "https://b.test/"),
            Some("https://b.test/".into())
        );
        assert_eq!(
            redirect(base, "/root"),
            Some("http://a.test:8080/root".into())
        );
        assert_eq!(redirect(base, "//c.test/x"), Some("http://c.test/x".into()));
        assert_eq!(
            redirect(base, "other"),
            Some("http://a.test:8080/dir/other".into())
        );
    }

    #[test]
    fn a_denied_request_becomes_a_denied_tool_error() {
        let e = HttpError::from_code("https://x.test/", ErrorCode::HttpRequestDenied);
        assert_eq!(e.kind(), HttpErrorKind::Denied);
        let tool: ToolError = e.into();
        assert_eq!(tool.kind(), crate::ToolErrorKind::Denied);
        assert!(tool.message().contains("https://x.test/"), "{tool:?}");
    }
}
