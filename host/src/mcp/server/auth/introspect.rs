//! Opaque access tokens, checked by asking the authorization server
//! (OAuth 2.0 Token Introspection, RFC 7662).
//!
//! A token that is not a JWT cannot be checked here: only its issuer knows
//! what it stands for. [`IntrospectionVerifier`] posts it to the issuer's
//! introspection endpoint, authenticated as this resource server's own
//! client (HTTP Basic, RFC 7662 §2.1), and accepts it only when the answer
//! says `active` and its claims pass the same checks as a JWT's: `aud`
//! names this server, `iss` (when given) is the issuer, `exp` and `nbf`
//! (when given) hold. Answers are kept for a while (a minute by default,
//! never past the token's `exp`), so a client's calls do not each cost a
//! round trip to the issuer; a token revoked meanwhile is refused once its
//! answer is dropped. [`JwtOrOpaque`] checks JWTs locally and introspects
//! the rest.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use super::claims::{Expected, principal};
use super::kept::{Kept, key};
use super::{AuthError, JwtVerifier, Principal, Refusal, Verifier};

/// The largest introspection answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The largest token sent to be introspected.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why an introspection verifier could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IntrospectionError {
    /// The endpoint may not be used.
    #[error(
        "the introspection endpoint {0} is not https (plain http is allowed to loopback only); use the issuer's https URL"
    )]
    Insecure(String),
    /// The HTTP client could not be built.
    #[error("cannot make the HTTP client for introspection: {0}")]
    Client(String),
}

/// Checks opaque access tokens through the issuer's introspection
/// endpoint (RFC 7662).
pub struct IntrospectionVerifier {
    endpoint: String,
    /// `Authorization: Basic …` of this server's client: its id and secret.
    credentials: String,
    issuer: Option<String>,
    audience: String,
    leeway: Duration,
    keep_for: Duration,
    client: reqwest::Client,
    kept: Kept<Result<Principal, Refusal>>,
}

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the credentials.
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("keep_for", &self.keep_for)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Tokens for `audience` (this server's canonical URI), introspected
    /// at `endpoint` as the client `client_id` with `client_secret` (its
    /// credentials at the authorization server), over the host's TLS
    /// settings, with no redirects and a 10 second timeout.
    ///
    /// # Errors
    ///
    /// [`IntrospectionError::Insecure`] for an endpoint that is not
    /// `https` (`http` only to loopback).
    pub fn new(
        endpoint: impl Into<String>,
        client_id: &str,
        client_secret: &str,
        audience: impl Into<String>,
    ) -> Result<Self, IntrospectionError> {
        use base64::Engine as _;
        let endpoint: String = endpoint.into();
        if !super::jwt::fetchable(&endpoint) {
            return Err(IntrospectionError::Insecure(endpoint));
        }
        let client = crate::tls::http_client()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| IntrospectionError::Client(e.to_string()))?;
        // RFC 6749 §2.3.1: each form-encoded, then joined and base64'd.
        let pair = format!("{}:{}", form(client_id), form(client_secret));
        let credentials = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        Ok(Self {
            endpoint,
            credentials,
            issuer: None,
            audience: audience.into(),
            leeway: Duration::from_secs(60),
            keep_for: Duration::from_secs(60),
            client,
            kept: Kept::default(),
        })
    }

    /// Require this `iss` of an answer that names one.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The leeway on `exp` and `nbf` (clock skew); default 60 seconds.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How long an answer is kept (default a minute; never past the
    /// token's `exp`): a token revoked at the issuer is refused here at
    /// most this much later. Zero: every request is introspected.
    #[must_use]
    pub fn keep_answers_for(mut self, keep_for: Duration) -> Self {
        self.keep_for = keep_for;
        self
    }

    async fn check(&self, token: &str) -> Result<Principal, AuthError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Invalid(Refusal::Malformed));
        }
        let key = key(token);
        if let Some(answer) = self.kept.get(&key) {
            return answer.map_err(AuthError::Invalid);
        }
        let (answer, expires) = self.introspect(token).await?;
        let keep = expires.map_or(self.keep_for, |left| left.min(self.keep_for));
        if !keep.is_zero() {
            self.kept.keep(key, Instant::now() + keep, answer.clone());
        }
        answer.map_err(AuthError::Invalid)
    }

    /// Ask the issuer about `token`: what it stands for and how long until
    /// it expires (if it says), or why it is refused; an error when the
    /// issuer cannot be asked (the token is then not refused, but not
    /// accepted either: `503`).
    async fn introspect(
        &self,
        token: &str,
    ) -> Result<(Result<Principal, Refusal>, Option<Duration>), AuthError> {
        let unavailable = |why: String| {
            // The reason names the endpoint, never the token.
            tracing::warn!("token introspection at {} failed: {why}", self.endpoint);
            AuthError::Unavailable("the authorization server cannot be asked about tokens".into())
        };
        let body = format!("token={}&token_type_hint=access_token", form(token));
        let mut response = self
            .client
            .post(&self.endpoint)
            .header(reqwest::header::AUTHORIZATION, &self.credentials)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(unavailable(if status.as_u16() == 401 {
                "it refused this server's client credentials (401); check [auth] client_id and the \
                 secret"
                    .to_owned()
            } else {
                format!("it answered {status}")
            }));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unavailable(e.without_url().to_string()))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > MAX_ANSWER_BYTES {
                return Err(unavailable(format!(
                    "its answer is larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
        }
        let Ok(serde_json::Value::Object(mut claims)) = serde_json::from_slice(&bytes) else {
            return Err(unavailable("its answer is not a JSON object".to_owned()));
        };
        // RFC 7662 §2.2: `active` is required, and nothing else may be
        // trusted of an inactive token.
        if claims.remove("active") != Some(serde_json::Value::Bool(true)) {
            return Ok((Err(Refusal::Inactive), None));
        }
        let expires = claims
            .get("exp")
            .and_then(serde_json::Value::as_f64)
            .map(|exp| {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64();
                Duration::from_secs_f64((exp - now).max(0.0))
            });
        let expected = Expected {
            issuer: self.issuer.as_deref(),
            issuer_required: false,
            audience: &self.audience,
            expiry_required: false,
            leeway: self.leeway,
        };
        Ok((principal(claims, &expected), expires))
    }
}

impl Verifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(self.check(token))
    }
}

