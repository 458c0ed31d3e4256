//! Outbound HTTP for plugins, through `wasi:http/outgoing-handler`, checked
//! in the host before anything leaves.
//!
//! # What is linked, and what is granted
//!
//! `wasi:http` is linked into the one shared linker, for every plugin: a
//! component that imports it loads whatever its manifest says, and one
//! linker serves all plugins (no second linker, no per-plugin link step).
//! Linking is not granting. A plugin whose [`HttpGrant`] is empty (the
//! default, and every plugin whose manifest does not ask for `http`) has
//! every request refused, with a message naming the manifest key to ask
//! with. Raw sockets stay off for every plugin (`allow_tcp(false)`,
//! `allow_udp(false)`, no name lookups), so `wasi:http` is the only way out
//! and this module checks all of it.
//!
//! # The checks, in order
//!
//! 1. The call's request count (`http_requests` in [`Limits`]).
//! 2. The URL: scheme `http` or `https`; no user name in the authority; the
//!    host a valid name or IP literal, compared lowercase without a
//!    trailing dot; the port explicit or the scheme's default.
//! 3. The origin against the grant's patterns ([`HttpOrigin`]). A pattern
//!    for `https` never lets plain `http` through.
//! 4. The host resolves the name itself and checks every address: loopback,
//!    private, link-local, CGNAT, ULA, unspecified, broadcast, multicast
//!    and reserved ranges (and IPv4 carried in IPv6) are refused unless the
//!    operator set `allow.http_private`. It then connects to an address
//!    that passed, so a second DNS answer cannot swap in another (DNS
//!    rebinding). TLS checks the certificate against the *name*, with the
//!    built-in Mozilla roots.
//! 5. Response bodies count against the call's byte cap
//!    (`http_response_kb`), all responses of a call together; past it the
//!    body fails with `HTTP-response-body-size`.
//!
//! Redirects are not followed: the guest sees the 3xx and its `location`,
//! and a request it makes there is checked like any other. Every request
//! and every byte of a body ends at the call's deadline (the call's own
//! timeout covers the whole call already; the connection task is also
//! bounded by it, so nothing outlives a call that was cut off). Time spent
//! waiting on the network burns no fuel: fuel counts guest instructions.
//!
//! # How a refusal reaches the model
//!
//! The guest sees the `wasi:http` error code (`HTTP-request-denied`, or
//! `HTTP-response-body-size` for the cap), which carries no text. So the
//! host also records the first refusal of each call with its reason and the
//! URL. If the call then fails with the tool's own error (`tool_failed` or
//! `permission_denied`), the host reports the refusal instead, as
//! `permission_denied` (`output_too_large` for the byte cap), the guest's
//! message following. This does not depend on the guest or its language
//! mapping the error code; the Rust SDK maps it too. A call that succeeds
//! anyway (the tool had a fallback) keeps its result. A trap keeps its kind,
//! with the refusal added to its message.

mod send;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;

use crate::egress::{Scheme, normalize_host};
use wasmtime_wasi_http::{
    Error, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

use crate::egress::HttpOrigin;
// For REST tools (`tools::rest`), which check their requests by the same rules.

use super::state::StoreState;
use super::{Limits, PluginIdentity};
use crate::tools::{ToolError, ToolErrorKind};

/// Where a plugin may send HTTP requests. Empty (the default): nowhere.
///
/// Serialized as the patterns, with `private_addresses` only when set; an
/// empty grant is left out of [`Permissions`](super::Permissions)' JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HttpGrant {
    /// The origins requests may go to.
    pub origins: Vec<HttpOrigin>,
    /// Whether names may resolve to (and IP literals be) loopback, private
    /// or link-local addresses; the operator's `allow.http_private`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub private_addresses: bool,
}

impl HttpGrant {
    /// Whether this grant lets no request through.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }
}

/// A store's `wasi:http` context and the hooks that check its requests.
pub(crate) struct HttpState {
    ctx: WasiHttpCtx,
    hooks: Hooks,
}

/// Most bytes of a URL quoted in a message.
const MAX_URL_SHOWN: usize = 256;

struct Hooks {
    grant: HttpGrant,
    max_requests: u32,
    deadline: Instant,
    call: Arc<CallRecord>,
}

/// What the current call did with `wasi:http`. A new one per call:
/// requests still running from an earlier call hold the earlier record.
pub(crate) struct CallRecord {
    plugin: Arc<PluginIdentity>,
    requests: AtomicU32,
    response_bytes: AtomicU64,
    response_cap: u64,
    refusal: Mutex<Option<Refusal>>,
}

