//! A registry login goes to the registry's own origin, or to a token
//! service (`realm`) the operator allowed in `oci.credential_origins`;
//! never elsewhere, never over plain HTTP off loopback.

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::json;
use toolhost::config::{OciConfig, RegistryLogin};
use toolhost::oci::{OciError, OciReference, Registry};
use toolhost::tools::PluginBudget;
use toolhost_tests::plugins::toolhost_bin;

use super::{Seen, serve};

const USER: &str = "ann";
const PASSWORD: &str = "s3cret-pw";
const TOKEN: &str = "tok-from-the-token-service";

fn basic() -> String {
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    format!("Basic {pair}")
}

/// What a token service answers: a token for a request with the login.
fn token_answer(headers: &HeaderMap) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(basic().as_str()) {
        axum::Json(json!({ "token": TOKEN })).into_response()
    } else {
        StatusCode::UNAUTHORIZED.into_response()
    }
}

/// A token service of its own.
async fn token_service() -> (String, Seen) {
    serve(|_, headers| token_answer(headers)).await
}

/// A registry whose `401` names the realm `realm` gives once started
/// (`{self}` in it is the registry's own address); with the token, every
/// manifest is `404` (the login got through). `/token` here is a token
/// service too.
async fn registry_naming(realm: impl Fn(&str) -> String) -> (String, Seen) {
    let named = Arc::new(Mutex::new(String::new()));
    let shared = Arc::clone(&named);
    let (address, seen) = serve(move |path, headers| {
        if path.starts_with("/token") {
            return token_answer(headers);
        }
        let bearer = format!("Bearer {TOKEN}");
        if headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(bearer.as_str()) {
            let body = json!({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "no"}]});
            return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
        }
        let challenge = format!(
            "Bearer realm=\"{}\",service=\"fake\"",
            shared.lock().unwrap()
        );
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
            "",
        )
            .into_response()
    })
    .await;
    *named.lock().unwrap() = realm(&address);
    (address, seen)
}

fn with_login(registry: &str, origins: &[String]) -> OciConfig {
    let mut config = OciConfig::default();
    config.credentials.set(
        registry,
        RegistryLogin::Basic {
            username: USER.into(),
            password: PASSWORD.into(),
        },
    );
    config.credential_origins = origins.to_vec();
    config
}

async fn pull(config: &OciConfig, registry: &str) -> OciError {
    let reference: OciReference = format!("oci://{registry}/tools/calc:1.0").parse().unwrap();
    Registry::new(config)
        .unwrap()
        .pull(&reference, &PluginBudget::default())
        .await
        .expect_err("the fake registry has no plugin")
}

