//! Which login goes to which registry: the credentials given in code (or
//! by the CLI, from its environment), else the `auths` of a Docker
//! `config.json`, else none. A login is only ever sent to the registry it
//! names, and to the token service (`realm`) its `401` names only when
//! that is the registry's own origin or one the operator allowed
//! (`oci.credential_origins`), never over plain HTTP off loopback.
//!
//! oci-client would send a basic login to whatever realm a registry names,
//! so it is never given one: the token dance is done here ([`grant`]) and
//! oci-client gets the bearer token, or, for a registry that wants basic
//! credentials itself, those in its token cache (which it applies only to
//! requests to that registry) while its own login stays anonymous.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::{OciError, OciReference};
use crate::config::{OciConfig, RegistryLogin};
use crate::fsread;

/// A token service's answer is a small JSON object; anything past this is
/// not one.
const TOKEN_ANSWER_MAX_BYTES: usize = 1 << 20;

/// What oci-client is handed for one operation at one registry.
pub(super) enum Grant {
    /// Given as its login: none, or a bearer token (which oci-client sends
    /// to the registry only, and never trades at a realm).
    Login(RegistryAuth),
    /// Basic credentials the registry asks for itself (no token service):
    /// for oci-client's token cache, never its login.
    Basic(String, String),
}

/// The login for `reference`'s registry, made safe to hand to oci-client:
/// a basic login is traded for a token here, at a realm it may go to, or
/// kept for the registry alone. `scheme` is how the registry is reached;
/// `http` must not follow redirects.
///
/// # Errors
///
/// [`OciError::CredentialOrigin`] when the registry names a realm the
/// login may not go to; the registry or its token service cannot be
/// reached or refuses the login; the login itself cannot be read.
pub(super) async fn grant(
    http: &reqwest::Client,
    config: &OciConfig,
    reference: &OciReference,
    scheme: &str,
    push: bool,
) -> Result<Grant, OciError> {
    let (username, password) = match login_for(config, reference.registry())? {
        RegistryAuth::Basic(username, password) => (username, password),
        other => return Ok(Grant::Login(other)),
    };
    let (registry, challenge) = probe(http, reference, scheme).await?;
    let Some((realm, service)) = challenge else {
        return Ok(Grant::Basic(username, password));
    };
    let realm_url = token_service(config, reference, &registry, &realm)?;
    let scope = format!(
        "repository:{}:{}",
        reference.inner().repository(),
        if push { "pull,push" } else { "pull" }
    );
    let mut query = vec![("scope", scope)];
    if let Some(service) = service {
        query.push(("service", service));
    }
    let token = fetch_token(http, reference, realm_url, &query, username, password).await?;
    Ok(Grant::Login(RegistryAuth::Bearer(token)))
}

/// A request about `reference` failed while doing `what`.
fn request_failed(reference: &OciReference, what: &str, e: &reqwest::Error) -> OciError {
    OciError::Registry {
        reference: reference.to_string(),
        message: crate::text::untrusted(&format!("{what}: {}", super::error::chain(e)), 1024),
        unreachable: e.is_connect() || e.is_timeout(),
    }
}

/// Ask `reference`'s registry (reached by `scheme`) for `/v2/` without a
/// login: its base URL, and the realm and service of the `Bearer`
/// challenge it answers with, if any.
async fn probe(
    http: &reqwest::Client,
    reference: &OciReference,
    scheme: &str,
) -> Result<(reqwest::Url, Option<(String, Option<String>)>), OciError> {
    let address = reference.inner().resolve_registry();
    let registry = reqwest::Url::parse(&format!("{scheme}://{address}/")).map_err(|e| {
        OciError::BadReference {
            reference: reference.to_string(),
            message: format!("its registry is not a host[:port] ({e})"),
        }
    })?;
    let probe = registry.join("v2/").expect("a relative path joins");
    let answer = http
        .get(probe)
        .send()
        .await
        .map_err(|e| request_failed(reference, "cannot reach the registry", &e))?;
    let challenge = answer
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(bearer_challenge);
    Ok((registry, challenge))
}

/// The token service `realm` that `registry` named, once it is a URL that
/// the login may go to.
fn token_service(
    config: &OciConfig,
    reference: &OciReference,
    registry: &reqwest::Url,
    realm: &str,
) -> Result<reqwest::Url, OciError> {
    let refused = |why: &'static str, advice: String| OciError::CredentialOrigin {
        reference: reference.to_string(),
        realm: crate::text::untrusted(realm, 256),
        why,
        advice,
    };
    let Ok(realm_url) = reqwest::Url::parse(realm) else {
        return Err(refused(
            "which is not a URL",
            "Check the registry's address.".into(),
        ));
    };
    may_receive(config, registry, &realm_url).map_err(|(why, advice)| refused(why, advice))?;
    Ok(realm_url)
}

