//! The checked HTTP client behind REST tools: every URL (the first and
//! every redirect hop) against the operator's allow-list, every address a
//! name resolves to against the private ranges, a capped response body.

use std::net::IpAddr;
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::egress::{HttpOrigin, Scheme, normalize_host, private_range};

/// Most redirects one request follows.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// Most bytes of an error response's body quoted in a `tool_failed`
/// message.
pub(crate) const MAX_ERROR_EXCERPT: usize = 512;

/// The operator's HTTP rules, shared by the resolver, the redirect policy
/// and each call.
#[derive(Debug)]
pub(crate) struct Checker {
    pub(crate) origins: Vec<HttpOrigin>,
    pub(crate) private_ok: bool,
}

impl Checker {
    /// Whether `url` may be requested: `None` if so, else why not (a
    /// clause about "it", naming the origin and what to change; the caller
    /// names the URL).
    pub(crate) fn refusal(&self, url: &Url) -> Option<String> {
        let Some(scheme) = Scheme::parse(url.scheme()) else {
            return Some("it is not an http or https URL".to_owned());
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Some(
                "it carries a user name or password; put credentials in a header from an environment variable"
                    .to_owned(),
            );
        }
        let Some(raw) = url.host_str() else {
            return Some("it has no host".to_owned());
        };
        let raw = raw
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(raw);
        let Some(host) = normalize_host(raw) else {
            return Some("its host is malformed".to_owned());
        };
        let ip = host.parse::<IpAddr>().ok();
        let port = url.port_or_known_default().unwrap_or(scheme.default_port());
        if !self
            .origins
            .iter()
            .any(|allowed| allowed.matches(scheme, &host, port))
        {
            let origin = origin_of(url);
            return Some(format!(
                "its origin {origin} is not on the HTTP allow-list; add {origin} to `allow.http` in the host config, or pass --allow-http {origin}"
            ));
        }
        // reqwest does not ask the resolver about IP literals: checked here.
        if let Some(range) = ip.and_then(private_range).filter(|_| !self.private_ok) {
            return Some(format!(
                "{host} is a {range} address, and this host does not let tools reach private or local addresses (`allow.http_private` in the host config, or --allow-http-private)"
            ));
        }
        None
    }
}

/// `scheme://host[:port]` of `url`, for messages.
pub(crate) fn origin_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// A name resolved to an address the operator did not allow.
#[derive(Debug, thiserror::Error)]
#[error(
    "{name} resolves to {ip}, a {range} address, and this host does not let tools reach private or local addresses (`allow.http_private` in the host config, or --allow-http-private)"
)]
pub(crate) struct AddressRefused {
    name: String,
    ip: IpAddr,
    range: &'static str,
}

/// A redirect hop the allow-list refused, or one too many.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct RedirectRefused(pub(crate) String);

/// Resolves names with the system resolver and hands reqwest only the
/// addresses that pass [`private_range`]: the connection goes to an
/// address that was checked, whatever a second DNS answer would say.
struct CheckedResolver(Arc<Checker>);

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let checker = Arc::clone(&self.0);
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<_> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<_> = found
                .into_iter()
                .filter(|address| match private_range(address.ip()) {
                    Some(range) if !checker.private_ok => {
                        refused = refused.or(Some((address.ip(), range)));
                        false
                    }
                    _ => true,
                })
                .collect();
            if let (true, Some((ip, range))) = (allowed.is_empty(), refused) {
                return Err(Box::new(AddressRefused { name, ip, range }) as _);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The clients for one policy: one that follows redirects to any allowed
/// origin, one that follows them only within the first URL's origin (for
/// tools that send secret headers, which must not reach another server).
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    pub(crate) any_origin: reqwest::Client,
    pub(crate) same_origin: reqwest::Client,
}

impl Clients {
    pub(crate) fn new(checker: &Arc<Checker>) -> Result<Self, reqwest::Error> {
        Ok(Self {
            any_origin: client(checker, false)?,
            same_origin: client(checker, true)?,
        })
    }
}

fn client(checker: &Arc<Checker>, same_origin: bool) -> Result<reqwest::Client, reqwest::Error> {
    let hops = Arc::clone(checker);
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let shown = crate::text::untrusted(attempt.url().as_str(), 256);
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(RedirectRefused(format!(
                "it redirected more than {MAX_REDIRECTS} times (the last to {shown})"
            )));
        }
        if let Some(reason) = hops.refusal(attempt.url()) {
            return attempt.error(RedirectRefused(format!(
                "it redirected to {shown}, and {reason}"
            )));
        }
        let first = attempt.previous().first().map(origin_of);
        if same_origin && first.as_deref() != Some(origin_of(attempt.url()).as_str()) {
            return attempt.error(RedirectRefused(format!(
                "it redirected to {shown}, which leaves the tool's origin; the tool sends headers from environment variables, and those go to its own origin only"
            )));
        }
        attempt.follow()
    });
    crate::tls::http_client()
        .dns_resolver(Arc::new(CheckedResolver(Arc::clone(checker))))
        .redirect(policy)
        // A proxy would resolve names itself, past the address check.
        .no_proxy()
        .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The refusal in `error`'s sources, if the allow-list or the address
/// check stopped the request: the message for `permission_denied`.
pub(crate) fn refusal_in(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<AddressRefused>() {
            return Some(refused.to_string());
        }
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return Some(refused.to_string());
        }
        source = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checker(origins: &[&str], private_ok: bool) -> Checker {
        Checker {
            origins: origins.iter().map(|o| o.parse().unwrap()).collect(),
            private_ok,
        }
    }

    #[test]
    fn urls_are_checked_against_the_allow_list_and_the_private_ranges() {
        let c = checker(&["https://api.example.com", "http://127.0.0.1:*"], false);
        let url = |u: &str| Url::parse(u).unwrap();
        assert_eq!(c.refusal(&url("https://api.example.com/x?y=1")), None);
        let other = c.refusal(&url("https://evil.example.net/x")).unwrap();
        assert!(
            other.contains("--allow-http https://evil.example.net"),
            "{other}"
        );
        assert!(
            other.starts_with("its origin https://evil.example.net "),
            "{other}"
        );
        assert!(c.refusal(&url("http://api.example.com/")).is_some());
        assert!(c.refusal(&url("https://u:p@api.example.com/")).is_some());
        let local = c.refusal(&url("http://127.0.0.1:8080/")).unwrap();
        assert!(local.contains("loopback"), "{local}");
        let c = checker(&["http://127.0.0.1:*"], true);
        assert_eq!(c.refusal(&url("http://127.0.0.1:8080/")), None);
    }
}
