//! What a token's claims must say, however they were learnt: from a JWT's
//! verified payload ([`super::JwtVerifier`]) or from the authorization
//! server's introspection answer ([`super::IntrospectionVerifier`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::{Principal, Refusal};

/// What the claims are checked against.
pub(super) struct Expected<'a> {
    /// The issuer (`iss`).
    pub issuer: Option<&'a str>,
    /// Whether `iss` must be present (a JWT's must; an introspection
    /// answer's may be left out, RFC 7662 §2.2, and is checked when given).
    pub issuer_required: bool,
    /// This server's canonical URI, which `aud` must name (RFC 8707).
    pub audience: &'a str,
    /// Whether `exp` must be present (a JWT's must; an introspection
    /// answer says `active` instead, and its `exp` is checked when given).
    pub expiry_required: bool,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    aud: Option<Audience>,
    exp: Option<f64>,
    nbf: Option<f64>,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    scp: Option<Vec<String>>,
}

/// The principal `claims` stand for, when they are for `expected`'s
/// audience, of its issuer, and current; else why not.
pub(super) fn principal(
    claims: serde_json::Map<String, serde_json::Value>,
    expected: &Expected<'_>,
) -> Result<Principal, Refusal> {
    let wire: Claims = serde_json::from_value(serde_json::Value::Object(claims.clone()))
        .map_err(|_| Refusal::Malformed)?;
    match (wire.iss.as_deref(), expected.issuer) {
        (Some(iss), Some(issuer)) if iss != issuer => return Err(Refusal::Issuer),
        (None, _) if expected.issuer_required => return Err(Refusal::Issuer),
        _ => {}
    }
    let audience_ok = match &wire.aud {
        Some(Audience::One(a)) => a == expected.audience,
        Some(Audience::Many(all)) => all.iter().any(|a| a == expected.audience),
        None => false,
    };
    if !audience_ok {
        return Err(Refusal::Audience);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let leeway = expected.leeway.as_secs_f64();
    match wire.exp {
        Some(exp) if now <= exp + leeway => {}
        Some(_) => return Err(Refusal::Expired),
        // An access token without an expiry is not accepted.
        None if expected.expiry_required => return Err(Refusal::Malformed),
        None => {}
    }
    if wire.nbf.is_some_and(|nbf| now + leeway < nbf) {
        return Err(Refusal::NotYetValid);
    }
    let client_id = wire.client_id.or(wire.azp);
    let subject = wire
        .sub
        .or_else(|| client_id.clone())
        .ok_or(Refusal::Malformed)?;
    let scopes: Vec<String> = match (wire.scope, wire.scp) {
        (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (None, Some(scp)) => scp,
        (None, None) => Vec::new(),
    };
    let mut principal = Principal::new(subject)
        .with_scopes(scopes)
        .with_claims(claims);
    if let Some(id) = client_id {
        principal = principal.with_client_id(id);
    }
    Ok(principal)
}
