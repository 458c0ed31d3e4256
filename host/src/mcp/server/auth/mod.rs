//! Who is calling: the HTTP server as an OAuth 2.1 resource server (the
//! MCP authorization spec).
//!
//! A [`Verifier`] turns the bearer token of a request into a [`Principal`]
//! or refuses it. Three come with the library: [`StaticToken`] (one shared
//! secret, for simple setups), [`JwtVerifier`] (access tokens of an
//! authorization server, checked against its JWKS) and
//! [`IntrospectionVerifier`] (opaque tokens, checked by asking their issuer,
//! RFC 7662), with [`JwtOrOpaque`] for an issuer of both; a program may
//! give its own. [`ResourceServer`] wraps a verifier with what the server publishes
//! about itself: its canonical URI (the audience tokens must name), the
//! authorization servers that issue them and the scopes it needs. Given to
//! [`ServerOptions::resource_server`](super::ServerOptions::resource_server),
//! the HTTP server
//!
//! - publishes Protected Resource Metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource` plus the URI's path;
//! - answers a request without a valid token `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` (and
//!   `error="invalid_token"` for a token it refused);
//! - answers a token without the needed scopes `403` with
//!   `error="insufficient_scope"`;
//! - hands the [`Principal`] to the request (the `http::request::Parts`
//!   extensions rmcp gives a handler), so what a call does can be owned
//!   by who asked.
//!
//! Tokens are never logged, never in an error's text, and never passed on
//! to upstream servers (MCP or REST): a request's `Authorization` header
//! stops here.

mod claims;
mod denied;
pub(super) mod http;
mod introspect;
mod jwt;
mod kept;
pub mod policy;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

pub(in crate::mcp::server) use denied::refusal;
pub use denied::{Denied, RATE_LIMITED, Spent};
pub use introspect::{IntrospectionError, IntrospectionVerifier, JwtOrOpaque};
pub use jwt::{Algorithm, Jwks, JwksError, JwtVerifier};
pub use policy::{Permit, Policy, Quota, Rate, Rule, Who};

/// Who sent a request, as its verified token says.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    subject: String,
    client_id: Option<String>,
    scopes: BTreeSet<String>,
    claims: Arc<serde_json::Map<String, serde_json::Value>>,
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The claims may carry personal data: their names only.
        f.debug_struct("Principal")
            .field("subject", &self.subject)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("claims", &self.claims.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Principal {
    /// A principal named `subject`, with no client id, scopes or claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            client_id: None,
            scopes: BTreeSet::new(),
            claims: Arc::default(),
        }
    }

    /// The same, with the client (OAuth `client_id`) it acts through.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The same, also granted `scopes`.
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The same, with these claims (a JWT's payload).
    #[must_use]
    pub fn with_claims(mut self, claims: serde_json::Map<String, serde_json::Value>) -> Self {
        self.claims = Arc::new(claims);
        self
    }

    /// The subject (`sub`; for a client acting for itself, often its id).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The client it acts through (`client_id`, or `azp`), if known.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The scopes granted.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The principal a request was verified as, from its context's
    /// extensions (`RequestContext::extensions` in a handler): what the
    /// resource server put in the HTTP request rmcp hands on. `None` over
    /// stdio, or without a verifier.
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<&Principal> {
        extensions
            .get::<axum::http::request::Parts>()?
            .extensions
            .get::<Principal>()
    }

    /// What identifies this principal as the owner of what it opened (an
    /// HTTP session, an approval's round): its subject and its client, so
    /// that neither another user of the same client nor the same user
    /// through another client is taken for it.
    pub fn owner_key(&self) -> String {
        // The subject's length first: no subject and client pair spells
        // another's.
        let client = self.client_id.as_deref().unwrap_or("");
        format!("{}:{}{client}", self.subject.len(), self.subject)
    }

    /// A claim of the token, if it had claims (a JWT does).
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        self.claims.get(name)
    }
}

/// Why a token was refused. The text never holds the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("no bearer token; send Authorization: Bearer <access token>")]
    Missing,
    /// The token is not valid for this server.
    #[error("the access token was refused: {0}; get a new token for this server")]
    Invalid(Refusal),
    /// The token is valid but lacks scopes this server needs.
    #[error("the access token lacks scope(s) {needed:?}; ask the authorization server for them")]
    InsufficientScope {
        /// Every scope the request needs.
        needed: Vec<String>,
    },
    /// The verifier could not decide (its key set could not be fetched).
    #[error("cannot check access tokens now: {0}; try again later")]
    Unavailable(String),
}

/// What was wrong with a refused token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Not a well-formed token of the kind expected.
    #[error("it is malformed")]
    Malformed,
    /// Signed with an algorithm not on the allow-list (`none`, HMAC, …).
    #[error("its signing algorithm is not allowed")]
    Algorithm,
    /// Signed by a key the issuer does not publish.
    #[error("it was signed by an unknown key")]
    UnknownKey,
    /// The signature does not verify.
    #[error("its signature does not verify")]
    Signature,
    /// Issued by another issuer.
    #[error("it was issued by another issuer")]
    Issuer,
    /// Issued for another audience (resource).
    #[error("it was issued for another audience")]
    Audience,
    /// Past its `exp`.
    #[error("it has expired")]
    Expired,
    /// Before its `nbf`.
    #[error("it is not valid yet")]
    NotYetValid,
    /// Not the token the server knows (a static token).
    #[error("it is not the server's token")]
    Unknown,
    /// Its issuer says it is not active (revoked, expired, or never
    /// issued), through introspection.
    #[error("its issuer says it is not active (revoked, expired or unknown)")]
    Inactive,
}

