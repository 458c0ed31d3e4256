//! Plugins that travel through OCI registries: push a plugin (component,
//! manifest, signature) as one artifact, pull it into a plugin directory
//! or into the cache, by tag or by digest.
//!
//! The artifact is the CNCF Wasm OCI artifact (config
//! `application/vnd.wasm.config.v0+json`, the component as the one
//! `application/wasm` layer), so `oras` and `wkg` pull what we push and we
//! pull what they push. The plugin's manifest (`NAME.toml`) and signature
//! (`NAME.wasm.sig`) travel as two more layers of the same OCI manifest
//! rather than as referrers: one digest then pins the component, what it
//! is granted and who signed it; a pull is one manifest and at most three
//! blobs, with no referrers API (which many registries, Debian's
//! `docker-registry` among them, lack); and what lands on disk is exactly
//! the plugin directory layout, so the integrity checks of
//! [`plugin::integrity`](crate::plugin::integrity) run on pulled plugins
//! as on local ones.
//!
//! What a registry sends is untrusted: the manifest is capped and checked
//! against its digest, each blob is capped by the size budgets of
//! `[plugins]` and hashed while it streams, and nothing is written before
//! every digest matched. Plain HTTP is used only for loopback registries
//! and those listed in `oci.plain_http`; logins go to their own registry
//! only and never appear in messages.
//!
//! ```no_run
//! use toolhost::config::OciConfig;
//! use toolhost::oci::{OciReference, Registry};
//! use toolhost::tools::PluginBudget;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new(&OciConfig::default())?;
//! let reference: OciReference = "oci://ghcr.io/acme/calc:1.2".parse()?;
//! let artifact = registry.pull(&reference, &PluginBudget::default()).await?;
//! let wasm = artifact.write_to("plugins".as_ref(), &reference.default_name()?)?;
//! println!("{} is {}", wasm.display(), artifact.digest());
//! # Ok(()) }
//! ```

mod auth;
mod cache;
mod error;
mod files;
pub(crate) mod layout;
mod reference;

use std::path::{Path, PathBuf};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;

use crate::config::OciConfig;
use crate::fsread;
use crate::signing::Sha256Digest;
use crate::tools::PluginBudget;

pub use cache::fetch_declared;
pub use error::OciError;
pub use layout::{
    MANIFEST_LAYER_MEDIA_TYPE, SIGNATURE_LAYER_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE,
    WASM_LAYER_MEDIA_TYPE,
};
pub use reference::{OciReference, check_name};

/// The most bytes an OCI manifest may have (what CNCF distribution itself
/// accepts).
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// A client for OCI registries under the operator's `[oci]` settings.
pub struct Registry {
    client: oci_client::Client,
    /// For the token dance of a login (auth.rs): the same roots, no
    /// redirects (a login must not follow one elsewhere).
    auth_http: reqwest::Client,
    config: OciConfig,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A plugin pulled from a registry, every digest checked, not yet written.
#[derive(Debug, Clone)]
pub struct Artifact {
    digest: String,
    component: Vec<u8>,
    component_digest: Sha256Digest,
    manifest: Option<Vec<u8>>,
    signature: Option<Vec<u8>>,
}

impl Artifact {
    /// The digest of its OCI manifest (`sha256:...`): what
    /// `REPOSITORY@DIGEST` pins.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The SHA-256 of the component: what a lock file pins for it.
    pub fn component_digest(&self) -> Sha256Digest {
        self.component_digest
    }

    /// Whether it carries a plugin manifest and a signature.
    pub fn has_manifest(&self) -> bool {
        self.manifest.is_some()
    }

    /// Whether it carries a signature.
    pub fn is_signed(&self) -> bool {
        self.signature.is_some()
    }