/// Trade the basic login for a bearer token at the token service
/// `realm_url`, asking with `query` (scope and service).
async fn fetch_token(
    http: &reqwest::Client,
    reference: &OciReference,
    realm_url: reqwest::Url,
    query: &[(&str, String)],
    username: String,
    password: String,
) -> Result<String, OciError> {
    let shown = reference.to_string();
    let mut answer = http
        .get(realm_url)
        .query(query)
        .basic_auth(username, Some(password))
        .send()
        .await
        .map_err(|e| request_failed(reference, "cannot reach the registry's token service", &e))?;
    let status = answer.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(OciError::Unauthorized {
            reference: shown,
            registry: reference.registry().to_owned(),
        });
    }
    if !status.is_success() {
        return Err(OciError::Registry {
            reference: shown,
            message: format!("the registry's token service answered {status}"),
            unreachable: false,
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| request_failed(reference, "reading the token service's answer", &e))?
    {
        if body.len() + chunk.len() > TOKEN_ANSWER_MAX_BYTES {
            return Err(OciError::TooLarge {
                reference: shown,
                what: "the token service's answer".into(),
                size: (body.len() + chunk.len()) as u64,
                max: TOKEN_ANSWER_MAX_BYTES as u64,
                key: None,
            });
        }
        body.extend_from_slice(&chunk);
    }
    #[derive(Deserialize)]
    struct TokenAnswer {
        token: Option<String>,
        access_token: Option<String>,
    }
    serde_json::from_slice::<TokenAnswer>(&body)
        .ok()
        .and_then(|a| a.token.or(a.access_token))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OciError::Registry {
            reference: shown,
            message: "the registry's token service answered no token".into(),
            unreachable: false,
        })
}

/// The realm and service of a `Bearer` challenge, if `header` holds one.
fn bearer_challenge(header: &str) -> Option<(String, Option<String>)> {
    http_auth::parser::ChallengeParser::new(header)
        .filter_map(Result::ok)
        .filter(|c| c.scheme.eq_ignore_ascii_case("Bearer"))
        .find_map(|c| {
            let param = |name: &str| {
                c.params
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.to_unescaped())
            };
            Some((param("realm")?, param("service")))
        })
}

/// Whether a login for `registry` may go to `realm`: `Err((why, what to
/// do))` when not.
fn may_receive(
    config: &OciConfig,
    registry: &reqwest::Url,
    realm: &reqwest::Url,
) -> Result<(), (&'static str, String)> {
    let origin = |url: &reqwest::Url| {
        (
            url.scheme().to_owned(),
            url.host_str().unwrap_or_default().to_ascii_lowercase(),
            url.port_or_known_default().unwrap_or_default(),
        )
    };
    let (scheme, host, port) = origin(realm);
    if !matches!(scheme.as_str(), "http" | "https") || realm.host_str().is_none() {
        return Err((
            "which is not an http(s) URL",
            "Check the registry's address.".into(),
        ));
    }
    let own = origin(registry) == (scheme.clone(), host.clone(), port);
    if scheme == "http" && !is_loopback(&host) {
        let plain_registry = config
            .plain_http
            .iter()
            .any(|r| r.eq_ignore_ascii_case(registry_key(registry).as_str()));
        if !(own && plain_registry) {
            return Err((
                "over plain HTTP off loopback",
                "A login never travels over plain HTTP to another host; the registry must name an https token service."
                    .into(),
            ));
        }
    }
    if own {
        return Ok(());
    }
    let allowed = config.credential_origins.iter().any(|entry| {
        crate::config::credential_origin(entry)
            .is_ok_and(|o| o == (scheme.clone(), host.clone(), port))
    });
    if allowed {
        return Ok(());
    }
    Err((
        "another origin than the registry's",
        format!(
            "If that token service belongs to the registry, allow it in the host config: \
             `[oci] credential_origins = [\"{}\"]`.",
            crate::text::untrusted(&origin_text(realm), 256)
        ),
    ))
}

