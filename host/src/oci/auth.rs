//! Which login goes to which registry: the credentials given in code (or
//! by the CLI, from its environment), else the `auths` of a Docker
//! `config.json`, else none. A login is only ever sent to the registry it
//! names.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::OciError;
use crate::config::{OciConfig, RegistryLogin};
use crate::fsread;

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