    /// Write it into the plugin directory `dir` as `NAME.wasm` (with
    /// `NAME.toml` and `NAME.wasm.sig` when it has them; stale ones are
    /// removed), each file through a temporary file and a rename, the
    /// component last: hot reload never sees half a plugin.
    ///
    /// # Errors
    ///
    /// `name` is not a plugin name, or a file cannot be written.
    pub fn write_to(&self, dir: &Path, name: &str) -> Result<PathBuf, OciError> {
        reference::check_name(name)?;
        files::write_plugin(
            dir,
            name,
            &self.component,
            self.manifest.as_deref(),
            self.signature.as_deref(),
        )
        .map_err(|source| OciError::Write {
            path: dir.to_owned(),
            source,
        })
    }
}

impl Registry {
    /// A client under `config`: the system's roots plus `ca_file`, plain
    /// HTTP for loopback and `plain_http` registries.
    ///
    /// # Errors
    ///
    /// The CA file cannot be read or holds no certificate.
    pub fn new(config: &OciConfig) -> Result<Self, OciError> {
        // reqwest is built without a crypto provider of its own (no
        // aws-lc); oci-client makes its own reqwest client, which takes the
        // process default. ring is the only provider in the tree, and this
        // changes nothing if a default is already set.
        let _ = tokio_rustls::rustls::crypto::CryptoProvider::install_default(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        );
        let mut extra_roots = Vec::new();
        let mut auth_http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(30))
            .read_timeout(std::time::Duration::from_secs(60));
        if let Some(path) = &config.ca_file {
            let pem = fsread::read_bytes(path, 1 << 20, None).map_err(|e| OciError::CaFile {
                path: path.clone(),
                message: e.to_string(),
            })?;
            if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
                return Err(OciError::CaFile {
                    path: path.clone(),
                    message: "it holds no PEM certificate".into(),
                });
            }
            let roots =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| OciError::CaFile {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            auth_http = auth_http.tls_certs_merge(roots);
            extra_roots.push(oci_client::client::Certificate {
                encoding: oci_client::client::CertificateEncoding::Pem,
                data: pem,
            });
        }
        let client_config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(config.plain_http.clone()),
            extra_root_certificates: extra_roots,
            // An image index is a container image's; a plugin is one manifest.
            platform_resolver: None,
            connect_timeout: Some(std::time::Duration::from_secs(30)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(client_config).map_err(|e| OciError::CaFile {
            path: config.ca_file.clone().unwrap_or_default(),
            message: e.to_string(),
        })?;
        let auth_http = auth_http.build().map_err(|e| OciError::CaFile {
            path: config.ca_file.clone().unwrap_or_default(),
            message: e.to_string(),
        })?;
        Ok(Self {
            client,
            auth_http,
            config: config.clone(),
        })
    }

    /// The client for `reference`'s registry, and its login: plain HTTP
    /// when the registry is on loopback. A login is traded for a token
    /// here (see [`auth::grant`]); oci-client is never handed one it could
    /// send to another origin.
    async fn client_for(
        &self,
        reference: &OciReference,
        push: bool,
    ) -> Result<(oci_client::Client, RegistryAuth), OciError> {
        let registry = reference.registry();
        let plain = self.config.plain_http.iter().any(|r| r == registry);
        let scheme = if plain || reference.is_loopback() {
            "http"
        } else {
            "https"
        };
        let grant = auth::grant(&self.auth_http, &self.config, reference, scheme, push).await?;
        let fresh = (reference.is_loopback() && !plain) || matches!(grant, auth::Grant::Basic(..));
        let client = if fresh {
            // A client of its own: a loopback registry's plain HTTP, or a
            // token cache holding this login and no other.
            let mut config = self.config.clone();
            if reference.is_loopback() && !plain {
                config.plain_http.push(registry.to_owned());
            }
            Self::new(&config)?.client
        } else {
            self.client.clone()
        };
        match grant {
            auth::Grant::Login(auth) => Ok((client, auth)),
            auth::Grant::Basic(username, password) => {
                // oci-client applies a cached token only to requests to the
                // registry itself; its login stays anonymous, so a 401 that
                // names a realm later gets no credentials from it.
                client
                    .store_auth_if_needed(
                        reference.inner().resolve_registry(),
                        &RegistryAuth::Anonymous,
                    )
                    .await;
                for op in [
                    oci_client::RegistryOperation::Pull,
                    oci_client::RegistryOperation::Push,
                ] {
                    client
                        .tokens
                        .insert(
                            reference.inner(),
                            op,
                            oci_client::token_cache::RegistryTokenType::Basic(
                                username.clone(),
                                password.clone(),
                            ),
                        )
                        .await;
                }
                Ok((client, RegistryAuth::Anonymous))
            }
        }
    }

    /// The digest `reference` names now (a tag resolved; a digest as is).
    ///
    /// # Errors
    ///
    /// See [`OciError`]: the registry cannot be reached, refuses, or has no
    /// such manifest.
    pub async fn resolve(&self, reference: &OciReference) -> Result<String, OciError> {
        if let Some(digest) = reference.digest() {
            return Ok(digest.to_owned());
        }
        let (client, auth) = self.client_for(reference, false).await?;
        client
            .fetch_manifest_digest(reference.inner(), &auth)
            .await
            .map_err(|e| OciError::from_client(reference, e))
    }

