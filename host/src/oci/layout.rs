//! The artifact layout: the CNCF Wasm OCI artifact (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer)
//! with the plugin's manifest and signature as two more layers of media
//! types of our own, each with an `org.opencontainers.image.title` so that
//! `oras pull` writes a ready plugin directory.

use std::collections::BTreeMap;

use oci_client::manifest::{OciDescriptor, OciImageManifest};

use super::OciError;

/// The config media type of a Wasm component artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the component layer.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The media type of the plugin's manifest layer (`NAME.toml`).
pub const MANIFEST_LAYER_MEDIA_TYPE: &str = "application/vnd.toolhost.plugin.manifest.v1+toml";
/// The media type of the signature layer (`NAME.wasm.sig`).
pub const SIGNATURE_LAYER_MEDIA_TYPE: &str = "application/vnd.toolhost.plugin.signature.v1+toml";
/// The OCI image manifest media type, the only manifest kind pulled.
pub const IMAGE_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// Config media types of artifacts that carry a component: ours, and what
/// generic tools write when told none (`oras push` without `--config`).
const ACCEPTED_CONFIGS: &[&str] = &[
    WASM_CONFIG_MEDIA_TYPE,
    "application/vnd.oci.empty.v1+json",
    "application/vnd.unknown.config.v1+json",
];

pub(super) const TITLE: &str = "org.opencontainers.image.title";

/// The Wasm config blob for a component with `layer_digest`. `created` is
/// fixed so that pushing the same files twice gives the same digest.
pub(super) fn wasm_config(layer_digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "created": "1970-01-01T00:00:00Z",
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .expect("a JSON literal serializes")
}

pub(super) fn title(name: &str) -> Option<BTreeMap<String, String>> {
    Some(BTreeMap::from([(TITLE.to_owned(), name.to_owned())]))
}

/// The layers of a plugin artifact, picked out of its manifest.
#[derive(Debug)]
pub(crate) struct PluginLayers {
    pub component: OciDescriptor,
    pub manifest: Option<OciDescriptor>,
    pub signature: Option<OciDescriptor>,
}

/// Check `manifest` is a Wasm component artifact and pick its layers.
pub(crate) fn plugin_layers(
    reference: &str,
    manifest: &OciImageManifest,
) -> Result<PluginLayers, OciError> {
    let config = &manifest.config.media_type;
    if !ACCEPTED_CONFIGS.contains(&config.as_str()) {
        return Err(OciError::WrongMediaType {
            reference: reference.to_owned(),
            found: crate::text::untrusted(config, 128),
            expected: WASM_CONFIG_MEDIA_TYPE,
        });
    }
    let pick = |media_type: &str| -> Result<Option<OciDescriptor>, OciError> {
        let mut found = manifest
            .layers
            .iter()
            .filter(|l| l.media_type == media_type);
        let first = found.next().cloned();
        if found.next().is_some() {
            return Err(OciError::Layout {
                reference: reference.to_owned(),
                message: format!("it has more than one `{media_type}` layer"),
            });
        }
        Ok(first)
    };
    let component = pick(WASM_LAYER_MEDIA_TYPE)?.ok_or_else(|| {
        let found: Vec<String> = manifest
            .layers
            .iter()
            .map(|l| crate::text::untrusted(&l.media_type, 128))
            .collect();
        OciError::WrongMediaType {
            reference: reference.to_owned(),
            found: format!("layers [{}]", found.join(", ")),
            expected: WASM_LAYER_MEDIA_TYPE,
        }
    })?;
    Ok(PluginLayers {
        component,
        manifest: pick(MANIFEST_LAYER_MEDIA_TYPE)?,
        signature: pick(SIGNATURE_LAYER_MEDIA_TYPE)?,
    })
}