/// No request anyone saw carried the login.
fn login_never_sent(seen: &[&Seen]) {
    for seen in seen {
        for (path, auth) in seen.all() {
            assert!(
                auth.as_deref().is_none_or(|a| !a.starts_with("Basic")),
                "{path} got the login: {auth:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_is_not_sent_to_a_token_service_on_another_origin() {
    let (tokens, token_seen) = token_service().await;
    let port = tokens.rsplit_once(':').unwrap().1.to_owned();
    // Another port, another host name for the same place, another scheme:
    // each another origin.
    for realm in [
        format!("http://{tokens}/token"),
        format!("http://localhost:{port}/token"),
        "https://auth.example.invalid/token".to_owned(),
    ] {
        let (registry, registry_seen) = registry_naming(|_| realm.clone()).await;
        let err = pull(&with_login(&registry, &[]), &registry).await;
        assert!(
            matches!(err, OciError::CredentialOrigin { .. }),
            "{realm}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&realm) && message.contains("credential_origins"),
            "{message}"
        );
        assert!(!message.contains(PASSWORD), "{message}");
        login_never_sent(&[&token_seen, &registry_seen]);
        // An origin allowed for another realm does not allow this one.
        let other = format!("http://127.0.0.1:{}", registry.rsplit_once(':').unwrap().1);
        let err = pull(&with_login(&registry, &[other]), &registry).await;
        assert!(
            matches!(err, OciError::CredentialOrigin { .. }),
            "{realm}: {err:?}"
        );
        login_never_sent(&[&token_seen, &registry_seen]);
    }
    assert!(token_seen.all().is_empty(), "{:?}", token_seen.all());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_origin_or_the_registrys_own_gets_the_login_and_the_registry_its_token() {
    // The operator allows the token service's origin.
    let (tokens, token_seen) = token_service().await;
    let (registry, registry_seen) = registry_naming(|_| format!("http://{tokens}/token")).await;
    let config = with_login(&registry, &[format!("http://{tokens}")]);
    let err = pull(&config, &registry).await;
    assert!(matches!(err, OciError::NotFound { .. }), "{err:?}");
    assert_eq!(token_seen.authorizations(), vec![basic()]);
    let scope = &token_seen.all()[0].0;
    assert!(
        scope.contains("scope=repository%3Atools%2Fcalc%3Apull") && scope.contains("service=fake"),
        "{scope}"
    );
    let sent = registry_seen.authorizations();
    assert!(
        !sent.is_empty() && sent.iter().all(|a| a == &format!("Bearer {TOKEN}")),
        "{sent:?}"
    );

    // The registry's own origin needs no allowing.
    let (registry, registry_seen) = registry_naming(|own| format!("http://{own}/token")).await;
    let err = pull(&with_login(&registry, &[]), &registry).await;
    assert!(matches!(err, OciError::NotFound { .. }), "{err:?}");
    let sent = registry_seen.authorizations();
    assert!(sent.contains(&basic()), "{sent:?}");
    assert!(sent.contains(&format!("Bearer {TOKEN}")), "{sent:?}");
    for (path, auth) in registry_seen.all() {
        if auth.as_deref() == Some(basic().as_str()) {
            assert!(path.starts_with("/token"), "the login went to {path}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_never_goes_over_plain_http_off_loopback() {
    for (realm, origin) in [
        ("http://192.0.2.1:8080/token", "http://192.0.2.1:8080"),
        (
            "http://auth.example.invalid/token",
            "http://auth.example.invalid",
        ),
    ] {
        let (registry, registry_seen) = registry_naming(|_| realm.to_owned()).await;
        // Even allowed: plain HTTP off loopback carries no login.
        for origins in [vec![], vec![origin.to_owned()]] {
            let started = std::time::Instant::now();
            let err = pull(&with_login(&registry, &origins), &registry).await;
            assert!(
                matches!(err, OciError::CredentialOrigin { .. }),
                "{realm}: {err:?}"
            );
            assert!(err.to_string().contains(realm), "{err}");
            // Refused before any attempt to reach it.
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            login_never_sent(&[&registry_seen]);
        }
    }
    let err = pull(&with_login("127.0.0.1:9", &[]), "127.0.0.1:9").await;
    assert!(!matches!(err, OciError::CredentialOrigin { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_docker_login_is_not_sent_to_a_token_service_on_another_origin() {
    let (tokens, token_seen) = token_service().await;
    let (registry, registry_seen) = registry_naming(|_| format!("http://{tokens}/token")).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".docker")).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        home.path().join(".docker/config.json"),
        json!({"auths": {registry.clone(): {"auth": auth}}}).to_string(),
    )
    .unwrap();
    let reference = format!("oci://{registry}/tools/calc:1.0");
    let home_path = home.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(toolhost_bin())
            .args(["pull", &reference, "--plugins", "a"])
            .current_dir(&home_path)
            .env("HOME", &home_path)
            .env("XDG_CONFIG_HOME", home_path.join(".config"))
            .env("TOOLHOST_CACHE_DIR", home_path.join(".cache"))
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("DOCKER_CONFIG")
            .env_remove("TOOLHOST_OCI_USERNAME")
            .env_remove("TOOLHOST_OCI_PASSWORD")
            .env_remove("TOOLHOST_OCI_TOKEN")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("http://{tokens}/token")) && stderr.contains("credential_origins"),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    assert!(token_seen.all().is_empty(), "{:?}", token_seen.all());
    login_never_sent(&[&registry_seen]);
}