    /// Pull the plugin `reference` names: its manifest (capped, checked
    /// against the digest it was asked by or the registry gave), then each
    /// layer, capped by `budget` and checked against its digest as it
    /// streams.
    ///
    /// # Errors
    ///
    /// See [`OciError`]: not a Wasm component artifact, a layer over budget,
    /// a digest that does not match, and what the registry refuses.
    pub async fn pull(
        &self,
        reference: &OciReference,
        budget: &PluginBudget,
    ) -> Result<Artifact, OciError> {
        let (client, auth) = self.client_for(reference, false).await?;
        let shown = reference.to_string();
        let (manifest, digest) = image_manifest(&client, &auth, reference).await?;
        let layers = layout::plugin_layers(&shown, &manifest)?;
        let component_max = budget.max_component_mb.saturating_mul(1 << 20);
        let sidecar_max = budget.max_manifest_bytes;
        let (component, component_digest) = self
            .blob(
                &client,
                reference,
                &layers.component,
                component_max,
                "plugins.max_component_mb",
            )
            .await?;
        let mut sidecars = [None, None];
        for (slot, layer) in sidecars
            .iter_mut()
            .zip([&layers.manifest, &layers.signature])
        {
            if let Some(layer) = layer {
                let (bytes, _) = self
                    .blob(
                        &client,
                        reference,
                        layer,
                        sidecar_max,
                        "plugins.max_manifest_bytes",
                    )
                    .await?;
                *slot = Some(bytes);
            }
        }
        let [manifest, signature] = sidecars;
        Ok(Artifact {
            digest,
            component,
            component_digest,
            manifest,
            signature,
        })
    }

    async fn blob(
        &self,
        client: &oci_client::Client,
        reference: &OciReference,
        layer: &OciDescriptor,
        max: u64,
        key: &'static str,
    ) -> Result<(Vec<u8>, Sha256Digest), OciError> {
        let shown = reference.to_string();
        let what = format!(
            "its `{}` layer",
            crate::text::untrusted(&layer.media_type, 128)
        );
        let too_large = |size: u64| OciError::TooLarge {
            reference: shown.clone(),
            what: what.clone(),
            size,
            max,
            key: Some(key),
        };
        let declared = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if declared > max {
            return Err(too_large(declared));
        }
        let Some(expected) = layer
            .digest
            .strip_prefix("sha256:")
            .and_then(|hex| hex.parse::<Sha256Digest>().ok())
        else {
            return Err(OciError::Layout {
                reference: shown,
                message: format!(
                    "{what} has digest `{}`; only sha256 digests are supported",
                    crate::text::untrusted(&layer.digest, 160)
                ),
            });
        };
        let mut sink = files::CappedSink::new(max.min(declared));
        let pulled = client.pull_blob(reference.inner(), layer, &mut sink).await;
        if let Err(e) = pulled {
            if let oci_client::errors::OciDistributionError::IoError(io) = &e
                && io.to_string() == files::OVER_CAP
            {
                return Err(too_large(declared.saturating_add(1)));
            }
            return Err(OciError::from_client(reference, e));
        }
        let (bytes, actual) = sink.finish();
        // oci-client checked the digest as the blob streamed; so did we, by
        // our own hash, before anything is written.
        if actual != expected {
            return Err(OciError::Digest {
                reference: shown,
                what,
                expected: format!("sha256:{expected}"),
                actual: format!("sha256:{actual}"),
            });
        }
        Ok((bytes, actual))
    }

