//! JWT access tokens (RFC 9068) checked against the issuer's JWKS, with
//! ring: an allow-list of asymmetric algorithms (never `none`, never
//! HMAC), `iss`, `aud`, `exp` and `nbf` with a small leeway.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;

use super::{AuthError, Principal, Refusal, Verifier};

/// The most keys a key set may hold (more are ignored).
const MAX_KEYS: usize = 32;
/// The largest key set document fetched.
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// The largest token looked at.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A signing algorithm a [`JwtVerifier`] may accept. Only asymmetric ones:
/// an HMAC token could be made with the public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (2048 to 8192-bit keys).
    Rs256,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
    /// Ed25519.
    EdDsa,
}

impl Algorithm {
    /// Every algorithm, the default allow-list.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Rs256,
        Algorithm::Ps256,
        Algorithm::Es256,
        Algorithm::Es384,
        Algorithm::EdDsa,
    ];

    /// The algorithm a JOSE `alg` names, if allowed at all.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "RS256" => Self::Rs256,
            "PS256" => Self::Ps256,
            "ES256" => Self::Es256,
            "ES384" => Self::Es384,
            "EdDSA" => Self::EdDsa,
            _ => return None,
        })
    }

    /// The JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Ps256 => "PS256",
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
            Self::EdDsa => "EdDSA",
        }
    }
}

/// One public key of a key set.
#[derive(Clone)]
enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (0x04, x, y) on P-256 or P-384.
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

#[derive(Clone)]
struct Key {
    kid: Option<String>,
    alg: Option<String>,
    key: PublicKey,
}

impl Key {
    /// Whether this key may check a token signed with `alg`.
    fn fits(&self, alg: Algorithm) -> bool {
        if self.alg.as_deref().is_some_and(|a| a != alg.name()) {
            return false;
        }
        matches!(
            (&self.key, alg),
            (PublicKey::Rsa { .. }, Algorithm::Rs256 | Algorithm::Ps256)
                | (PublicKey::P256(_), Algorithm::Es256)
                | (PublicKey::P384(_), Algorithm::Es384)
                | (PublicKey::Ed25519(_), Algorithm::EdDsa)
        )
    }

