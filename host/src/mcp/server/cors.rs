//! CORS for browser clients of the HTTP server (the MCP Inspector in
//! direct mode, a web app using the TypeScript SDK): the origins the
//! server accepts (loopback's, and those `allow_origin` adds) may read its
//! answers, and their preflights are answered before any token is asked
//! for (a browser never sends credentials on a preflight). Any other
//! origin's preflight is refused `403`, as its requests are.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// What a browser may read of an answer besides the simple headers: the
/// session id, the revision, and the OAuth challenge.
const EXPOSED: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";

/// The methods the MCP endpoint answers.
const METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// The origins whose pages may call the server.
#[derive(Debug, Clone, Default)]
pub(super) struct Cors {
    /// Shared: the front that holds it is cloned for every request.
    allowed: std::sync::Arc<[Allowed]>,
}

/// An allowed origin: scheme, host, and a port (`None`: any, written
/// `:*`, or no port at all).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Cors {
    /// Pages of `origins` (`scheme://host[:port]`, a port of `*` for any)
    /// may call the server.
    pub(super) fn new(origins: &[String]) -> Self {
        let allowed = origins
            .iter()
            .filter_map(|o| {
                let (base, any_port) = match o.trim().strip_suffix(":*") {
                    Some(base) => (base, true),
                    None => (o.trim(), false),
                };
                let (scheme, host, port) = parse(base)?;
                Some(Allowed {
                    scheme,
                    host,
                    port: if any_port { None } else { port },
                })
            })
            .collect();
        Self { allowed }
    }

    /// The request's `Origin`, when the server accepts it.
    fn accepted<'a>(&self, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
        headers
            .get(header::ORIGIN)
            .filter(|origin| self.accepts(origin))
    }

    /// Whether the server accepts pages of `origin`.
    fn accepts(&self, origin: &HeaderValue) -> bool {
        let Some((scheme, host, port)) = origin.to_str().ok().and_then(parse) else {
            return false;
        };
        let port = port.or_else(|| default_port(&scheme));
        self.allowed
            .iter()
            .any(|a| a.scheme == scheme && a.host == host && a.port.is_none_or(|p| Some(p) == port))
    }

    /// The answer to a CORS preflight (`OPTIONS` with an `Origin` and
    /// `Access-Control-Request-Method`): `204` with what the origin may
    /// send, or `403` for an origin the server does not accept. `None` for
    /// any other request.
    pub(super) fn preflight(&self, request: &Request) -> Option<Response> {
        let headers = request.headers();
        if request.method() != Method::OPTIONS
            || !headers.contains_key(header::ORIGIN)
            || !headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return None;
        }
        let Some(origin) = self.accepted(headers) else {
            return Some(
                (
                    StatusCode::FORBIDDEN,
                    "Forbidden: Origin header is not allowed\n",
                )
                    .into_response(),
            );
        };
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let out = response.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(METHODS),
        );
        if let Some(asked) = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        out.insert(header::VARY, HeaderValue::from_static("Origin"));
        Some(response)
    }

    /// Let the page of the request's `origin`, when accepted, read
    /// `response`.
    pub(super) fn allow_reading(&self, origin: Option<HeaderValue>, response: &mut Response) {
        let Some(origin) = origin.filter(|o| self.accepts(o)) else {
            return;
        };
        let out = response.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        out.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
        out.append(header::VARY, HeaderValue::from_static("Origin"));
    }
}

/// The scheme, host and port of an origin (`scheme://host[:port]`,
/// lowercase; IPv6 hosts keep their brackets).
fn parse(origin: &str) -> Option<(String, String, Option<u16>)> {
    let uri = axum::http::Uri::try_from(origin).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    Some((
        scheme,
        authority.host().to_ascii_lowercase(),
        authority.port_u16(),
    ))
}

/// The port a scheme implies when an origin leaves it out (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn an_accepted_origin_matches_scheme_host_and_port() {
        let cors = Cors::new(&[
            "http://localhost:*".to_owned(),
            "https://app.example".to_owned(),
            "https://pinned.example:8443".to_owned(),
        ]);
        let accepts =
            |origin: &'static str| cors.accepted(&headers(&[("origin", origin)])).is_some();
        assert!(accepts("http://localhost:6274"));
        assert!(accepts("http://LOCALHOST:1"));
        assert!(accepts("https://app.example"));
        assert!(accepts("https://app.example:444"), "no port: any");
        assert!(accepts("https://pinned.example:8443"));
        assert!(!accepts("https://pinned.example"));
        assert!(!accepts("https://localhost:6274"), "another scheme");
        assert!(!accepts("http://localhost.evil.example:6274"));
        assert!(!accepts("null"));
        assert!(cors.accepted(&HeaderMap::new()).is_none());
    }

    #[test]
    fn a_preflight_is_answered_for_accepted_origins_only() {
        let cors = Cors::new(&["http://localhost:*".to_owned()]);
        let preflight = |origin: &'static str| {
            let mut request = Request::new(Body::empty());
            *request.method_mut() = Method::OPTIONS;
            *request.headers_mut() = headers(&[
                ("origin", origin),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "authorization,content-type",
                ),
            ]);
            cors.preflight(&request).unwrap()
        };
        let ok = preflight("http://localhost:6274");
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            ok.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "http://localhost:6274"
        );
        assert_eq!(
            ok.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "authorization,content-type"
        );
        let refused = preflight("https://evil.example");
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(
            !refused
                .headers()
                .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        );
        // A plain OPTIONS (no preflight) is the router's.
        let mut plain = Request::new(Body::empty());
        *plain.method_mut() = Method::OPTIONS;
        assert!(cors.preflight(&plain).is_none());
    }
}