    /// Push the plugin `wasm` (`DIR/NAME.wasm`, with `NAME.toml` and
    /// `NAME.wasm.sig` beside it when they exist) to `reference`; returns
    /// the digest of the pushed OCI manifest.
    ///
    /// # Errors
    ///
    /// A file cannot be read within `budget`, or the registry refuses.
    pub async fn push(
        &self,
        wasm: &Path,
        reference: &OciReference,
        budget: &PluginBudget,
    ) -> Result<String, OciError> {
        let read = |path: &Path, max: u64, key: &str| {
            fsread::read_regular(path, max, key).map_err(|source| OciError::Read {
                path: path.to_owned(),
                source,
            })
        };
        let optional = |path: &Path| match read(
            path,
            budget.max_manifest_bytes,
            "plugins.max_manifest_bytes",
        ) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(OciError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(e) => Err(e),
        };
        let component = read(
            wasm,
            budget.max_component_mb.saturating_mul(1 << 20),
            "plugins.max_component_mb",
        )?;
        let name = wasm
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| OciError::Read {
                path: wasm.to_owned(),
                source: std::io::Error::other("not a NAME.wasm file"),
            })?;
        if reference.digest().is_some() {
            return Err(OciError::BadReference {
                reference: reference.to_string(),
                message: "a push needs a tag, not a digest (the digest is what the push makes)"
                    .into(),
            });
        }
        let mut layers = vec![ImageLayer::new(
            component,
            WASM_LAYER_MEDIA_TYPE.to_owned(),
            layout::title(&format!("{name}.wasm")),
        )];
        if let Some(manifest) = optional(&wasm.with_extension("toml"))? {
            layers.push(ImageLayer::new(
                manifest,
                MANIFEST_LAYER_MEDIA_TYPE.to_owned(),
                layout::title(&format!("{name}.toml")),
            ));
        }
        if let Some(signature) = optional(&crate::signing::signature_path(wasm))? {
            layers.push(ImageLayer::new(
                signature,
                SIGNATURE_LAYER_MEDIA_TYPE.to_owned(),
                layout::title(&format!("{name}.wasm.sig")),
            ));
        }
        let config = Config::new(
            layout::wasm_config(&layers[0].sha256_digest()),
            WASM_CONFIG_MEDIA_TYPE.to_owned(),
            None,
        );
        let manifest = OciImageManifest::build(&layers, &config, None);
        let (client, auth) = self.client_for(reference, true).await?;
        client
            .push(reference.inner(), &layers, config, &auth, Some(manifest))
            .await
            .map_err(|e| OciError::from_client(reference, e))?;
        // oci-client sends the manifest as canonical JSON; ask the registry
        // which digest it stored rather than recompute it.
        client
            .fetch_manifest_digest(reference.inner(), &auth)
            .await
            .map_err(|e| OciError::from_client(reference, e))
    }

    /// The plugin `decl` declares, from the cache under `cache_root` when it
    /// is there (no network), else pulled and put there: its `NAME.wasm`,
    /// ready for [`PluginHost::load_file`](crate::plugin::PluginHost::load_file)
    /// (which runs the integrity checks). A tag is resolved at the registry;
    /// when the registry cannot be reached, the digest it last resolved to
    /// is used.
    ///
    /// # Errors
    ///
    /// The reference or name is invalid, the registry cannot give it and
    /// the cache does not hold it, or the cache cannot be written.
    pub async fn fetch_cached(
        &self,
        decl: &crate::config::OciPluginDecl,
        cache_root: &Path,
        budget: &PluginBudget,
    ) -> Result<PathBuf, OciError> {
        cache::fetch(self, decl, cache_root, budget).await
    }
}

/// The OCI image manifest of `reference`, and its digest: capped at
/// [`MAX_MANIFEST_BYTES`], and checked against the digest it was asked by
/// or the registry gave.
async fn image_manifest(
    client: &oci_client::Client,
    auth: &RegistryAuth,
    reference: &OciReference,
) -> Result<(OciImageManifest, String), OciError> {
    let shown = reference.to_string();
    let (raw, digest) = client
        .pull_manifest_raw(
            reference.inner(),
            auth,
            &[layout::IMAGE_MANIFEST_MEDIA_TYPE],
        )
        .await
        .map_err(|e| OciError::from_client(reference, e))?;
    if raw.len() > MAX_MANIFEST_BYTES {
        return Err(OciError::TooLarge {
            reference: shown,
            what: "its OCI manifest".into(),
            size: raw.len() as u64,
            max: MAX_MANIFEST_BYTES as u64,
            key: None,
        });
    }
    let actual = format!("sha256:{}", Sha256Digest::of(&raw));
    let expected = reference.digest().unwrap_or(&digest);
    if actual != expected {
        return Err(OciError::Digest {
            reference: shown,
            what: "its OCI manifest".into(),
            expected: crate::text::untrusted(expected, 160),
            actual,
        });
    }
    let manifest = serde_json::from_slice(&raw).map_err(|e| OciError::Layout {
        reference: shown,
        message: format!(
            "its manifest is not an OCI image manifest: {}",
            crate::text::untrusted(&e.to_string(), 256)
        ),
    })?;
    Ok((manifest, actual))
}
