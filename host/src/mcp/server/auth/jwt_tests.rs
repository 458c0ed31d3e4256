use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

const ISS: &str = "https://login.example.com";
const AUD: &str = "https://tools.example.com/mcp";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

struct Signer {
    key: Ed25519KeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        Self { key, kid }
    }

    fn jwk(&self) -> serde_json::Value {
        json!({"kty": "OKP", "crv": "Ed25519", "kid": self.kid,
               "x": b64(self.key.public_key().as_ref())})
    }

    fn sign(&self, claims: &serde_json::Value) -> String {
        let head = b64(json!({"alg": "EdDSA", "kid": self.kid, "typ": "at+jwt"})
            .to_string()
            .as_bytes());
        let body = b64(claims.to_string().as_bytes());
        let message = format!("{head}.{body}");
        let sig = self.key.sign(message.as_bytes());
        format!("{message}.{}", b64(sig.as_ref()))
    }
}

fn claims() -> serde_json::Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "client_id": "app",
           "scope": "tools read", "exp": now() + 300, "iat": now()})
}

fn verifier(signer: &Signer) -> JwtVerifier {
    let jwks = json!({"keys": [signer.jwk()]}).to_string();
    JwtVerifier::with_keys(ISS, AUD, Jwks::from_json(jwks.as_bytes()).unwrap())
}

async fn refusal(v: &JwtVerifier, token: &str) -> AuthError {
    let err = v.verify(token).await.unwrap_err();
    assert!(!err.to_string().contains(token), "the token leaked: {err}");
    err
}

#[tokio::test]
async fn a_good_token_names_its_principal() {
    let signer = Signer::new("k1");
    let p = verifier(&signer)
        .verify(&signer.sign(&claims()))
        .await
        .unwrap();
    assert_eq!(p.subject(), "alice");
    assert_eq!(p.client_id(), Some("app"));
    assert!(p.has_scope("tools") && p.has_scope("read"));
    assert_eq!(p.claim("iss"), Some(&json!(ISS)));
}

#[tokio::test]
async fn an_audience_list_naming_this_server_is_accepted() {
    let signer = Signer::new("k1");
    let mut c = claims();
    c["aud"] = json!(["https://other.example", AUD]);
    assert!(verifier(&signer).verify(&signer.sign(&c)).await.is_ok());
}

#[tokio::test]
async fn another_audience_is_refused() {
    let signer = Signer::new("k1");
    let mut c = claims();
    c["aud"] = json!("https://other.example/mcp");
    let err = refusal(&verifier(&signer), &signer.sign(&c)).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Audience));
}

#[tokio::test]
async fn an_expired_token_is_refused_past_the_leeway() {
    let signer = Signer::new("k1");
    let mut c = claims();
    c["exp"] = json!(now() - 30);
    // Within the default minute of leeway.
    assert!(verifier(&signer).verify(&signer.sign(&c)).await.is_ok());
    c["exp"] = json!(now() - 120);
    let err = refusal(&verifier(&signer), &signer.sign(&c)).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Expired));
    let mut early = claims();
    early["nbf"] = json!(now() + 600);
    let err = refusal(&verifier(&signer), &signer.sign(&early)).await;
    assert_eq!(err, AuthError::Invalid(Refusal::NotYetValid));
}

#[tokio::test]
async fn a_token_without_expiry_is_refused() {
    let signer = Signer::new("k1");
    let mut c = claims();
    c.as_object_mut().unwrap().remove("exp");
    let err = refusal(&verifier(&signer), &signer.sign(&c)).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Malformed));
}

#[tokio::test]
async fn a_token_of_an_unknown_key_is_refused() {
    let known = Signer::new("k1");
    let stranger = Signer::new("k2");
    let err = refusal(&verifier(&known), &stranger.sign(&claims())).await;
    assert_eq!(err, AuthError::Invalid(Refusal::UnknownKey));
    // The same kid, another key: the signature fails.
    let impostor = Signer::new("k1");
    let err = refusal(&verifier(&known), &impostor.sign(&claims())).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Signature));
}