/// The first request the host refused in a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    kind: ToolErrorKind,
    message: String,
}

impl CallRecord {
    fn new(plugin: Arc<PluginIdentity>, response_cap: u64) -> Self {
        Self {
            plugin,
            requests: AtomicU32::new(0),
            response_bytes: AtomicU64::new(0),
            response_cap,
            refusal: Mutex::new(None),
        }
    }

    /// Record a refusal (the first of a call is the one reported) and tell
    /// the operator's log.
    fn refuse(&self, kind: ToolErrorKind, message: String) {
        tracing::info!(target: "toolhost::http", plugin = %self.plugin.name, "{message}");
        let mut first = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(Refusal { kind, message });
        }
    }

    /// Record a denied request; the error the guest gets.
    fn deny(&self, message: String) -> Error {
        self.refuse(ToolErrorKind::PermissionDenied, message);
        Error::HttpRequestDenied
    }

    /// Count `n` more bytes of a response body from `url`.
    fn read_response_bytes(&self, n: usize, url: &str) -> Result<(), Error> {
        let total = self
            .response_bytes
            .fetch_add(n as u64, Ordering::Relaxed)
            .saturating_add(n as u64);
        if total <= self.response_cap {
            return Ok(());
        }
        self.refuse(
            ToolErrorKind::OutputTooLarge,
            format!(
                "the response from {url} was cut off: this call's HTTP responses passed {} bytes, the most one call may read (`http_response_kb` under [limits]); ask for less",
                self.response_cap
            ),
        );
        Err(Error::HttpResponseBodySize(Some(self.response_cap)))
    }
}

impl HttpState {
    /// No requests made yet; `grant` and `limits` bound every call.
    pub(crate) fn new(plugin: Arc<PluginIdentity>, grant: HttpGrant, limits: &Limits) -> Self {
        Self {
            ctx: WasiHttpCtx::new(),
            hooks: Hooks {
                grant,
                max_requests: limits.http_requests,
                deadline: Instant::now(),
                call: Arc::new(CallRecord::new(plugin, limits.http_response_bytes)),
            },
        }
    }

    /// A new call: fresh counts, no refusal, and its deadline.
    pub(crate) fn start_call(&mut self, deadline: Instant) {
        self.hooks.deadline = deadline;
        let last = &self.hooks.call;
        self.hooks.call = Arc::new(CallRecord::new(Arc::clone(&last.plugin), last.response_cap));
    }

    /// The call's deadline moved (it waited for a person): requests made
    /// from now on end at `deadline`.
    pub(crate) fn move_deadline(&mut self, deadline: Instant) {
        self.hooks.deadline = deadline;
    }

    /// The first refusal of the call that ran, if any.
    pub(crate) fn take_refusal(&mut self) -> Option<Refusal> {
        self.hooks
            .call
            .refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// A call's result, with the host's own account of a refused request in
/// place of the tool's error when the tool failed (see the module docs).
pub(crate) fn explain<T>(
    result: Result<T, ToolError>,
    refusal: Option<Refusal>,
) -> Result<T, ToolError> {
    let (Err(error), Some(refusal)) = (&result, refusal) else {
        return result;
    };
    let said = crate::text::clip(&error.message, 512);
    Err(match error.kind {
        // The guest's own account of a denial adds nothing to the host's.
        ToolErrorKind::PermissionDenied if refusal.kind == ToolErrorKind::PermissionDenied => {
            ToolError::new(refusal.kind, refusal.message)
        }
        ToolErrorKind::ToolFailed | ToolErrorKind::PermissionDenied => ToolError::new(
            refusal.kind,
            format!("{} (the plugin then reported: {said})", refusal.message),
        ),
        ToolErrorKind::Trap => ToolError::new(
            ToolErrorKind::Trap,
            format!(
                "{} (after the host refused: {})",
                error.message, refusal.message
            ),
        ),
        _ => return result,
    })
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http.ctx,
            table: &mut self.table,
            hooks: &mut self.http.hooks,
        }
    }
}

type Sending = Box<dyn Future<Output = Result<send::Sent, Error>> + Send>;