/// `scheme://host[:port]` of `url`, as an operator would write it.
fn origin_text(url: &reqwest::Url) -> String {
    match url.port() {
        Some(port) => format!(
            "{}://{}:{port}",
            url.scheme(),
            url.host_str().unwrap_or_default()
        ),
        None => format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default()),
    }
}

/// `host[:port]` of a registry URL, as `plain_http` lists it.
fn registry_key(url: &reqwest::Url) -> String {
    match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A Docker `config.json` is small; anything past this is not one.
const DOCKER_CONFIG_MAX_BYTES: u64 = 1 << 20;

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

/// The key Docker files credentials for `registry` under, normalised:
/// no scheme, no path (`https://index.docker.io/v1/` is Docker Hub).
fn normalise(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key);
    match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        other => other,
    }
}

/// The login `config` gives for `registry`, if any.
///
/// # Errors
///
/// The Docker config file exists but cannot be read or parsed, or its entry
/// for `registry` is malformed.
pub(super) fn login_for(config: &OciConfig, registry: &str) -> Result<RegistryAuth, OciError> {
    if let Some(login) = config.credentials.get(registry) {
        return Ok(to_auth(login.clone()));
    }
    match &config.docker_config {
        Some(path) => docker_login(path, registry),
        None => Ok(RegistryAuth::Anonymous),
    }
}

fn to_auth(login: RegistryLogin) -> RegistryAuth {
    match login {
        RegistryLogin::Basic { username, password } => RegistryAuth::Basic(username, password),
        RegistryLogin::Bearer(token) => RegistryAuth::Bearer(token),
    }
}

fn docker_login(path: &Path, registry: &str) -> Result<RegistryAuth, OciError> {
    let bad = |message: String| OciError::DockerConfig {
        path: path.to_owned(),
        message,
    };
    let text = match fsread::read_text(path, DOCKER_CONFIG_MAX_BYTES, None) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => return Err(bad(format!("cannot read it: {e}"))),
    };
    // The parser's message could quote a secret: say only where.
    let config: DockerConfig = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not a Docker config.json (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let wanted = normalise(registry);
    let Some(entry) = config
        .auths
        .into_iter()
        .find(|(key, _)| normalise(key) == wanted)
        .map(|(_, entry)| entry)
    else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(token) = entry.registrytoken {
        return Ok(RegistryAuth::Bearer(token));
    }
    if let (Some(username), Some(password)) = (entry.username, entry.password) {
        return Ok(RegistryAuth::Basic(username, password));
    }
    let Some(encoded) = entry.auth.filter(|a| !a.is_empty()) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let malformed = || {
        bad(format!(
            "the `auth` of `{}` is not base64 of USER:PASSWORD; run `docker login {wanted}` again",
            crate::text::untrusted(registry, 128)
        ))
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (username, password) = decoded.split_once(':').ok_or_else(malformed)?;
    Ok(RegistryAuth::Basic(
        username.to_owned(),
        password.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docker_login_goes_to_its_own_registry_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("ann:s3cret");
        std::fs::write(
            &path,
            format!(
                r#"{{"auths": {{"https://registry.example:5000/v1/": {{"auth": "{auth}"}},
                   "https://index.docker.io/v1/": {{"username": "bob", "password": "pw"}}}}}}"#
            ),
        )
        .unwrap();
        let config = OciConfig {
            docker_config: Some(path.clone()),
            ..OciConfig::default()
        };
        let login = login_for(&config, "registry.example:5000").unwrap();
        assert!(matches!(&login, RegistryAuth::Basic(u, p) if u == "ann" && p == "s3cret"));
        let hub = login_for(&config, "docker.io").unwrap();
        assert!(matches!(&hub, RegistryAuth::Basic(u, _) if u == "bob"));
        let other = login_for(&config, "registry.example").unwrap();
        assert!(matches!(other, RegistryAuth::Anonymous));

        // A login given in code wins, for its registry only.
        let mut config = config;
        config
            .credentials
            .set("registry.example:5000", RegistryLogin::Bearer("tok".into()));
        let login = login_for(&config, "registry.example:5000").unwrap();
        assert!(matches!(login, RegistryAuth::Bearer(t) if t == "tok"));
        assert!(!format!("{:?}", config.credentials).contains("tok"));

        std::fs::write(&path, r#"{"auths": {"r.example": {"auth": "s3cret!!"}}}"#).unwrap();
        let err = login_for(
            &OciConfig {
                docker_config: Some(path),
                ..OciConfig::default()
            },
            "r.example",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("docker login") && !err.contains("s3cret"),
            "{err}"
        );
    }
}
