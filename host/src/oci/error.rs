//! What can go wrong between a plugin and a registry.

use std::path::PathBuf;

use oci_client::errors::{OciDistributionError, OciErrorCode};

use super::OciReference;

/// Why a plugin could not be pushed or pulled. Each says what happened and
/// what to do; none shows a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// Not an `oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]` reference.
    #[error("`{reference}` is not an OCI reference: {message}")]
    BadReference {
        /// The text (escaped).
        reference: String,
        /// What is wrong.
        message: String,
    },
    /// The plugin name is not one a file may be written under.
    #[error(
        "`{name}` is not a plugin name (letters, digits, `-` and `_`, at most 64); give one with --name (or `name` in [[oci.plugins]])"
    )]
    BadName {
        /// The name (escaped).
        name: String,
    },
    /// 401: no credentials, or the registry refused them.
    #[error(
        "{reference}: the registry asks for credentials, or refused the ones sent (401); \
         log in (`docker login {registry}`, or TOOLHOST_OCI_USERNAME and TOOLHOST_OCI_PASSWORD, or TOOLHOST_OCI_TOKEN)"
    )]
    Unauthorized {
        /// The reference.
        reference: String,
        /// Its registry.
        registry: String,
    },
    /// 403: the credentials do not allow this.
    #[error(
        "{reference}: the registry denied access (403); ask its owner for pull (or push) rights on this repository"
    )]
    Denied {
        /// The reference.
        reference: String,
    },
    /// 404: no such repository, tag, digest or blob.
    #[error(
        "{reference}: not found in the registry (404); check the repository, the tag or the digest"
    )]
    NotFound {
        /// The reference.
        reference: String,
    },
    /// 429: rate limited.
    #[error(
        "{reference}: the registry is rate limiting (429); try again later, or log in for a higher limit"
    )]
    TooManyRequests {
        /// The reference.
        reference: String,
    },
    /// The artifact is not a Wasm component (a container image, a Helm chart).
    #[error(
        "{reference} is not a WebAssembly component artifact: found {found}, expected `{expected}`"
    )]
    WrongMediaType {
        /// The reference.
        reference: String,
        /// The media type(s) found (escaped).
        found: String,
        /// The media type a plugin has.
        expected: &'static str,
    },
    /// The artifact's manifest is malformed or ambiguous.
    #[error("{reference}: {message}")]
    Layout {
        /// The reference.
        reference: String,
        /// What is wrong.
        message: String,
    },
    /// A manifest or blob over its cap.
    #[error(
        "{reference}: {what} is {size} bytes, over the cap of {max}{}",
        key.map(|k| format!("; raise `{k}` in the host config if it is meant to be this big")).unwrap_or_default()
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// Which part.
        what: String,
        /// Its size (declared, or where the cap was hit).
        size: u64,
        /// The cap.
        max: u64,
        /// The config key of the cap.
        key: Option<&'static str>,
    },
    /// What arrived is not what the digest names: damaged or tampered with.
    #[error(
        "{reference}: {what} has digest {actual}, but {expected} was expected: it was damaged or tampered with on the way, \
         or in the registry; nothing was written"
    )]
    Digest {
        /// The reference.
        reference: String,
        /// Which part.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// The registry could not be reached or answered something else.
    #[error("{reference}: {message}")]
    Registry {
        /// The reference.
        reference: String,
        /// What the client said (escaped; no credential in it).
        message: String,
        /// Whether the registry was not reached at all (a fetch may then
        /// fall back on the cache).
        unreachable: bool,
    },
    /// The operator's CA file cannot be used.
    #[error("cannot use the CA file {}: {message}; fix `oci.ca_file`", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The Docker config cannot be used.
    #[error("cannot use the Docker config {}: {message}", path.display())]
    DockerConfig {
        /// The file.
        path: PathBuf,
        /// Why (never a credential).
        message: String,
    },
    /// A plugin file to push cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A pulled plugin cannot be written.
    #[error("cannot write the plugin into {}", path.display())]
    Write {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Fetching a declared plugin took longer than `oci.fetch_timeout_secs`.
    #[error(
        "{reference}: not fetched within {secs}s (`oci.fetch_timeout_secs`); the plugin is skipped. \
         Check that the registry answers, or raise `oci.fetch_timeout_secs` for a slow link"
    )]
    Deadline {
        /// The reference (escaped).
        reference: String,
        /// The deadline, in seconds.
        secs: u64,
    },
    /// The registry's token service (`realm`) is on another origin than the
    /// registry, one the operator did not allow: the login is not sent.
    #[error(
        "{reference}: the registry asks for its login to be sent to the token service {realm}, {why}; \
         the login was not sent. {advice}"
    )]
    CredentialOrigin {
        /// The reference.
        reference: String,
        /// The realm URL (escaped).
        realm: String,
        /// Why it gets no login.
        why: &'static str,
        /// What to do.
        advice: String,
    },
    /// Plugins are declared in `[[oci.plugins]]` but there is no cache.
    #[error(
        "`[[oci.plugins]]` needs `cache_dir` in the host config (pulled plugins are kept there by digest); set it"
    )]
    NoCache,
}

impl OciError {
    /// An error of oci-client, classified by what the user must do.
    pub(super) fn from_client(reference: &OciReference, error: OciDistributionError) -> Self {
        let shown = reference.to_string();
        let by_status = |status: u16| match status {
            401 => Some(Self::Unauthorized {
                reference: shown.clone(),
                registry: reference.registry().to_owned(),
            }),
            403 => Some(Self::Denied {
                reference: shown.clone(),
            }),
            404 => Some(Self::NotFound {
                reference: shown.clone(),
            }),
            429 => Some(Self::TooManyRequests {
                reference: shown.clone(),
            }),
            _ => None,
        };
        let classified = match &error {
            OciDistributionError::AuthenticationFailure(_)
            | OciDistributionError::UnauthorizedError { .. } => by_status(401),
            OciDistributionError::ImageManifestNotFoundError(_) => by_status(404),
            OciDistributionError::ServerError { code, .. } => by_status(*code),
            OciDistributionError::RegistryError { envelope, .. } => {
                envelope.errors.iter().find_map(|e| match e.code {
                    OciErrorCode::Unauthorized => by_status(401),
                    OciErrorCode::Denied => by_status(403),
                    OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NotFound => by_status(404),
                    OciErrorCode::Toomanyrequests => by_status(429),
                    _ => None,
                })
            }
            OciDistributionError::DigestError(
                oci_client::errors::DigestError::VerificationError { expected, actual },
            ) => Some(Self::Digest {
                reference: shown.clone(),
                what: "a blob".into(),
                expected: crate::text::untrusted(expected, 160),
                actual: crate::text::untrusted(actual, 160),
            }),
            OciDistributionError::RequestError(e) => e.status().and_then(|s| by_status(s.as_u16())),
            _ => None,
        };
        if let Some(classified) = classified {
            return classified;
        }
        let unreachable = matches!(&error, OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout());
        Self::Registry {
            reference: shown,
            message: crate::text::untrusted(&chain(&error), 1024),
            unreachable,
        }
    }
}

pub(super) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