/// What checks a bearer token: the JWT verifier, the static token, or a
/// program's own.
pub trait Verifier: Send + Sync + 'static {
    /// The principal `token` stands for, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>>;
}

impl<V: Verifier + ?Sized> Verifier for Arc<V> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        (**self).verify(token)
    }
}

/// One shared secret: whoever holds it is the principal `static-token`.
#[derive(Clone)]
pub struct StaticToken(Arc<str>);

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticToken(<secret>)")
    }
}

impl StaticToken {
    /// The subject of the principal the static token stands for.
    pub const SUBJECT: &'static str = "static-token";

    /// Accept `token` (use a long random one).
    pub fn new(token: impl Into<Arc<str>>) -> Self {
        Self(token.into())
    }
}

impl Verifier for StaticToken {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let ok = super::token::constant_time_eq(token.as_bytes(), self.0.as_bytes());
        Box::pin(async move {
            if ok {
                Ok(Principal::new(Self::SUBJECT))
            } else {
                Err(AuthError::Invalid(Refusal::Unknown))
            }
        })
    }
}

/// A [`Verifier`] with what the server publishes about itself (RFC 9728).
#[derive(Clone)]
pub struct ResourceServer {
    pub(super) verifier: Arc<dyn Verifier>,
    resource: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// Tokens checked by `verifier` for the server at `resource`, its
    /// canonical URI (e.g. `https://tools.example.com/mcp`: what clients
    /// connect to, and the audience a [`JwtVerifier`] requires).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolhost::mcp::server::auth::{ResourceServer, StaticToken};
    ///
    /// let auth = ResourceServer::new("https://tools.example.com/mcp", StaticToken::new("s3cret"))
    ///     .authorization_server("https://login.example.com")
    ///     .scope("tools");
    /// assert_eq!(
    ///     auth.metadata_url(),
    ///     "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
    /// );
    /// ```
    pub fn new(resource: impl Into<String>, verifier: impl Verifier) -> Self {
        Self {
            verifier: Arc::new(verifier),
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// Name an authorization server (its issuer URL) in the metadata.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Require `scope` of every token (a token without it: `403`).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// The canonical URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The path the metadata is served at: the well-known prefix, then
    /// the resource's path (none for a URI without one).
    pub fn metadata_path(&self) -> String {
        let path = path_of(&self.resource).trim_end_matches('/');
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The metadata's URL, named in `WWW-Authenticate`.
    pub fn metadata_url(&self) -> String {
        let origin = &self.resource[..self.resource.len() - path_of(&self.resource).len()];
        format!("{origin}{}", self.metadata_path())
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
        })
    }

    /// Check the bearer token of a request's `authorization` header.
    ///
    /// # Errors
    ///
    /// [`AuthError::Missing`] without one, what the verifier says, or
    /// [`AuthError::InsufficientScope`].
    pub async fn authorize(&self, authorization: Option<&str>) -> Result<Principal, AuthError> {
        let token = authorization
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then_some(token.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Missing)?;
        let principal = self.verifier.verify(token).await?;
        let needed: Vec<String> = self
            .scopes
            .iter()
            .filter(|s| !principal.has_scope(s))
            .cloned()
            .collect();
        if needed.is_empty() {
            Ok(principal)
        } else {
            Err(AuthError::InsufficientScope {
                needed: self.scopes.clone(),
            })
        }
    }

    /// The `WWW-Authenticate` value answering `error`.
    pub fn challenge(&self, error: &AuthError) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        match error {
            AuthError::Missing | AuthError::Unavailable(_) => {}
            AuthError::Invalid(_) => value.push_str(", error=\"invalid_token\""),
            AuthError::InsufficientScope { .. } => value.push_str(", error=\"insufficient_scope\""),
        }
        if !self.scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        value
    }
}

/// The path of `uri` (from the first `/` after `scheme://authority`).
fn path_of(uri: &str) -> &str {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    uri[after_scheme..]
        .find('/')
        .map_or("", |i| &uri[after_scheme + i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lives_under_the_resource_path() {
        let auth = ResourceServer::new("http://127.0.0.1:8080/mcp", StaticToken::new("x"));
        assert_eq!(
            auth.metadata_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            auth.metadata_url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        let root = ResourceServer::new("https://tools.example.com", StaticToken::new("x"));
        assert_eq!(
            root.metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
    }

    #[tokio::test]
    async fn scopes_are_required_and_named_in_the_challenge() {
        let auth =
            ResourceServer::new("https://t.example/mcp", StaticToken::new("secret")).scope("tools");
        // The static token's principal has no scopes.
        let err = auth.authorize(Some("Bearer secret")).await.unwrap_err();
        assert!(matches!(err, AuthError::InsufficientScope { .. }));
        assert_eq!(
            auth.challenge(&err),
            "Bearer resource_metadata=\"https://t.example/.well-known/oauth-protected-resource/mcp\", \
             error=\"insufficient_scope\", scope=\"tools\""
        );
        let missing = auth.authorize(None).await.unwrap_err();
        assert_eq!(missing, AuthError::Missing);
        let wrong = auth.authorize(Some("Bearer guess")).await.unwrap_err();
        assert_eq!(wrong, AuthError::Invalid(Refusal::Unknown));
        assert!(!wrong.to_string().contains("guess"));
    }
}