    fn verifies(&self, alg: Algorithm, message: &[u8], sig: &[u8]) -> bool {
        match (&self.key, alg) {
            (PublicKey::Rsa { n, e }, Algorithm::Rs256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, sig)
                .is_ok(),
            (PublicKey::Rsa { n, e }, Algorithm::Ps256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PSS_2048_8192_SHA256, message, sig)
                .is_ok(),
            (PublicKey::P256(point), Algorithm::Es256) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, sig)
                    .is_ok()
            }
            (PublicKey::P384(point), Algorithm::Es384) => {
                UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_FIXED, point)
                    .verify(message, sig)
                    .is_ok()
            }
            (PublicKey::Ed25519(x), Algorithm::EdDsa) => {
                UnparsedPublicKey::new(&signature::ED25519, x)
                    .verify(message, sig)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// A JSON Web Key Set: the public keys an issuer signs tokens with.
#[derive(Clone, Default)]
pub struct Jwks {
    keys: Vec<Key>,
}

impl fmt::Debug for Jwks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwks")
            .field(
                "kids",
                &self.keys.iter().map(|k| &k.kid).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Why a key set could not be read or fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// Not a JWKS document.
    #[error("the key set is not a JWKS document (RFC 7517): {0}")]
    Json(#[source] serde_json::Error),
    /// The JWKS URL may not be used.
    #[error(
        "the JWKS URL {0} is not https (plain http is allowed to loopback only); use the issuer's https URL"
    )]
    Insecure(String),
    /// Fetching failed.
    #[error("cannot fetch the key set from {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
struct WireJwks {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireJwk {
    kty: String,
    kid: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    crv: Option<String>,
    n: Option<String>,
    e: Option<String>,
    x: Option<String>,
    y: Option<String>,
}

impl Jwks {
    /// Read a JWKS document. Keys this verifier cannot use (symmetric
    /// ones, encryption keys, other curves) are left out, as are keys past
    /// the 32nd.
    ///
    /// # Errors
    ///
    /// [`JwksError::Json`] when the document is not a key set.
    pub fn from_json(json: &[u8]) -> Result<Self, JwksError> {
        let wire: WireJwks = serde_json::from_slice(json).map_err(JwksError::Json)?;
        let keys = wire
            .keys
            .into_iter()
            .filter_map(|v| serde_json::from_value::<WireJwk>(v).ok())
            .filter_map(Self::key)
            .take(MAX_KEYS)
            .collect();
        Ok(Self { keys })
    }

    fn key(k: WireJwk) -> Option<Key> {
        if k.use_.as_deref().is_some_and(|u| u != "sig") {
            return None;
        }
        let b64 = |s: &Option<String>| URL_SAFE_NO_PAD.decode(s.as_deref()?).ok();
        let key = match (k.kty.as_str(), k.crv.as_deref()) {
            ("RSA", _) => PublicKey::Rsa {
                n: b64(&k.n)?,
                e: b64(&k.e)?,
            },
            ("EC", Some(crv @ ("P-256" | "P-384"))) => {
                let (x, y) = (b64(&k.x)?, b64(&k.y)?);
                let mut point = vec![4u8];
                point.extend(x);
                point.extend(y);
                if crv == "P-256" {
                    PublicKey::P256(point)
                } else {
                    PublicKey::P384(point)
                }
            }
            ("OKP", Some("Ed25519")) => PublicKey::Ed25519(b64(&k.x)?),
            _ => return None,
        };
        Some(Key {
            kid: k.kid,
            alg: k.alg,
            key,
        })
    }

    /// The number of usable keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no usable key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

/// Whether the server may fetch from `url`: `https`, or plain `http` to
/// loopback only.
pub(super) fn fetchable(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let loopback = parsed.host_str().is_some_and(|h| {
        h == "localhost"
            || h.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback)
}

/// Where the keys come from.
enum Keys {
    Fixed(Jwks),
    Fetched(Fetched),
}

struct Fetched {
    url: String,
    client: reqwest::Client,
    state: tokio::sync::Mutex<FetchState>,
    min_refresh: Duration,
}

#[derive(Default)]
struct FetchState {
    jwks: Jwks,
    fetched_at: Option<Instant>,
}

impl Fetched {
    /// The keys, fetched again when none are known yet, or when `kid` is
    /// unknown and the last fetch is older than `min_refresh` (so a flood
    /// of made-up `kid`s costs the issuer one fetch per interval).
    async fn keys(&self, kid: Option<&str>) -> Result<Jwks, AuthError> {
        let mut state = self.state.lock().await;
        let unknown = kid.is_some_and(|kid| !state.jwks.has_kid(kid));
        let due = state
            .fetched_at
            .is_none_or(|at| unknown && at.elapsed() >= self.min_refresh);
        if due {
            match self.fetch().await {
                Ok(jwks) => {
                    state.jwks = jwks;
                    state.fetched_at = Some(Instant::now());
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    if state.fetched_at.is_none() {
                        return Err(AuthError::Unavailable(
                            "the issuer's key set could not be fetched".into(),
                        ));
                    }
                    // Keep the keys known; try again after the interval.
                    state.fetched_at = Some(Instant::now());
                }
            }
        }
        Ok(state.jwks.clone())
    }

    async fn fetch(&self) -> Result<Jwks, JwksError> {
        let fail = |reason: String| JwksError::Fetch {
            url: self.url.clone(),
            reason,
        };
        let mut response = self
            .client
            .get(&self.url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| fail(e.to_string()))?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fail(e.to_string()))? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_JWKS_BYTES {
                return Err(fail(format!("larger than {MAX_JWKS_BYTES} bytes")));
            }
        }
        Jwks::from_json(&body)
    }
}

/// Checks JWT access tokens: signed by one of the issuer's keys with an
/// allowed algorithm, `iss` the issuer, `aud` naming this server, within
/// `exp` and `nbf` (60 seconds of leeway by default).
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    algorithms: BTreeSet<Algorithm>,
    leeway: Duration,
    keys: Keys,
    /// Tokens verified already, until their `exp` (at most
    /// [`KEEP_VERIFIED`]): a client's next requests with the same token
    /// cost a hash, not a signature check.
    verified: super::kept::Kept<Principal>,
}

/// The longest a verified token is taken as verified without checking it
/// again.
const KEEP_VERIFIED: Duration = Duration::from_secs(300);

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("algorithms", &self.algorithms)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Tokens of `issuer` for `audience` (this server's canonical URI),
    /// checked with the keys at `jwks_uri`, fetched when first needed,
    /// again for a token whose `kid` is unknown (at most every 30
    /// seconds), over the host's TLS settings.
    ///
    /// # Errors
    ///
    /// [`JwksError::Insecure`] for a `jwks_uri` that is not `https`
    /// (`http` only to loopback).
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks_uri: impl Into<String>,
    ) -> Result<Self, JwksError> {
        let url: String = jwks_uri.into();
        if !fetchable(&url) {
            return Err(JwksError::Insecure(url));
        }
        let client = crate::tls::http_client()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| JwksError::Fetch {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self::with(
            issuer,
            audience,
            Keys::Fetched(Fetched {
                url,
                client,
                state: tokio::sync::Mutex::default(),
                min_refresh: Duration::from_secs(30),
            }),
        ))
    }

    /// The same, with a fixed key set (never fetched).
    pub fn with_keys(issuer: impl Into<String>, audience: impl Into<String>, jwks: Jwks) -> Self {
        Self::with(issuer, audience, Keys::Fixed(jwks))
    }

    fn with(issuer: impl Into<String>, audience: impl Into<String>, keys: Keys) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: Algorithm::ALL.into_iter().collect(),
            leeway: Duration::from_secs(60),
            keys,
            verified: super::kept::Kept::default(),
        }
    }

    /// Accept only these algorithms.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The leeway on `exp` and `nbf` (clock skew).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    async fn check(&self, token: &str) -> Result<Principal, Refusal> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(head), Some(body), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refusal::Malformed);
        };
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|_| Refusal::Malformed);
        let header: Header =
            serde_json::from_slice(&decode(head)?).map_err(|_| Refusal::Malformed)?;
        let alg = Algorithm::from_name(&header.alg)
            .filter(|a| self.algorithms.contains(a))
            .ok_or(Refusal::Algorithm)?;
        let sig = decode(sig)?;
        let jwks = match &self.keys {
            Keys::Fixed(jwks) => jwks.clone(),
            Keys::Fetched(fetched) => fetched
                .keys(header.kid.as_deref())
                .await
                .map_err(|_| Refusal::UnknownKey)?,
        };
        let candidates: Vec<&Key> = jwks
            .keys
            .iter()
            .filter(|k| k.fits(alg))
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
            .collect();
        if candidates.is_empty() {
            return Err(Refusal::UnknownKey);
        }
        let message = &token.as_bytes()[..head.len() + 1 + body.len()];
        if !candidates.iter().any(|k| k.verifies(alg, message, &sig)) {
            return Err(Refusal::Signature);
        }
        let claims: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&decode(body)?).map_err(|_| Refusal::Malformed)?;
        super::claims::principal(
            claims,
            &super::claims::Expected {
                issuer: Some(&self.issuer),
                issuer_required: true,
                audience: &self.audience,
                expiry_required: true,
                leeway: self.leeway,
            },
        )
    }
}

impl Verifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(async move {
            let key = super::kept::key(token);
            if let Some(principal) = self.verified.get(&key) {
                return Ok(principal);
            }
            let principal = self.check(token).await.map_err(AuthError::Invalid)?;
            // Until its expiry (checked: present and not past), and never
            // longer than the keeping time.
            let left = principal
                .claim("exp")
                .and_then(serde_json::Value::as_f64)
                .map(|exp| {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_secs_f64();
                    Duration::from_secs_f64((exp - now).clamp(0.0, KEEP_VERIFIED.as_secs_f64()))
                })
                .unwrap_or_default();
            if !left.is_zero() {
                self.verified
                    .keep(key, Instant::now() + left, principal.clone());
            }
            Ok(principal)
        })
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