/// JWT access tokens checked locally, any other token introspected: for
/// an issuer that hands out both (or while it moves from one to the
/// other).
#[derive(Debug)]
pub struct JwtOrOpaque {
    jwt: JwtVerifier,
    opaque: IntrospectionVerifier,
}

impl JwtOrOpaque {
    /// Tokens shaped as a JWS (three dot-separated parts) go to `jwt`, the
    /// rest to `opaque`.
    pub fn new(jwt: JwtVerifier, opaque: IntrospectionVerifier) -> Self {
        Self { jwt, opaque }
    }
}

impl Verifier for JwtOrOpaque {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        if token.split('.').count() == 3 {
            self.jwt.verify(token)
        } else {
            self.opaque.verify(token)
        }
    }
}

/// `text` as a value of an `application/x-www-form-urlencoded` body.
fn form(text: &str) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a valid URL");
    url.query_pairs_mut().append_pair("v", text);
    url.query()
        .and_then(|q| q.strip_prefix("v="))
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(form("plain-Token_1.2~"), "plain-Token_1.2%7E");
    }

    #[test]
    fn only_https_or_loopback_http_endpoints_are_used() {
        for bad in [
            "http://login.example.com/introspect",
            "ftp://127.0.0.1/x",
            "not a url",
        ] {
            assert!(matches!(
                IntrospectionVerifier::new(bad, "rs", "s", "https://t.example/mcp"),
                Err(IntrospectionError::Insecure(_))
            ));
        }
        for good in [
            "https://login.example.com/introspect",
            "http://127.0.0.1:9/introspect",
            "http://localhost:9/introspect",
        ] {
            assert!(IntrospectionVerifier::new(good, "rs", "s", "https://t.example/mcp").is_ok());
        }
    }

    #[test]
    fn its_debug_form_shows_no_secret() {
        let v = IntrospectionVerifier::new(
            "https://login.example.com/introspect",
            "rs",
            "hunter2",
            "https://t.example/mcp",
        )
        .unwrap();
        let shown = format!("{v:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("aHVudGVyMg"));
    }
}