impl Hooks {
    /// The origin checks that need no network; the request to send, or why not.
    fn check(&mut self, request: http::Request<WasiBody>) -> Result<send::Checked, String> {
        let uri = request.uri();
        let url = crate::text::clip(&uri.to_string(), MAX_URL_SHOWN).into_owned();
        let refused = |why: String| format!("the request to {url} was refused: {why}");
        if self.grant.is_empty() {
            return Err(refused(format!(
                "this plugin may not use the network. Its manifest can ask for the origin with `[permissions] http = [\"{}\"]`, which the host config must allow (`allow.http`)",
                origin_of(uri).unwrap_or_else(|| "https://HOST".to_owned())
            )));
        }
        let n = self.call.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.max_requests {
            return Err(refused(format!(
                "it would be HTTP request {n} of this call, and one call may make at most {} (`http_requests` under [limits])",
                self.max_requests
            )));
        }
        let scheme = uri
            .scheme_str()
            .and_then(Scheme::parse)
            .ok_or_else(|| refused("only http and https URLs are allowed".to_owned()))?;
        let authority = uri
            .authority()
            .ok_or_else(|| refused("the URL has no host".to_owned()))?;
        if authority.as_str().contains('@') {
            return Err(refused("a user name in the URL is not allowed".to_owned()));
        }
        let raw_host = authority.host();
        let host = raw_host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(raw_host);
        let host = normalize_host(host)
            .ok_or_else(|| refused("the host is not a valid name or IP address".to_owned()))?;
        let port = authority.port_u16().unwrap_or(scheme.default_port());
        if !self
            .grant
            .origins
            .iter()
            .any(|o| o.matches(scheme, &host, port))
        {
            let granted: Vec<String> = self.grant.origins.iter().map(|o| o.to_string()).collect();
            return Err(refused(format!(
                "{} is not an origin this plugin was granted (its `[permissions] http`: {}); add it to the manifest, within the host config's `allow.http`",
                origin_of(uri).unwrap_or_default(),
                crate::text::clip(&granted.join(", "), 1024)
            )));
        }
        Ok(send::Checked {
            request,
            url,
            scheme,
            host,
            port,
            private_ok: self.grant.private_addresses,
            deadline: self.deadline,
            call: Arc::clone(&self.call),
        })
    }
}

