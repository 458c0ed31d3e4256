//! HTTP origin patterns: what a manifest asks for, what an operator allows,
//! and what a request is checked against.
//!
//! A pattern is an origin, `scheme://host[:port]`, never a path: the host
//! grants a plugin a server, and what the plugin asks that server is its
//! own business (a path prefix is no boundary anyway: `/api/../admin`).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A set of HTTP origins: `https://api.example.com`, `https://*.example.org:8443`,
/// `http://127.0.0.1:*`.
///
/// - The scheme is `http` or `https`; a pattern for one never matches the
///   other, so plain `http://` is reachable only where a pattern says so.
/// - The host is a name or an IP literal (IPv6 in brackets), matched
///   exactly (ASCII case-insensitively), `*.example.org` for every name
///   *under* `example.org` (not `example.org` itself), or `*` for any host.
/// - The port is a number, `*` for any, or left out for the scheme's
///   default (443, 80).
///
/// # Examples
///
/// ```
/// use toolhost::egress::HttpOrigin;
///
/// let allowed: HttpOrigin = "https://*.example.org".parse().unwrap();
/// let asked: HttpOrigin = "https://api.example.org:443".parse().unwrap();
/// assert!(allowed.covers(&asked));
/// assert!(!allowed.covers(&"http://api.example.org".parse().unwrap()));
/// assert_eq!(asked.to_string(), "https://api.example.org");
/// assert!("https://example.org/api".parse::<HttpOrigin>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpOrigin {
    scheme: Scheme,
    host: HostPattern,
    port: PortPattern,
}

/// The two schemes wasi:http requests may use here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("https") {
            Some(Self::Https)
        } else if text.eq_ignore_ascii_case("http") {
            Some(Self::Http)
        } else {
            None
        }
    }

    pub(crate) fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HostPattern {
    /// One host: a lowercase name, or an IP address in its canonical text
    /// form (IPv6 without brackets).
    Exact(String),
    /// Every name that ends in `.` + this (lowercase), at any depth.
    Under(String),
    /// Any host.
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PortPattern {
    Exact(u16),
    Any,
}

/// Why a text is not an [`HttpOrigin`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not an HTTP origin pattern: {reason}")]
pub struct HttpOriginError {
    pattern: String,
    reason: &'static str,
}

impl FromStr for HttpOrigin {
    type Err = HttpOriginError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason| HttpOriginError {
            pattern: crate::text::untrusted(text, 200),
            reason,
        };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            fail("write it as scheme://host[:port], e.g. https://api.example.com")
        })?;
        let scheme =
            Scheme::parse(scheme).ok_or_else(|| fail("the scheme must be http or https"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@', '\\']) {
            return Err(fail(
                "a pattern is an origin, scheme://host[:port], without a path, query or user name",
            ));
        }
        let (host, port) = split_host_port(rest).ok_or_else(|| fail("the host is malformed"))?;
        let port = match port {
            None => PortPattern::Exact(scheme.default_port()),
            Some("*") => PortPattern::Any,
            // Written back and compared, so `:0443` is refused rather
            // than read as 443.
            Some(written) => match written.parse::<u16>() {
                Ok(port) if port != 0 && port.to_string() == written => PortPattern::Exact(port),
                _ => return Err(fail("the port must be a number from 1 to 65535, or *")),
            },
        };
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            let domain = normalize_host(domain)
                .filter(|d| d.parse::<IpAddr>().is_err())
                .ok_or_else(|| fail("`*.` must stand before a domain name, as in *.example.org"))?;
            HostPattern::Under(domain)
        } else {
            let host = normalize_host(host).ok_or_else(|| {
                fail("the host must be a name (letters, digits, - and .), an IP address, *.domain or *")
            })?;
            HostPattern::Exact(host)
        };
        Ok(Self { scheme, host, port })
    }
}

/// `host` and the text after its `:`, if any; IPv6 literals in brackets.
fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    Some(match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    })
}

/// A host name or IP literal (IPv6 without brackets) in the one form
/// patterns and requests are compared in: lowercase, no trailing dot, IP
/// addresses in canonical text. `None` if it is neither.
pub(crate) fn normalize_host(host: &str) -> Option<String> {
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return Some(v6.to_string());
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip.to_string());
    }
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    valid.then(|| host.to_ascii_lowercase())
}

impl HttpOrigin {
    /// Whether a request to `host` (normalized, see [`normalize_host`]) on
    /// `port` with `scheme` is inside this pattern.
    pub(crate) fn matches(&self, scheme: Scheme, host: &str, port: u16) -> bool {
        self.scheme == scheme
            && match self.port {
                PortPattern::Any => true,
                PortPattern::Exact(p) => p == port,
            }
            && match &self.host {
                HostPattern::Any => true,
                HostPattern::Exact(h) => h == host,
                HostPattern::Under(domain) => is_under(host, domain),
            }
    }