#[tokio::test]
async fn alg_none_is_refused() {
    let signer = Signer::new("k1");
    let head = b64(br#"{"alg":"none","kid":"k1"}"#);
    let body = b64(claims().to_string().as_bytes());
    for token in [format!("{head}.{body}."), format!("{head}.{body}")] {
        let err = refusal(&verifier(&signer), &token).await;
        assert!(matches!(
            err,
            AuthError::Invalid(Refusal::Algorithm | Refusal::Malformed)
        ));
    }
    let err = refusal(&verifier(&signer), &format!("{head}.{body}.")).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Algorithm));
}

#[tokio::test]
async fn hs256_made_with_the_public_key_is_refused() {
    let signer = Signer::new("k1");
    let head = b64(br#"{"alg":"HS256","kid":"k1"}"#);
    let body = b64(claims().to_string().as_bytes());
    let message = format!("{head}.{body}");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, signer.key.public_key().as_ref());
    let tag = ring::hmac::sign(&key, message.as_bytes());
    let token = format!("{message}.{}", b64(tag.as_ref()));
    let err = refusal(&verifier(&signer), &token).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Algorithm));
}

#[tokio::test]
async fn a_wrong_issuer_is_refused() {
    let signer = Signer::new("k1");
    let mut c = claims();
    c["iss"] = json!("https://evil.example.com");
    let err = refusal(&verifier(&signer), &signer.sign(&c)).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Issuer));
}

#[tokio::test]
async fn an_algorithm_off_the_allow_list_is_refused() {
    let signer = Signer::new("k1");
    let v = verifier(&signer).algorithms([Algorithm::Es256]);
    let err = refusal(&v, &signer.sign(&claims())).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Algorithm));
}

#[tokio::test]
async fn es256_keys_verify() {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = key.public_key().as_ref();
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "e1",
        "x": b64(&point[1..33]), "y": b64(&point[33..])}]});
    let v = JwtVerifier::with_keys(
        ISS,
        AUD,
        Jwks::from_json(jwks.to_string().as_bytes()).unwrap(),
    );
    let head = b64(br#"{"alg":"ES256","kid":"e1"}"#);
    let body = b64(claims().to_string().as_bytes());
    let message = format!("{head}.{body}");
    let sig = key.sign(&rng, message.as_bytes()).unwrap();
    let token = format!("{message}.{}", b64(sig.as_ref()));
    assert_eq!(v.verify(&token).await.unwrap().subject(), "alice");
}

#[test]
fn symmetric_and_encryption_keys_are_left_out() {
    let jwks = json!({"keys": [
        {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32]), "use": "enc"},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32])},
    ]});
    assert_eq!(
        Jwks::from_json(jwks.to_string().as_bytes()).unwrap().len(),
        1
    );
}

#[test]
fn a_jwks_url_must_be_https_except_to_loopback() {
    assert!(matches!(
        JwtVerifier::new(ISS, AUD, "http://login.example.com/jwks"),
        Err(JwksError::Insecure(_))
    ));
    assert!(JwtVerifier::new(ISS, AUD, "http://127.0.0.1:9/jwks").is_ok());
    assert!(JwtVerifier::new(ISS, AUD, "https://login.example.com/jwks").is_ok());
}

#[tokio::test]
async fn a_verified_token_is_kept_no_longer_than_its_expiry() {
    let signer = Signer::new("k1");
    let v = verifier(&signer).leeway(Duration::ZERO);
    let mut c = claims();
    c["exp"] = json!(now() + 2);
    let token = signer.sign(&c);
    for _ in 0..3 {
        assert_eq!(v.verify(&token).await.unwrap().subject(), "alice");
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let err = refusal(&v, &token).await;
    assert_eq!(err, AuthError::Invalid(Refusal::Expired));
}