/// `scheme://host[:port]` of `uri`, the port shown when not the default.
fn origin_of(uri: &http::Uri) -> Option<String> {
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?;
    let default = Scheme::parse(scheme).map(Scheme::default_port);
    let host = authority.host().to_ascii_lowercase();
    Some(match authority.port_u16() {
        Some(port) if Some(port) != default => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

impl WasiHttpHooks for Hooks {
    // What a guest's request meets on the network is the guest's business:
    // logged at debug (wasmtime-wasi-http's defaults warn), and a
    // certificate the roots do not trust is told apart from other TLS
    // failures.

    fn p2_error_from_connect(&mut self, err: &std::io::Error) -> ErrorCode {
        tracing::debug!(target: "toolhost::http", plugin = %self.call.plugin.name, "connect: {err}");
        match err.kind() {
            std::io::ErrorKind::TimedOut => ErrorCode::ConnectionTimeout,
            _ => ErrorCode::ConnectionRefused,
        }
    }

    fn p2_error_from_tls(&mut self, err: &std::io::Error) -> ErrorCode {
        tracing::debug!(target: "toolhost::http", plugin = %self.call.plugin.name, "TLS: {err}");
        let certificate = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<tokio_rustls::rustls::Error>())
            .is_some_and(|e| {
                matches!(
                    e,
                    tokio_rustls::rustls::Error::InvalidCertificate(_)
                        | tokio_rustls::rustls::Error::NoCertificatesPresented
                )
            });
        if certificate {
            ErrorCode::TlsCertificateError
        } else {
            ErrorCode::TlsProtocolError
        }
    }

    fn p2_error_from_hyper(&mut self, err: &hyper::Error) -> ErrorCode {
        tracing::debug!(target: "toolhost::http", plugin = %self.call.plugin.name, "HTTP: {err}");
        ErrorCode::HttpProtocolError
    }

    /// Every scheme reaches `send_request`, where anything but http and
    /// https is refused with a recorded reason.
    fn is_supported_scheme(&mut self, _scheme: &http::uri::Scheme) -> bool {
        true
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sending {
        // The guest's own timeouts are not needed: the call's deadline
        // bounds connecting, the response and its body.
        match self.check(request) {
            Ok(checked) => {
                tracing::debug!(target: "toolhost::http", plugin = %self.call.plugin.name, url = %checked.url, "sending");
                Box::new(send::send(checked))
            }
            Err(message) => {
                let error = self.call.deny(message);
                Box::new(async move { Err(error) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(origins: &[&str], max_requests: u32) -> Hooks {
        let limits = Limits {
            http_requests: max_requests,
            ..Limits::default()
        };
        let grant = HttpGrant {
            origins: origins.iter().map(|o| o.parse().unwrap()).collect(),
            private_addresses: false,
        };
        let plugin = Arc::new(PluginIdentity {
            name: "test".into(),
            config: Default::default(),
        });
        HttpState::new(plugin, grant, &limits).hooks
    }

    fn check(hooks: &mut Hooks, url: &str) -> Result<String, String> {
        let request = http::Request::get(url)
            .body(http_body_util::BodyExt::boxed_unsync(
                http_body_util::Empty::new().map_err(|e: std::convert::Infallible| match e {}),
            ))
            .unwrap();
        hooks
            .check(request)
            .map(|c| format!("{}:{}", c.host, c.port))
    }

    use http_body_util::BodyExt as _;

    #[test]
    fn requests_are_checked_against_the_grant() {
        let mut h = hooks(
            &["https://api.example.com", "https://*.example.org:8443"],
            16,
        );
        assert_eq!(
            check(&mut h, "https://API.example.com./v1").unwrap(),
            "api.example.com:443"
        );
        assert_eq!(
            check(&mut h, "https://a.b.example.org:8443/").unwrap(),
            "a.b.example.org:8443"
        );
        for (url, says) in [
            (
                "http://api.example.com/",
                "http://api.example.com is not an origin",
            ),
            (
                "https://api.example.com:444/",
                "https://api.example.com:444 is not",
            ),
            (
                "https://evil.example.net/x",
                "https://evil.example.net is not",
            ),
            (
                "https://example.org:8443/",
                "https://example.org:8443 is not",
            ),
            ("https://user@api.example.com/", "user name"),
            ("ftp://api.example.com/", "only http and https"),
        ] {
            let message = check(&mut h, url).unwrap_err();
            assert!(message.contains(says), "{url}: {message}");
            assert!(message.contains("the request to"), "{message}");
        }
    }

    #[test]
    fn no_grant_names_the_key_to_ask_with() {
        let mut h = hooks(&[], 16);
        let message = check(&mut h, "https://api.example.com/v1?q=1").unwrap_err();
        assert!(
            message.contains("https://api.example.com/v1?q=1"),
            "{message}"
        );
        assert!(
            message.contains(r#"`[permissions] http = ["https://api.example.com"]`"#),
            "{message}"
        );
    }

    #[test]
    fn the_request_count_is_capped_per_call() {
        let mut h = hooks(&["https://api.example.com"], 2);
        check(&mut h, "https://api.example.com/1").unwrap();
        check(&mut h, "https://api.example.com/2").unwrap();
        let message = check(&mut h, "https://api.example.com/3").unwrap_err();
        assert!(message.contains("at most 2"), "{message}");
        let mut state = HttpState {
            ctx: WasiHttpCtx::new(),
            hooks: h,
        };
        state.start_call(Instant::now());
        check(&mut state.hooks, "https://api.example.com/1").unwrap();
    }

    #[test]
    fn a_refusal_replaces_the_tools_own_failure() {
        let refusal = Refusal {
            kind: ToolErrorKind::PermissionDenied,
            message: "the request to https://x.test/ was refused: ...".into(),
        };
        let failed: Result<String, _> =
            Err(ToolError::failed("request failed: HTTP-request-denied"));
        let e = explain(failed, Some(refusal.clone())).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::PermissionDenied);
        assert!(
            e.message.starts_with("the request to https://x.test/"),
            "{e}"
        );
        assert!(e.message.contains("HTTP-request-denied"), "{e}");
        let denied: Result<String, _> =
            Err(ToolError::new(ToolErrorKind::PermissionDenied, "refused"));
        let e = explain(denied, Some(refusal.clone())).unwrap_err();
        assert_eq!(e.message, refusal.message);
        assert_eq!(
            explain(Ok::<String, _>("{}".into()), Some(refusal.clone())),
            Ok("{}".into())
        );
        let trap: Result<String, _> =
            Err(ToolError::new(ToolErrorKind::Trap, "the plugin panicked"));
        let e = explain(trap, Some(refusal)).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::Trap);
        assert!(e.message.contains("https://x.test/"), "{e}");
    }
}