    /// Whether every request `other` matches, this matches too: how an
    /// operator's allowed pattern bounds what a manifest asks for.
    pub fn covers(&self, other: &HttpOrigin) -> bool {
        let port = match (self.port, other.port) {
            (PortPattern::Any, _) => true,
            (PortPattern::Exact(a), PortPattern::Exact(b)) => a == b,
            (PortPattern::Exact(_), PortPattern::Any) => false,
        };
        let host = match (&self.host, &other.host) {
            (HostPattern::Any, _) => true,
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Under(domain), HostPattern::Exact(name)) => is_under(name, domain),
            (HostPattern::Under(a), HostPattern::Under(b)) => a == b || is_under(b, a),
            _ => false,
        };
        self.scheme == other.scheme && port && host
    }
}

/// Whether `name` is a name strictly under `domain` (`a.example.org` under
/// `example.org`; `example.org` and `badexample.org` are not).
fn is_under(name: &str, domain: &str) -> bool {
    name.len() > domain.len() + 1
        && name.ends_with(domain)
        && name.as_bytes()[name.len() - domain.len() - 1] == b'.'
        && name.parse::<IpAddr>().is_err()
}

impl fmt::Display for HttpOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Any => f.write_str("*")?,
            HostPattern::Under(domain) => write!(f, "*.{domain}")?,
            HostPattern::Exact(host) if host.contains(':') => write!(f, "[{host}]")?,
            HostPattern::Exact(host) => f.write_str(host)?,
        }
        match self.port {
            PortPattern::Any => f.write_str(":*"),
            PortPattern::Exact(port) if port == self.scheme.default_port() => Ok(()),
            PortPattern::Exact(port) => write!(f, ":{port}"),
        }
    }
}

impl Serialize for HttpOrigin {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HttpOrigin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(text: &str) -> HttpOrigin {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn patterns_parse_and_print_in_one_form() {
        for (written, shown) in [
            ("https://api.example.com", "https://api.example.com"),
            ("HTTPS://API.Example.com./", "https://api.example.com"),
            ("https://api.example.com:443", "https://api.example.com"),
            ("https://*.example.org:8443", "https://*.example.org:8443"),
            ("http://127.0.0.1:*", "http://127.0.0.1:*"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            ("http://[0:0:0:0:0:0:0:1]", "http://[::1]"),
            ("https://*", "https://*"),
        ] {
            assert_eq!(origin(written).to_string(), shown, "{written}");
        }
        for bad in [
            "api.example.com",
            "ftp://example.com",
            "https://example.com/api",
            "https://user@example.com",
            "https://example.com:0",
            "https://example.com:65536",
            "https://example.com:0443",
            "https://ex ample.com",
            "https://exa*mple.com",
            "https://*.*.example.com",
            "https://*.127.0.0.1",
            "https://",
            "https://[::1",
            "https://-bad.example.com",
        ] {
            assert!(bad.parse::<HttpOrigin>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn requests_match_scheme_host_and_port() {
        let api = origin("https://api.example.com");
        assert!(api.matches(Scheme::Https, "api.example.com", 443));
        assert!(!api.matches(Scheme::Http, "api.example.com", 443));
        assert!(!api.matches(Scheme::Https, "api.example.com", 8443));
        assert!(!api.matches(Scheme::Https, "x.api.example.com", 443));

        let under = origin("https://*.example.org:8443");
        assert!(under.matches(Scheme::Https, "a.example.org", 8443));
        assert!(under.matches(Scheme::Https, "a.b.example.org", 8443));
        assert!(!under.matches(Scheme::Https, "example.org", 8443));
        assert!(!under.matches(Scheme::Https, "badexample.org", 8443));
        assert!(!under.matches(Scheme::Https, "a.example.org", 443));

        let any_port = origin("http://localhost:*");
        assert!(any_port.matches(Scheme::Http, "localhost", 1));
        assert!(!any_port.matches(Scheme::Https, "localhost", 443));
    }

    #[test]
    fn an_allowed_pattern_covers_only_narrower_ones() {
        let allowed = origin("https://*.example.org");
        assert!(allowed.covers(&origin("https://a.example.org")));
        assert!(allowed.covers(&origin("https://*.a.example.org")));
        assert!(allowed.covers(&origin("https://*.example.org")));
        assert!(!allowed.covers(&origin("https://example.org")));
        assert!(!allowed.covers(&origin("https://a.example.org:8443")));
        assert!(!allowed.covers(&origin("https://a.example.org:*")));
        assert!(!allowed.covers(&origin("https://*")));
        assert!(!allowed.covers(&origin("http://a.example.org")));
        assert!(origin("https://*:*").covers(&origin("https://x.test:1")));
        assert!(origin("http://127.0.0.1:*").covers(&origin("http://127.0.0.1:8080")));
    }
}
